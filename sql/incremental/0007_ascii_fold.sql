-- 0007_ascii_fold: kgrag.fold skips Unicode normalization for text that is plain ASCII.
--
-- fold() runs for every chunk (its full-text vector), every alias (canonical, squashed and trigram
-- columns) and every text the extractors compare. On ASCII text NFKD changes nothing and there
-- are no combining marks to drop, so lower() alone gives the same result; in a UTF8 database a
-- text is ASCII exactly when it has as many bytes as characters. Same results, so the generated
-- columns and indexes built with the old body stay valid (tests/test_schema.py compares the two).

CREATE OR REPLACE FUNCTION kgrag.fold(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN pg_catalog.octet_length(t) = pg_catalog.length(t) THEN pg_catalog.lower(t)
                ELSE pg_catalog.regexp_replace(pg_catalog.normalize(pg_catalog.lower(t), 'NFKD'), '[\u0300-\u036f]', '', 'g')
           END
$$;
COMMENT ON FUNCTION kgrag.fold(text) IS
'Returns the text lower-cased with accents removed (Unicode NFKD, combining marks dropped): "Serviço" -> "servico". Built in, so no unaccent extension is needed; ASCII text is only lower-cased (NFKD would not change it).';

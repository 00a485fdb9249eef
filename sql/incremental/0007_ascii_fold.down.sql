-- 0007_ascii_fold down: kgrag.fold as 0001_base defined it.

CREATE OR REPLACE FUNCTION kgrag.fold(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.regexp_replace(pg_catalog.normalize(pg_catalog.lower(t), 'NFKD'), '[\u0300-\u036f]', '', 'g')
$$;
COMMENT ON FUNCTION kgrag.fold(text) IS
'Returns the text lower-cased with accents removed (Unicode NFKD, combining marks dropped): "Serviço" -> "servico". Built in, so no unaccent extension is needed.';

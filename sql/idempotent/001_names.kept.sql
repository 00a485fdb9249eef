-- The forms of a name that tables store: generated columns (alias.alias_fold, alias.alias_sq,
-- alias.trigrams, chunk.tsv) and their indexes hold their results. Kept (see README.md): replaced
-- in place, never dropped, and since their results are stored, never changed here alone: a new
-- definition comes with a revision that recomputes what was stored (revision 0007 changed fold and
-- kept every result the same). tests/schema/test_sql_files.py checks that each definition here is the one
-- the revisions left. Names as SQL compares them otherwise (relation_key, is_page_about, the case
-- rule) are in 005_names.sql.

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

CREATE OR REPLACE FUNCTION kgrag.canonical_name(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.btrim(pg_catalog.regexp_replace(kgrag.fold(t),
        '[[:space:][:punct:]\u00a0-\u00bf\u2000-\u206f\u3000-\u303f]+', ' ', 'g'))
$$;
COMMENT ON FUNCTION kgrag.canonical_name(text) IS
'Returns the canonical form of a name: folded (lower case, no accents) with every run of punctuation and space collapsed to one space. "Serviço-de  Autenticação" -> "servico de autenticacao".';

CREATE OR REPLACE FUNCTION kgrag.squash(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.replace(kgrag.canonical_name(t), ' ', '')
$$;
COMMENT ON FUNCTION kgrag.squash(text) IS
'Returns the squashed form of a name: canonical with the spaces removed. "Cluster DB" -> "clusterdb", so names written apart and together meet.';

CREATE OR REPLACE FUNCTION kgrag.trigrams(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(pg_catalog.array_agg(DISTINCT pg_catalog.substr(p, i, 3) COLLATE "C"
                                          ORDER BY pg_catalog.substr(p, i, 3) COLLATE "C"), '{}')
      FROM (SELECT '  ' || kgrag.squash(t) || ' ' AS p) AS padded,
           pg_catalog.generate_series(1, pg_catalog.length(padded.p) - 2) AS i
$$;
COMMENT ON FUNCTION kgrag.trigrams(text) IS
'Returns the sorted distinct character trigrams of the squashed text (padded as pg_trgm pads a word). Used with a GIN index for typo-tolerant entity linking without the pg_trgm extension.';

CREATE OR REPLACE FUNCTION kgrag.entity_key(entity_type text, entity_name text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.replace(kgrag.canonical_name(entity_type), ' ', '_') || ':' || kgrag.canonical_name(entity_name)
$$;
COMMENT ON FUNCTION kgrag.entity_key(text, text) IS
'Returns the stable entity id for a type and a name: canonical type, a colon, canonical name ("Service", "Serviço Autenticação" -> "service:servico autenticacao"). Together with tenant_id it is the entity key; two types with the same name stay apart.';

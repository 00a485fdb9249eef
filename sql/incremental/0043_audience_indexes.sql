-- 0043_audience_indexes: a session that sees a few of a tenant's chunks finds them without walking the rest.
--
-- With audiences (0042) a session holding one group of twenty sees 5% of the chunks; the vector
-- index and the full-text index list every chunk, and the policy dropped the others after the
-- walk (benchmarks/audiences.py: vector list x8, lexical list x16, kgrag_search x12).
-- - kgrag.chunk.audience: the chunk's groups as one text (kgrag_private.audience_key; NULL: for
--   everyone), stored, so an index holds it and a count reads the index alone;
-- - chunk_audience_idx (tenant_id, audience, with chunk_id and quantized): the chunks for everyone,
--   and those of each audience, counted, found and (binary-quantized) ranked without reading the
--   rest (kgrag_private.audience_nearest, fts_probe).
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    -- first created here: a column stores its results (body: sql/idempotent/002_tenancy.kept.sql)
    EXECUTE $q$
CREATE FUNCTION kgrag_private.audience_key(access text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT pg_catalog.array_to_string(access, ',') $body$
$q$;
    EXECUTE 'ALTER TABLE kgrag.chunk ADD COLUMN audience text'
            ' GENERATED ALWAYS AS (kgrag_private.audience_key(access)) STORED';
    -- (with each chunk's id and quantized vector: a session's few chunks are ranked by the index alone)
    EXECUTE 'CREATE INDEX chunk_audience_idx ON kgrag.chunk (tenant_id, audience) INCLUDE (chunk_id, quantized)';
END
$$;

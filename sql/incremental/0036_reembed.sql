-- 0036_reembed: a tenant moves to another embedder, and tenants of several models share a database.
--
-- - kgrag.use_embedder takes the model's dimension (kgrag.use_embedder(text, integer)): a model
--   narrower than the vector columns is stored zero-padded (kgrag_private.fit_vector), the
--   dimension kept as the tenant's setting embedder_dimension.
-- - kgrag.reembedding: the vectors of the embedder a tenant is moving to, made beside the ones
--   in use (pgkgrag reembed) and put in their place in one transaction (kgrag.reembed_switch);
--   a run that stops keeps what it made and resumes.
-- - Setting embedder_floors: the similarity floors of each embedder whose similarities spread
--   otherwise than USE's, for which the defaults were set (kgrag_private.floor): e5's, carried
--   over from USE's by quantile over the multi-hop sets' question-passage pairs (benchmarks/floors.py).
-- - The default embedder becomes e5 (setting embedder, and embedder_dimension 384), the measured
--   winner under the README's rule, where the columns are wide enough (384 or more). Every tenant
--   that already embedded or recorded an embedder keeps it: its own embedder (use, where it relied
--   on the old default) and dimension (the columns') are written as its settings first.
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    d integer := (SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
                   WHERE s.tenant_id = '*' AND s.key = 'embedding_dimension');
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.alias''::regclass)'
           INTO distributed;
    END IF;
    EXECUTE 'DROP FUNCTION IF EXISTS kgrag.use_embedder(text)';  -- now (text, integer): sql/idempotent/010_settings.sql
    EXECUTE pg_catalog.format($q$
CREATE TABLE kgrag.reembedding (
    tenant_id text NOT NULL,
    kind      text NOT NULL CHECK (kind IN ('chunk', 'entity', 'report')),
    ref_id    text NOT NULL,
    embedder  text NOT NULL,
    body_hash text NOT NULL,
    embedding vector(%s) NOT NULL,
    PRIMARY KEY (tenant_id, kind, ref_id)
)$q$, d);
    IF distributed THEN  -- a new table of the graph goes where kgrag.alias is (kgrag.distribute())
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.reembedding', 'tenant_id', colocate_with => 'kgrag.alias')$q$;
    ELSE
        EXECUTE 'ALTER TABLE kgrag.reembedding ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    EXECUTE $q$COMMENT ON TABLE kgrag.reembedding IS 'The vectors of the embedder a tenant is moving to (pgkgrag reembed), one per chunk, entity and report, with the md5 of the text embedded; kgrag.reembed_switch puts them in place of the vectors in use in one transaction and empties it.'$q$;
    EXECUTE 'ALTER TABLE kgrag.reembedding ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.reembedding FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.reembedding
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'GRANT SELECT ON kgrag.reembedding TO kgrag_reader, kgrag_curator';
    -- every tenant's rows: row-level security lifted for the owner meanwhile
    EXECUTE 'ALTER TABLE kgrag.settings NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.chunk NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.entity NO FORCE ROW LEVEL SECURITY';
    EXECUTE $q$
INSERT INTO kgrag.settings (tenant_id, key, value, description)
SELECT x.tenant_id, k.key, CASE k.key WHEN 'embedder' THEN '"use"'::jsonb ELSE pg_catalog.to_jsonb($1) END, k.description
  FROM (SELECT c.tenant_id FROM kgrag.chunk AS c WHERE c.embedding IS NOT NULL
        UNION SELECT e.tenant_id FROM kgrag.entity AS e WHERE e.embedding IS NOT NULL
        UNION SELECT s.tenant_id FROM kgrag.settings AS s WHERE s.key = 'embedder' AND s.tenant_id <> '*') AS x
 CROSS JOIN (VALUES ('embedder', 'The embedder of this tenant''s vectors; questions must be embedded with it.'),
                    ('embedder_dimension', 'The dimension of this tenant''s embedder (its vectors are stored zero-padded to kgrag.dimension()).'))
       AS k(key, description)
 WHERE NOT EXISTS (SELECT 1 FROM kgrag.settings AS s WHERE s.tenant_id = x.tenant_id AND s.key = k.key)$q$ USING d;
    IF d >= 384 THEN
        UPDATE kgrag.settings SET value = '"e5"',
               description = 'The embedder of a tenant''s vectors (e5, use, hash or openai); questions must be embedded with it. A tenant records its own at its first ingestion and keeps it (kgrag.use_embedder; pgkgrag reembed moves it).'
         WHERE tenant_id = '*' AND key = 'embedder';
        INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
        ('*', 'embedder_dimension', '384', 'The dimension of the default embedder''s vectors (stored zero-padded to kgrag.dimension()).');
    END IF;
    EXECUTE 'ALTER TABLE kgrag.settings FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.chunk FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.entity FORCE ROW LEVEL SECURITY';
    INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'embedder_floors',
     '{"e5": {"chunk_min_similarity": 0.802, "report_min_similarity": 0.802, "entity_min_similarity": 0.865, "entity_seed_min_similarity": 0.888, "router_flat_gap": 0.0149}}',
     'The similarity floors of each embedder whose similarities spread otherwise than USE''s (the defaults of chunk_min_similarity, report_min_similarity, entity_min_similarity, entity_seed_min_similarity and router_flat_gap are USE''s): {"embedder": {"setting": value}}. A tenant''s own setting wins.');
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.reembedding TO kgrag_writer';
END
$$;

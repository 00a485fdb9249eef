-- 0036_reembed: a tenant moves to another embedder, and tenants of several models share a database.
--
-- - kgrag.use_embedder takes the model's dimension (kgrag.use_embedder(text, integer)): a model
--   narrower than the vector columns is stored zero-padded (kgrag_private.fit_vector), the
--   dimension kept as the tenant's setting embedder_dimension.
-- - kgrag.reembedding: the vectors of the embedder a tenant is moving to, made beside the ones
--   in use (pgkgrag reembed) and put in their place in one transaction (kgrag.reembed_switch);
--   a run that stops keeps what it made and resumes.
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
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.reembedding TO kgrag_writer';
END
$$;

-- 0033_curation: people check and correct the graph, and their decisions last.
--
-- - Role kgrag_curator (tenant-bound like the others, kgrag.grant_tenant): reads the tenant's
--   graph and records decisions (kgrag.reject_relation, kgrag.rename_entity, kgrag.approve), and
--   nothing else: it may insert into kgrag.curation (not choose who or when) and write no other table.
-- - kgrag.curation: every decision, with who (the login role) and when; the latest of a target
--   counts. Ingestion and `pgkgrag build` apply them every time (kgrag_private.apply_decisions):
--   a rejected relation never comes back from its evidence, a renamed entity keeps its name;
--   deleting a document forgets the decisions about it.
-- - Settings review_min_confidence (0.6) and review_sample_percent (5) of the queue
--   (kgrag.review_queue).
--
-- One statement (a DO block), each statement through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.alias''::regclass)'
           INTO distributed;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'kgrag_curator') THEN
        BEGIN
            EXECUTE 'CREATE ROLE kgrag_curator NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE';
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'role kgrag_curator does not exist and this role may not create it'
                USING HINT = 'Ask an administrator to run: CREATE ROLE kgrag_curator NOLOGIN;';
        END;
    END IF;
    EXECUTE $q$
CREATE TABLE kgrag.curation (
    tenant_id  text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('reject_relation', 'rename_entity', 'approve')),
    target     text NOT NULL CHECK (length(target) BETWEEN 1 AND 2000),
    value      text CHECK (length(value) <= 1000),
    doc_id     text,
    note       text NOT NULL DEFAULT '' CHECK (length(note) <= 2000),
    decided_by text NOT NULL DEFAULT session_user,
    decided_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, kind, target, decided_at)
)$q$;
    IF distributed THEN  -- a new table of the graph goes where kgrag.alias is (kgrag.distribute())
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.curation', 'tenant_id', colocate_with => 'kgrag.alias')$q$;
    ELSE
        EXECUTE 'ALTER TABLE kgrag.curation ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    EXECUTE $q$COMMENT ON TABLE kgrag.curation IS 'The decisions of the people who check the graph (kgrag.reject_relation, kgrag.rename_entity, kgrag.approve), with who (the login role) and when; the latest decision on a target counts (kgrag.decisions). Ingestion and pgkgrag build apply them every time (kgrag_private.apply_decisions); deleting a document forgets the decisions about it (doc_id).'$q$;
    EXECUTE 'ALTER TABLE kgrag.curation ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.curation FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.curation
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'GRANT USAGE ON SCHEMA kgrag TO kgrag_curator';
    EXECUTE 'GRANT SELECT ON ALL TABLES IN SCHEMA kgrag TO kgrag_curator';
    EXECUTE 'GRANT INSERT (tenant_id, kind, target, value, doc_id, note) ON kgrag.curation TO kgrag_curator';
    EXECUTE 'GRANT SELECT ON kgrag.curation TO kgrag_reader';
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.curation TO kgrag_writer';
    INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
        ('*', 'review_min_confidence', '0.6', 'kgrag.review_queue lists the stated relations whose best evidence has a lower confidence.'),
        ('*', 'review_sample_percent', '5', 'kgrag.review_queue lists this share (0..100) of the stated relations, a sample chosen by their key, for a person to check.');
END
$$;

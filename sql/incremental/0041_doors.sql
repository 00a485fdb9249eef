-- 0041_doors: every door a tenant's role holds is bounded by the database.
--
-- - Decisions are written only by the curation functions (kgrag.reject_relation and the others,
--   SECURITY DEFINER from this release): no tenant role inserts, updates or deletes
--   kgrag.curation itself, so who (the login role) and when (the database's clock) are the
--   database's, and every row passed the functions' checks.
-- - kgrag.curation_ended: a decision forgotten with its document leaves an entry (what, who decided
--   and when, who ended it, when and why), written by kgrag_private.forget_decisions_at; a
--   decision replaced by a later one stays in kgrag.curation (kgrag.decision_history shows both).
-- - kgrag_private.setting_rule and setting_fault (their bodies: sql/idempotent/004_limits.kept.sql):
--   every setting's type, floor and ceiling, and whether it is the schema owner's alone (a URL, a
--   model endpoint, a process limit). A row is checked against them when it is written: by the
--   policy of kgrag.settings (which also refuses a tenant an owner's setting) and by the constraint
--   settings_value_fits_its_rule (for every writer, a superuser too). A
--   tenant's row of an owner's setting written before this revision goes (it could point the
--   reranker, with the operator's key, at the tenant's own listener).
-- - kgrag.log_forgetting: what a deletion of documents may redact from the query log, noted from
--   the graph by the log writer before the deletion (kgrag_private.note_forgettable_at) instead of
--   given by the caller: the redaction (kgrag_private.forget_in_logs) is no longer a tenant's to aim.
-- - kgrag_private.log_secret: the secret the question hash of the logs is keyed with (sha256 of the
--   secret around the question, in place of an unsalted md5 anyone could confirm a guess with);
--   only the log writer (kgrag_logger) reads it. The unsalted hashes already logged are cleared.
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.alias''::regclass)'
           INTO distributed;
    END IF;
    -- decisions through the functions only (a table-level REVOKE takes the column grants with it)
    EXECUTE 'REVOKE INSERT, UPDATE, DELETE ON kgrag.curation FROM kgrag_writer, kgrag_curator';
    EXECUTE $q$
CREATE TABLE kgrag.curation_ended (
    tenant_id  text NOT NULL,
    kind       text NOT NULL,
    target     text NOT NULL,
    value      text,
    doc_id     text,
    note       text NOT NULL DEFAULT '',
    decided_by text NOT NULL,
    decided_at timestamptz NOT NULL,
    ended_by   text NOT NULL,
    ended_at   timestamptz NOT NULL,
    why        text NOT NULL CHECK (pg_catalog.length(why) <= 2000),
    PRIMARY KEY (tenant_id, kind, target, decided_at)
)$q$;
    IF distributed THEN  -- a new table of the graph goes where kgrag.document's group is (kgrag.distribute())
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.curation_ended', 'tenant_id', colocate_with => 'kgrag.document')$q$;
    ELSE
        EXECUTE 'ALTER TABLE kgrag.curation_ended ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    EXECUTE $q$COMMENT ON TABLE kgrag.curation_ended IS 'The decisions that left kgrag.curation because their document was deleted: the decision as it was (kind, target, value, doc_id, note, decided_by, decided_at), who ended it (the login role), when and why. Written by kgrag_private.forget_decisions_at, which kgrag.delete_documents calls; no tenant role writes it. kgrag.decision_history shows these with every decision still in kgrag.curation.'$q$;
    EXECUTE 'ALTER TABLE kgrag.curation_ended ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.curation_ended FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.curation_ended
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'GRANT SELECT ON kgrag.curation_ended TO kgrag_reader, kgrag_writer, kgrag_curator';
    -- the settings: a rule per key (first created here: the settings policy calls them)
    EXECUTE $q$
CREATE FUNCTION kgrag_private.setting_rule(setting_key text) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT NULL::jsonb $body$
$q$;
    EXECUTE $q$
CREATE FUNCTION kgrag_private.setting_fault(setting_key text, value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT NULL::text $body$
$q$;
    -- every row, whoever writes it (a superuser passes no policy): of its setting's type, within its
    -- floor and ceiling; the rows already there are read within them (kgrag_private.within_limits)
    EXECUTE $q$ALTER TABLE kgrag.settings ADD CONSTRAINT settings_value_fits_its_rule
        CHECK (kgrag_private.setting_rule(key) IS NULL OR kgrag_private.setting_fault(key, value) IS NULL) NOT VALID$q$;
    -- what a document deletion may redact from the query log, noted from the graph before the
    -- deletion by the log writer, not given by the caller
    EXECUTE $q$
CREATE TABLE kgrag.log_forgetting (
    tenant_id text NOT NULL,
    kind      text NOT NULL CHECK (kind IN ('entity', 'name', 'chunk')),
    value     text NOT NULL,
    PRIMARY KEY (tenant_id, kind, value)
)$q$;
    IF distributed THEN
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.log_forgetting', 'tenant_id', colocate_with => 'kgrag.document')$q$;
    ELSE
        EXECUTE 'ALTER TABLE kgrag.log_forgetting ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    EXECUTE $q$COMMENT ON TABLE kgrag.log_forgetting IS 'What a deletion of documents in progress may make the query log forget: the chunks, entities and names the documents gave, noted from the graph by kgrag_private.note_forgettable_at before the deletion, read and emptied by kgrag_private.forget_in_logs after it (which forgets only what the graph no longer holds). Empty between transactions; no tenant role writes it.'$q$;
    EXECUTE 'ALTER TABLE kgrag.log_forgetting ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.log_forgetting FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.log_forgetting
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'GRANT SELECT, INSERT, DELETE ON kgrag.log_forgetting TO kgrag_logger';
    EXECUTE 'GRANT SELECT ON kgrag.log_forgetting TO kgrag_reader, kgrag_writer, kgrag_curator';
    -- the log writer reads, for the tenant acting, what a deletion takes from the graph
    EXECUTE 'GRANT SELECT ON kgrag.chunk, kgrag.mention, kgrag.entity, kgrag.alias, kgrag.alias_source TO kgrag_logger';
    -- a tenant's row of a setting that is now the owner's alone goes (the rows of every tenant)
    EXECUTE 'ALTER TABLE kgrag.settings NO FORCE ROW LEVEL SECURITY';
    DELETE FROM kgrag.settings
     WHERE tenant_id <> '*'
       AND key IN ('rerank_url', 'rerank_api', 'rerank_model', 'reader_memory_mb', 'reader_timeout_s',
                   'embedding_dimension', 'embedder_centres', 'embedder_floors', 'vector_index', 'setting_limits',
                   'idempotent_objects', 'idempotent_sha256');
    EXECUTE 'ALTER TABLE kgrag.settings FORCE ROW LEVEL SECURITY';
    -- the logs' question hash, keyed
    EXECUTE $q$
CREATE TABLE kgrag_private.log_secret (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    secret text NOT NULL CHECK (pg_catalog.length(secret) >= 64)
)$q$;
    EXECUTE $q$COMMENT ON TABLE kgrag_private.log_secret IS 'The secret the question hash of kgrag.query_log and kgrag.answer_log is keyed with (kgrag_private.question_mac). Read by kgrag_logger alone.'$q$;
    EXECUTE $q$INSERT INTO kgrag_private.log_secret (secret)
        VALUES (pg_catalog.replace(pg_catalog.gen_random_uuid()::text || pg_catalog.gen_random_uuid()::text
                                   || pg_catalog.gen_random_uuid()::text, '-', ''))$q$;
    EXECUTE 'REVOKE ALL ON kgrag_private.log_secret FROM PUBLIC';
    EXECUTE 'GRANT SELECT ON kgrag_private.log_secret TO kgrag_logger';
    IF distributed THEN  -- the log writers run on the workers
        EXECUTE $q$SELECT pg_catalog.create_reference_table('kgrag_private.log_secret')$q$;
    END IF;
    EXECUTE 'ALTER TABLE kgrag.query_log NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.answer_log NO FORCE ROW LEVEL SECURITY';
    EXECUTE $q$UPDATE kgrag.query_log SET question_hash = '' WHERE question_hash <> ''$q$;
    EXECUTE $q$UPDATE kgrag.answer_log SET question_hash = '' WHERE question_hash <> ''$q$;
    EXECUTE 'ALTER TABLE kgrag.query_log FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.answer_log FORCE ROW LEVEL SECURITY';
END
$$;

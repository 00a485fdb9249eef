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
-- - kgrag.delete_documents (SECURITY DEFINER from this release) ends the decisions about the
--   documents and redacts the query log itself: the redaction (kgrag_private.forget_in_logs) is no
--   longer callable by a tenant's role, so no writer aims it.
-- - The logs keep no question hash (query_log.question_hash, answer_log.question_hash go): an
--   unsalted md5 let anyone who reads the log confirm a guessed question, and a keyed one would
--   still let any role that may search confirm it by asking the question and comparing. Nothing
--   read it.
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
CREATE FUNCTION kgrag_private.one_of(allowed jsonb, value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT true $body$
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
    EXECUTE $q$
CREATE FUNCTION kgrag_private.setting_writable(tenant text, setting_key text) RETURNS boolean
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT true $body$
$q$;
    -- a tenant's row of an owner's setting: changed or deleted by the owner alone (the policy
    -- tenant_write checks only the row a write leaves)
    EXECUTE $q$CREATE POLICY owner_rows_update ON kgrag.settings AS RESTRICTIVE FOR UPDATE
        USING (kgrag_private.setting_writable(tenant_id, key))$q$;
    EXECUTE $q$CREATE POLICY owner_rows_delete ON kgrag.settings AS RESTRICTIVE FOR DELETE
        USING (kgrag_private.setting_writable(tenant_id, key))$q$;
    -- a tenant's row of a setting that is now the owner's alone goes (the rows of every tenant)
    EXECUTE 'ALTER TABLE kgrag.settings NO FORCE ROW LEVEL SECURITY';
    DELETE FROM kgrag.settings
     WHERE tenant_id <> '*'
       AND key IN ('rerank_url', 'rerank_api', 'rerank_model', 'reader_memory_mb', 'reader_timeout_s',
                   'embedding_dimension', 'embedder_centres', 'embedder_floors', 'vector_index', 'setting_limits',
                   'idempotent_objects', 'idempotent_sha256');
    EXECUTE 'ALTER TABLE kgrag.settings FORCE ROW LEVEL SECURITY';
    -- what the defaults say of the readers, as they now are
    UPDATE kgrag.settings SET description = CASE key
        WHEN 'reader_timeout_s' THEN 'A file whose reader (Markdown, PDF, HTML, DOCX) runs longer than this is stopped and refused (the reader''s own process ends itself then too). The schema owner''s alone.'
        WHEN 'reader_memory_mb' THEN 'A file whose reader (Markdown, PDF, HTML, DOCX) needs more memory than this is stopped and refused. The schema owner''s alone.'
        ELSE 'Documents larger than this (MB of UTF-8 text) are rejected with a message; a .txt file larger than this is refused unread, and a JSONL line may take 8 times this.' END
     WHERE tenant_id = '*' AND key IN ('reader_timeout_s', 'reader_memory_mb', 'max_document_mb');
    -- the log writer no longer redacts (kgrag.delete_documents does, as the schema owner)
    EXECUTE 'DROP POLICY logger_redact ON kgrag.query_log';
    EXECUTE 'REVOKE UPDATE ON kgrag.query_log FROM kgrag_logger';
    -- the logs keep no hash of the question: a role that may search could confirm a guess by
    -- asking it (the search logs its own hash) and comparing, keyed or not
    EXECUTE 'ALTER TABLE kgrag.query_log DROP COLUMN question_hash';  -- (its bounds go with it)
    EXECUTE 'ALTER TABLE kgrag.answer_log DROP COLUMN question_hash';
    EXECUTE $q$ALTER TABLE kgrag.query_log ADD CONSTRAINT query_log_bounded CHECK (
    pg_catalog.length(route) <= 32 AND pg_catalog.length(reason) <= 4000 AND pg_catalog.cardinality(seeds) <= 100
    AND paths_walked >= 0 AND rows_returned >= 0 AND ms >= 0) NOT VALID$q$;
    EXECUTE $q$ALTER TABLE kgrag.answer_log ADD CONSTRAINT answer_log_bounded CHECK (
    pg_catalog.length(route) <= 32 AND calls >= 0 AND prompt_tokens >= 0 AND completion_tokens >= 0
    AND context_chars >= 0 AND citations >= 0 AND dropped >= 0 AND ms >= 0) NOT VALID$q$;
END
$$;

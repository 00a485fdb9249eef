-- 0039_limits_and_logs, down: the settings policy checks the tenant alone again, writers may write
-- the logs again, the log writer may only insert them, the overflow counts and the settings go.
DO $$
DECLARE
    t text;
BEGIN
    EXECUTE 'DROP TABLE kgrag.log_overflow';
    EXECUTE 'DROP TABLE kgrag.llm_call';
    EXECUTE 'ALTER TABLE kgrag.ingest_failure DROP COLUMN line';
    EXECUTE 'ALTER TABLE kgrag.ingest_failure DROP COLUMN source';
    EXECUTE $q$COMMENT ON TABLE kgrag.ingest_failure IS 'Documents whose last ingestion failed (nothing of them was written) and why. A later successful ingestion of the document removes its row.'$q$;
    EXECUTE 'DROP POLICY logger_read ON kgrag.settings';
    FOREACH t IN ARRAY ARRAY['query_log', 'answer_log', 'ingest_failure'] LOOP
        EXECUTE pg_catalog.format('DROP POLICY logger_read ON kgrag.%I', t);
        EXECUTE pg_catalog.format('DROP POLICY logger_purge ON kgrag.%I', t);
    END LOOP;
    EXECUTE 'DROP POLICY logger_redact ON kgrag.query_log';
    EXECUTE 'REVOKE SELECT ON kgrag.settings FROM kgrag_logger';
    EXECUTE 'REVOKE SELECT, UPDATE, DELETE ON kgrag.query_log FROM kgrag_logger';
    EXECUTE 'REVOKE SELECT, DELETE ON kgrag.answer_log, kgrag.ingest_failure FROM kgrag_logger';
    EXECUTE 'GRANT INSERT, UPDATE, DELETE ON kgrag.query_log, kgrag.answer_log TO kgrag_writer';
    EXECUTE 'DROP POLICY tenant_write ON kgrag.settings';
    EXECUTE $q$CREATE POLICY tenant_write ON kgrag.settings USING (tenant_id = kgrag.current_tenant())
        WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'DROP FUNCTION kgrag_private.setting_allowed(text, text, jsonb)';
    EXECUTE 'DROP FUNCTION kgrag_private.within_limits(text, jsonb)';
    DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key IN ('setting_limits', 'log_rate_per_minute', 'query_log_days', 'answer_log_days', 'ingest_failure_days');
END
$$;

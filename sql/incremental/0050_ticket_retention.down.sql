-- 0050_ticket_retention down: the tickets are kept for good again; every tenant's
-- ingest_ticket_days goes (the owner's, and any a tenant set: row security set aside for it).
DO $$
BEGIN
    EXECUTE 'DROP POLICY logger_purge ON kgrag.ingest_ticket';
    EXECUTE 'DROP POLICY logger_read ON kgrag.ingest_ticket';
    EXECUTE 'REVOKE SELECT (tenant_id, state, finished_at), DELETE ON kgrag.ingest_ticket FROM kgrag_logger';
    UPDATE kgrag.settings SET value = value - 'ingest_ticket_days' WHERE tenant_id = '*' AND key = 'setting_limits';
    EXECUTE 'ALTER TABLE kgrag.settings NO FORCE ROW LEVEL SECURITY';
    DELETE FROM kgrag.settings WHERE key = 'ingest_ticket_days';
    EXECUTE 'ALTER TABLE kgrag.settings FORCE ROW LEVEL SECURITY';
    EXECUTE $q$COMMENT ON TABLE kgrag.ingest_ticket IS 'One document submitted to the ingestion queue (kgrag.submit_document): its payload (kept until it is stored, and for a failed one until it is tried again: kgrag.retry_documents), state, attempts, why it failed, who submitted it and when, and the worker session that claimed it. Written through the queue''s functions only; read through kgrag.ingest_queue.'$q$;
END
$$;

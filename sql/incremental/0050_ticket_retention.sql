-- 0050_ticket_retention: kgrag.purge() deletes the tickets of the ingestion queue settled (stored
-- or unchanged) longer ago than the tenant's setting ingest_ticket_days (30; a tenant may set 7 to
-- 3,650 within the owner's setting_limits), and failed ones (with the payload
-- kgrag.retry_documents needs) only once their row of kgrag.ingest_failure may go too
-- (ingest_failure_days, if longer). Until now every submission left its row for good. kgrag.purge runs as kgrag_logger, which may now read the columns that say whether a
-- ticket is settled and delete the row, as it may the logs' rows.
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'GRANT SELECT (tenant_id, state, finished_at), DELETE ON kgrag.ingest_ticket TO kgrag_logger';
    EXECUTE 'CREATE POLICY logger_read ON kgrag.ingest_ticket FOR SELECT TO kgrag_logger USING (true)';
    -- (USING true, as on the logs: a condition here would be ORed with tenant_isolation, whose
    -- kgrag.current_tenant() refuses the logger acting for '*' on a Citus worker; kgrag.purge
    -- deletes settled tickets alone)
    EXECUTE 'CREATE POLICY logger_purge ON kgrag.ingest_ticket FOR DELETE TO kgrag_logger USING (true)';
    INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
        ('*', 'ingest_ticket_days', '30', 'kgrag.purge() deletes the tickets of the ingestion queue stored or unchanged longer ago than this many days, and failed ones (which kgrag.retry_documents may try again) after the longer of this and ingest_failure_days.');
    UPDATE kgrag.settings SET value = value || '{"ingest_ticket_days": {"min": 7, "max": 3650}}'
     WHERE tenant_id = '*' AND key = 'setting_limits';
    EXECUTE $q$COMMENT ON TABLE kgrag.ingest_ticket IS 'One document submitted to the ingestion queue (kgrag.submit_document): its payload (kept until it is stored, and for a failed one until it is tried again: kgrag.retry_documents), state, attempts, why it failed, who submitted it and when, and the worker session that claimed it. Written through the queue''s functions only; read through kgrag.ingest_queue. kgrag.purge deletes a ticket stored or unchanged longer ago than the setting ingest_ticket_days, a failed one after the longer of that and ingest_failure_days.'$q$;
END
$$;

-- 0050_ticket_retention: kgrag.purge() deletes the tickets of the ingestion queue settled (stored,
-- unchanged or failed) longer ago than the tenant's setting ingest_ticket_days (30; a tenant may
-- set 7 to 3,650 within the owner's setting_limits). Until now every submission left its row for
-- good. kgrag.purge runs as kgrag_logger, which may now read the columns that say whether a
-- ticket is settled and delete the row, as it may the logs' rows.
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'GRANT SELECT (tenant_id, state, finished_at), DELETE ON kgrag.ingest_ticket TO kgrag_logger';
    EXECUTE 'CREATE POLICY logger_read ON kgrag.ingest_ticket FOR SELECT TO kgrag_logger USING (true)';
    EXECUTE 'CREATE POLICY logger_purge ON kgrag.ingest_ticket FOR DELETE TO kgrag_logger USING (true)';
    INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
        ('*', 'ingest_ticket_days', '30', 'kgrag.purge() deletes the tickets of the ingestion queue settled (stored, unchanged or failed) longer ago than this many days; kgrag.ingest_failure keeps why a document failed for ingest_failure_days.');
    UPDATE kgrag.settings SET value = value || '{"ingest_ticket_days": {"min": 7, "max": 3650}}'
     WHERE tenant_id = '*' AND key = 'setting_limits';
END
$$;

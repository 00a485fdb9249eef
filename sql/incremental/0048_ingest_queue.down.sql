-- 0048_ingest_queue down: the queue goes, with the documents waiting in it.
DO $$
BEGIN
    DELETE FROM kgrag.settings WHERE key IN ('queue_max_documents', 'queue_max_mb', 'ingest_max_attempts', 'ingest_claim_minutes');
    EXECUTE 'DROP TABLE kgrag.ingest_queue_load';
    EXECUTE 'DROP TABLE kgrag.ingest_ticket';
    EXECUTE 'DROP SEQUENCE kgrag.ingest_ticket_seq';
END
$$;

-- 0048_ingest_queue: documents submitted from any client, ingested by a worker.
--
-- - kgrag.ingest_ticket: one row per document submitted (kgrag.submit_document), with its
--   payload, its state (queued, working, stored, unchanged, failed), attempts, reason and times,
--   and the key of the session that claimed it (a worker whose session is gone gives its tickets
--   back).
--   Written through the queue's functions only (SECURITY DEFINER: the ceilings are checked there);
--   read by the tenant's roles, a document for an audience by those who see it.
-- - kgrag.ingest_ticket_seq: the tickets' numbers (one order for every tenant).
-- - kgrag.ingest_queue_load: what each tenant has waiting, against the ceilings (the queue's own).
-- - Settings queue_max_documents (10,000) and queue_max_mb (1,000): the schema owner's ceilings
--   on what a tenant may have waiting; ingest_max_attempts (3): how often a document is tried;
--   ingest_claim_minutes (60): how long a worker may hold a ticket.
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.document''::regclass)'
           INTO distributed;
    END IF;
    EXECUTE 'CREATE SEQUENCE kgrag.ingest_ticket_seq AS bigint';
    EXECUTE $q$
CREATE TABLE kgrag.ingest_ticket (
    tenant_id     text NOT NULL,
    ticket        bigint NOT NULL,
    doc_id        text NOT NULL,
    document      jsonb,  -- the payload as submitted; NULL once stored or unchanged
    payload_md5   text NOT NULL,
    bytes         integer NOT NULL CHECK (bytes >= 0),
    access        text[],
    submitted_groups text[],  -- the groups the submitter held ({*}: every group)
    state         text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'working', 'stored', 'unchanged', 'failed')),
    attempts      integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    waits         integer NOT NULL DEFAULT 0 CHECK (waits >= 0),  -- endpoint failures in a row
    reason        text,
    submitted_by  text NOT NULL,
    submitted_at  timestamptz NOT NULL DEFAULT now(),
    not_before    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    claimed_key   integer,  -- the claiming session's process id (kgrag_private.claim_tickets)
    PRIMARY KEY (tenant_id, ticket),
    CONSTRAINT ingest_ticket_access_groups CHECK (access IS NULL OR (cardinality(access) BETWEEN 1 AND 32
        AND array_position(access, NULL) IS NULL
        AND array_to_string(access, ',') ~ '^[a-z0-9][a-z0-9_.-]{0,62}(,[a-z0-9][a-z0-9_.-]{0,62})*$'))
)$q$;
    IF distributed THEN
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.ingest_ticket', 'tenant_id', colocate_with => 'kgrag.document')$q$;
    ELSE
        EXECUTE 'ALTER TABLE kgrag.ingest_ticket ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    -- the waiting tickets, in order, with their size (the claim and the ceilings read these alone)
    EXECUTE $q$CREATE INDEX ingest_ticket_waiting_idx ON kgrag.ingest_ticket (tenant_id, ticket) INCLUDE (doc_id, bytes)
                WHERE state IN ('queued', 'working')$q$;
    EXECUTE 'CREATE INDEX ingest_ticket_doc_idx ON kgrag.ingest_ticket (tenant_id, doc_id, ticket)';
    EXECUTE $q$COMMENT ON TABLE kgrag.ingest_ticket IS 'One document submitted to the ingestion queue (kgrag.submit_document): its payload (kept until it is stored, and for a failed one until it is tried again: kgrag.retry_documents), state, attempts, why it failed, who submitted it and when, and the worker session that claimed it. Written through the queue''s functions only; read through kgrag.ingest_queue.'$q$;
    EXECUTE 'ALTER TABLE kgrag.ingest_ticket ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.ingest_ticket FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.ingest_ticket
        USING (tenant_id = kgrag.current_tenant() AND (access IS NULL OR kgrag_private.may_see(tenant_id, access)))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (access IS NULL OR kgrag_private.may_see(tenant_id, access)))$q$;
    -- what kgrag.ingest_queue shows, no more: not a payload, the submitter's groups or a claim's key
    EXECUTE $q$GRANT SELECT (tenant_id, ticket, doc_id, state, attempts, reason, bytes, access, submitted_by, submitted_at,
                            not_before, started_at, finished_at)
               ON kgrag.ingest_ticket TO kgrag_reader, kgrag_writer, kgrag_curator$q$;
    -- what each tenant has waiting, kept by the queue's functions: the ceilings are read here,
    -- under this row's lock, whatever of the queue the caller sees
    EXECUTE $q$
CREATE TABLE kgrag.ingest_queue_load (
    tenant_id text PRIMARY KEY,
    documents bigint NOT NULL DEFAULT 0 CHECK (documents >= 0),
    bytes     bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0)
)$q$;
    IF distributed THEN
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.ingest_queue_load', 'tenant_id', colocate_with => 'kgrag.document')$q$;
    ELSE
        EXECUTE 'ALTER TABLE kgrag.ingest_queue_load ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    EXECUTE $q$COMMENT ON TABLE kgrag.ingest_queue_load IS 'What each tenant has waiting in the ingestion queue (documents queued or being ingested, and their bytes), kept by the queue''s functions and read under the row''s lock against the ceilings queue_max_documents and queue_max_mb. No tenant role reads or writes it.'$q$;
    EXECUTE 'ALTER TABLE kgrag.ingest_queue_load ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.ingest_queue_load FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.ingest_queue_load
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
        ('*', 'queue_max_documents', '10000', 'The most documents a tenant may have waiting in the ingestion queue (queued or being ingested): a submission past it is refused (kgrag.submit_document). The schema owner''s.'),
        ('*', 'queue_max_mb', '1000', 'The most megabytes of documents a tenant may have waiting in the ingestion queue: a submission past it is refused. The schema owner''s.'),
        ('*', 'ingest_max_attempts', '3', 'How many times a worker tries a document of the ingestion queue before it is failed (kgrag.ingest_queue; kgrag.retry_documents tries it again).'),
        ('*', 'ingest_claim_minutes', '60', 'How long a worker may hold a ticket of the ingestion queue: past it, another worker takes it back even from a live session (a hung worker).');
END
$$;

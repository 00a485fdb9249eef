-- The ingestion queue: a document submitted from any client with one SQL call
-- (kgrag.submit_document) waits in kgrag.ingest_ticket until a worker (pgkgrag worker) claims it,
-- ingests it with the same batches as pgkgrag ingest, and settles it (stored, unchanged, failed).
-- Every write goes through these functions (SECURITY DEFINER): what a document may be, how much a
-- tenant may have waiting and who may submit are decided here, for any client.

CREATE OR REPLACE FUNCTION kgrag_private.submission_fault(doc jsonb, max_text_bytes bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    allowed constant text[] := ARRAY['doc_id', 'text', 'title', 'metadata', 'language', 'source_uri', 'entities',
                                     'relations', 'sections', 'access'];
    extra text;
    bad integer;
BEGIN
    -- the shape of a JSONL line (pgkgrag.ingest.inputs.DocumentIn); what only the worker can tell
    -- (dates of relations, sections against the text) fails the ticket with its reason
    IF doc IS NULL OR jsonb_typeof(doc) <> 'object' THEN
        RETURN 'a document is a JSON object ({"doc_id": ..., "text": ...})';
    END IF;
    SELECT k INTO extra FROM jsonb_object_keys(doc) AS k WHERE k <> ALL (allowed) ORDER BY k LIMIT 1;
    IF extra IS NOT NULL THEN
        RETURN format('%s is no field of a document (%s)', quote_literal(left(extra, 60)), array_to_string(allowed, ', '));
    END IF;
    IF jsonb_typeof(doc -> 'doc_id') IS DISTINCT FROM 'string' OR btrim(doc ->> 'doc_id') = ''
       OR length(btrim(doc ->> 'doc_id')) > 256 OR strpos(doc ->> 'doc_id', '#') > 0 OR doc ->> 'doc_id' ~ '[[:cntrl:]]' THEN
        RETURN 'doc_id must be a text of 1 to 256 characters, without ''#'' and without control characters';
    END IF;
    IF jsonb_typeof(doc -> 'text') IS DISTINCT FROM 'string' OR btrim(doc ->> 'text') = '' THEN
        RETURN 'text must be a non-empty text';
    END IF;
    IF octet_length(doc ->> 'text') > max_text_bytes THEN
        RETURN format('its text is %s MB, above the limit of %s MB of a document''s text (setting max_document_mb)',
                      round(octet_length(doc ->> 'text') / 1048576.0, 1), round(max_text_bytes / 1048576.0, 3));
    END IF;
    IF jsonb_typeof(doc -> 'title') NOT IN ('string', 'null') THEN
        RETURN 'title must be a text';
    ELSIF jsonb_typeof(doc -> 'language') NOT IN ('string', 'null') OR jsonb_typeof(doc -> 'source_uri') NOT IN ('string', 'null') THEN
        RETURN 'language and source_uri must be texts';
    ELSIF jsonb_typeof(doc -> 'metadata') NOT IN ('object', 'null') THEN
        RETURN 'metadata must be a JSON object';
    ELSIF jsonb_typeof(doc -> 'entities') NOT IN ('array', 'null') OR jsonb_typeof(doc -> 'relations') NOT IN ('array', 'null')
          OR jsonb_typeof(doc -> 'sections') NOT IN ('array', 'null') THEN
        RETURN 'entities, relations and sections must be JSON arrays';
    END IF;
    SELECT min(e.n) INTO bad FROM jsonb_array_elements(COALESCE(doc -> 'entities', '[]')) WITH ORDINALITY AS e(x, n)
     WHERE jsonb_typeof(e.x) <> 'object' OR jsonb_typeof(e.x -> 'name') IS DISTINCT FROM 'string' OR btrim(e.x ->> 'name') = '';
    IF bad IS NOT NULL THEN
        RETURN format('entities[%s] must be an object with a non-empty name', bad - 1);
    END IF;
    SELECT min(r.n) INTO bad FROM jsonb_array_elements(COALESCE(doc -> 'relations', '[]')) WITH ORDINALITY AS r(x, n)
     WHERE jsonb_typeof(r.x) <> 'object' OR jsonb_typeof(r.x -> 'source') IS DISTINCT FROM 'string'
        OR jsonb_typeof(r.x -> 'target') IS DISTINCT FROM 'string' OR jsonb_typeof(r.x -> 'type') IS DISTINCT FROM 'string';
    IF bad IS NOT NULL THEN
        RETURN format('relations[%s] must be an object with a source, a target and a type', bad - 1);
    END IF;
    IF jsonb_typeof(doc -> 'access') = 'array' THEN
        IF jsonb_array_length(doc -> 'access') NOT BETWEEN 1 AND 32
           OR EXISTS (SELECT 1 FROM jsonb_array_elements(doc -> 'access') AS g(x)
                       WHERE jsonb_typeof(g.x) <> 'string' OR g.x #>> '{}' !~ '^[a-z0-9][a-z0-9_.-]{0,62}$') THEN
            RETURN 'access must name 1 to 32 groups (1-63 lower-case letters, digits or _.-)';
        END IF;
    ELSIF jsonb_typeof(doc -> 'access') IS DISTINCT FROM 'null' AND doc ? 'access' THEN
        RETURN 'access must be a JSON array of groups, or null (everyone of the tenant)';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION kgrag_private.submission_fault(jsonb, bigint) IS
'Private. Returns what is wrong with a document submitted to the ingestion queue, as a JSONL line would be read (fields doc_id, text, title, metadata, language, source_uri, entities, relations, sections, access; a doc_id of 1 to 256 characters without ''#'' or control characters; a non-empty text of at most max_text_bytes; entities with names, relations with a source, a target and a type; 1 to 32 group names), or NULL. What only a worker can tell (a relation''s dates, sections against the text) fails its ticket with the reason.';

CREATE OR REPLACE FUNCTION kgrag_private.queue_room(tenant text, documents integer, bytes bigint) RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    max_documents bigint := (kgrag.setting('queue_max_documents') #>> '{}')::bigint;
    max_bytes numeric := (kgrag.setting('queue_max_mb') #>> '{}')::numeric * 1048576;
    waiting bigint;
    held numeric;
BEGIN
    SELECT count(*), COALESCE(sum(i.bytes), 0) INTO waiting, held FROM kgrag.ingest_ticket AS i
     WHERE i.tenant_id = tenant AND i.state IN ('queued', 'working');
    IF waiting + documents > max_documents THEN
        RAISE EXCEPTION 'the ingestion queue of tenant % holds % documents, and % more would pass its ceiling of % (setting queue_max_documents)',
            quote_literal(tenant), waiting, documents, max_documents
            USING ERRCODE = '53400', HINT = 'Submit again once a worker (pgkgrag worker) has taken some: SELECT state, count(*) FROM kgrag.ingest_queue GROUP BY 1;';
    END IF;
    IF held + bytes > max_bytes THEN
        RAISE EXCEPTION 'the ingestion queue of tenant % holds % MB, and % MB more would pass its ceiling of % MB (setting queue_max_mb)',
            quote_literal(tenant), round(held / 1048576, 1), round(bytes / 1048576.0, 1), round(max_bytes / 1048576, 1)
            USING ERRCODE = '53400', HINT = 'Submit again once a worker (pgkgrag worker) has taken some.';
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.queue_room(text, integer, bigint) IS
'Private. Raises 53400 (configuration_limit_exceeded) when documents more documents of bytes bytes would take the tenant''s waiting documents (queued or being ingested) past the settings queue_max_documents or queue_max_mb (the schema owner''s); returns nothing otherwise. The caller holds the tenant''s queue lock.';

CREATE OR REPLACE FUNCTION kgrag.submit_document(doc jsonb) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    max_text bigint := ((kgrag.setting('max_document_mb') #>> '{}')::numeric * 1048576)::bigint;
    size bigint;
    fault text;
    groups text[];
    digest text;
    ticket bigint;
BEGIN
    -- As the schema owner: the queue is written here only, so its ceilings hold for every client.
    PERFORM kgrag_private.check_writing(t);
    size := octet_length(doc::text);
    IF size > 8 * max_text THEN  -- as a JSONL line: its text JSON-escaped, its entities and relations
        RAISE EXCEPTION 'a document of % MB is above the limit of % MB (8 times setting max_document_mb)',
            round(size / 1048576.0, 1), round(8 * max_text / 1048576.0, 1) USING ERRCODE = '54000';
    END IF;
    fault := kgrag_private.submission_fault(doc, max_text);
    IF fault IS NOT NULL THEN
        RAISE EXCEPTION 'document %: %', COALESCE(quote_literal(left(doc ->> 'doc_id', 100)), '(no doc_id)'), fault
            USING ERRCODE = CASE WHEN fault LIKE 'its text is%' THEN '54000' ELSE '22023' END;
    END IF;
    groups := NULLIF(ARRAY(SELECT DISTINCT g FROM jsonb_array_elements_text(COALESCE(doc -> 'access', '[]')) AS g ORDER BY g), '{}');
    PERFORM kgrag_private.check_audiences(COALESCE(groups, '{}'));
    -- one submitter of a tenant at a time from here: its ceilings hold under concurrency
    PERFORM pg_advisory_xact_lock(hashtext('kgrag|' || t || '|queue'), 0);
    digest := md5(doc::text);  -- (jsonb's text is normalized: one document, one digest)
    SELECT i.ticket INTO ticket FROM kgrag.ingest_ticket AS i
     WHERE i.tenant_id = t AND i.doc_id = btrim(doc ->> 'doc_id') AND i.state = 'queued' AND i.payload_md5 = digest
     ORDER BY i.ticket DESC LIMIT 1;
    IF ticket IS NOT NULL THEN
        RETURN ticket;  -- the same document is waiting already
    END IF;
    PERFORM kgrag_private.queue_room(t, 1, size);
    ticket := nextval('kgrag.ingest_ticket_seq');
    INSERT INTO kgrag.ingest_ticket (tenant_id, ticket, doc_id, document, payload_md5, bytes, access, submitted_by)
    VALUES (t, ticket, btrim(doc ->> 'doc_id'), doc, digest, size, groups, session_user);
    PERFORM pg_notify('kgrag_ingest', '');  -- (no tenant named: any session may listen)
    RETURN ticket;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.submit_document(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.submit_document(jsonb) TO kgrag_writer;
COMMENT ON FUNCTION kgrag.submit_document(jsonb) IS
'Submits a document to the current tenant''s ingestion queue and returns its ticket; a worker (pgkgrag worker) ingests it as pgkgrag ingest would a JSONL line, and kgrag.ingest_queue shows its state. The document has the fields of a JSONL line (doc_id, text, title, metadata, language, source_uri, entities, relations, sections, access) and is checked here (kgrag_private.submission_fault): 22023 for a bad one, 54000 for one above the size limits (max_document_mb for its text, 8 times that in all), nothing queued. The same document already waiting returns its ticket; one unchanged since it was stored is settled unchanged by the worker. 53400 when the tenant''s waiting documents would pass the ceilings queue_max_documents or queue_max_mb (the schema owner''s settings: retry later). A document for groups (access) is for groups the caller holds (42501). SECURITY DEFINER, owned by the schema owner, on the allow-list: the queue is written through its functions only; for kgrag_writer and writer keys (a reader''s key: 42501). Notifies channel kgrag_ingest (an empty payload).';

CREATE OR REPLACE VIEW kgrag.ingest_queue WITH (security_invoker = true) AS
SELECT i.ticket, i.doc_id, i.state, i.attempts, i.reason, i.bytes, i.access, i.submitted_by, i.submitted_at,
       i.not_before, i.started_at, i.finished_at
  FROM kgrag.ingest_ticket AS i;
GRANT SELECT ON kgrag.ingest_queue TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.ingest_queue IS
'The current tenant''s ingestion queue (the tickets of kgrag.submit_document that the session sees: a document for an audience by those who hold one of its groups): ticket, doc_id, state (queued; working; stored; unchanged: already stored as submitted; failed: see reason, kgrag.retry_documents tries it again), attempts, reason, bytes, access, who submitted it and when, not_before (when a worker may next try it), when the last attempt started and when it was settled. A ticket whose worker was killed shows working until a worker claims again: then it is queued, and taken.';

CREATE OR REPLACE FUNCTION kgrag_private.claim_tickets(most integer)
RETURNS TABLE (ticket bigint, doc_id text, document jsonb, attempts integer)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    lock_class constant integer := pg_catalog.hashtext('kgrag|ingest claim');
    key integer;
    chosen bigint[];
BEGIN
    PERFORM kgrag_private.check_writing(t);
    IF most IS NULL OR most NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'claim 1 to 10,000 tickets a call, got %', COALESCE(most::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    -- This session's claims are marked with a key of its own, held as a session advisory lock
    -- until it ends: a claim whose key nobody holds is a gone worker's (killed, disconnected).
    key := pg_catalog.current_setting('kgrag.claim_key', true)::integer;
    IF key IS NULL THEN
        key := (pg_catalog.random() * 2147483646)::integer + 1;
        PERFORM pg_catalog.set_config('kgrag.claim_key', key::text, false);
        PERFORM pg_catalog.pg_advisory_lock(lock_class, key);
    END IF;
    UPDATE kgrag.ingest_ticket AS i SET state = 'queued', claimed_key = NULL
     WHERE i.tenant_id = t AND i.state = 'working' AND i.claimed_key IS DISTINCT FROM key
       AND pg_catalog.pg_try_advisory_xact_lock(lock_class, COALESCE(i.claimed_key, 0));
    -- the oldest waiting tickets no other worker holds, each after every earlier ticket of its
    -- document (two versions of a document are applied in the order they came); chosen once, then
    -- claimed (a join would choose again for every row it updates)
    chosen := ARRAY(SELECT w.ticket FROM kgrag.ingest_ticket AS w
                     WHERE w.tenant_id = t AND w.state = 'queued' AND w.not_before <= now()
                       AND NOT EXISTS (SELECT 1 FROM kgrag.ingest_ticket AS e
                                        WHERE e.tenant_id = t AND e.doc_id = w.doc_id AND e.ticket < w.ticket
                                          AND e.state IN ('queued', 'working'))
                     ORDER BY w.ticket LIMIT most FOR UPDATE SKIP LOCKED);
    RETURN QUERY
    UPDATE kgrag.ingest_ticket AS i
       SET state = 'working', attempts = i.attempts + 1, started_at = now(), reason = NULL, claimed_key = key
     WHERE i.tenant_id = t AND i.ticket = ANY (chosen)
    RETURNING i.ticket, i.doc_id, i.document, i.attempts;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.claim_tickets(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.claim_tickets(integer) TO kgrag_writer;
COMMENT ON FUNCTION kgrag_private.claim_tickets(integer) IS
'Private. Claims for this session up to most (1 to 10,000) of the current tenant''s queued tickets that it sees, oldest first, skipping those another worker holds (FOR UPDATE SKIP LOCKED) and those of a document with an earlier ticket waiting, and returns (ticket, doc_id, document, attempts): each now working, its attempts counted. First gives back to the queue the claims of worker sessions that are gone (a killed worker loses nothing): a session marks its claims with a key of its own (setting kgrag.claim_key) that it holds as a session advisory lock until it ends. SECURITY DEFINER, owned by the schema owner, on the allow-list: the queue is written through its functions only; for kgrag_writer (pgkgrag worker).';

CREATE OR REPLACE FUNCTION kgrag_private.settle_tickets(settled jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    max_attempts integer := (kgrag.setting('ingest_max_attempts') #>> '{}')::integer;
    counts jsonb;
BEGIN
    PERFORM kgrag_private.check_writing(t);
    IF jsonb_typeof(settled) IS DISTINCT FROM 'array' OR jsonb_array_length(settled) > 10000 THEN
        RAISE EXCEPTION 'settle a JSON array of at most 10,000 tickets a call' USING ERRCODE = '22023';
    END IF;
    -- only this session's claims: a ticket another worker took back meanwhile is its own
    WITH given AS (
        SELECT DISTINCT ON (s.ticket) s.ticket, s.state, left(s.reason, 2000) AS reason,
               least(greatest(COALESCE(s.delay, 0), 0), 3600) AS delay
          FROM jsonb_to_recordset(settled) AS s(ticket bigint, state text, reason text, delay double precision)
         WHERE s.state IN ('stored', 'unchanged', 'failed', 'retry', 'wait')
         ORDER BY s.ticket
    ), mine AS (
        SELECT i.ticket, g.state AS asked, g.reason, least(g.delay * 2 ^ i.waits, 3600) AS delay, i.waits, i.attempts,
               i.doc_id, i.access
          FROM kgrag.ingest_ticket AS i JOIN given AS g ON g.ticket = i.ticket
         WHERE i.tenant_id = t AND i.state = 'working'
           AND i.claimed_key = pg_catalog.current_setting('kgrag.claim_key', true)::integer
    ), decided AS (
        SELECT m.*, CASE WHEN m.asked = 'retry' AND m.attempts >= max_attempts THEN 'failed'
                         WHEN m.asked IN ('retry', 'wait') THEN 'queued' ELSE m.asked END AS state
          FROM mine AS m
    ), updated AS (
        UPDATE kgrag.ingest_ticket AS i
           SET state = d.state,
               reason = CASE WHEN d.asked = 'retry' AND d.state = 'failed'
                                  THEN format('failed %s times, the last: %s', d.attempts, d.reason)
                             WHEN d.asked = 'wait'
                                  THEN format('waiting %s s (the endpoint failed %s times in a row): %s',
                                              round(d.delay::numeric, 1), d.waits + 1, d.reason)
                             ELSE d.reason END,
               waits = CASE WHEN d.asked = 'wait' THEN i.waits + 1 ELSE 0 END,
               -- a wait is the endpoint's failure, not the document's: no attempt counted
               attempts = CASE WHEN d.asked = 'wait' THEN greatest(i.attempts - 1, 0) ELSE i.attempts END,
               -- a document stored keeps no payload; a failed one keeps it for kgrag.retry_documents
               document = CASE WHEN d.state IN ('stored', 'unchanged') THEN NULL ELSE i.document END,
               not_before = CASE WHEN d.state = 'queued'
                                 THEN now() + make_interval(secs => CASE WHEN d.asked = 'wait' THEN d.delay
                                                                         ELSE least(2 ^ d.attempts, 600) END)
                                 ELSE i.not_before END,
               finished_at = CASE WHEN d.state = 'queued' THEN NULL ELSE now() END,
               claimed_key = NULL
          FROM decided AS d
         WHERE i.tenant_id = t AND i.ticket = d.ticket
        RETURNING i.ticket, i.state, i.doc_id, i.reason, i.access
    ), failed AS (  -- kept with the other failures of the tenant's documents
        INSERT INTO kgrag.ingest_failure AS f (tenant_id, doc_id, content_hash, reason, access)
        SELECT DISTINCT ON (u.doc_id) t, u.doc_id, 'ticket:' || u.ticket, u.reason, u.access
          FROM updated AS u WHERE u.state = 'failed' ORDER BY u.doc_id, u.ticket DESC
        ON CONFLICT (tenant_id, doc_id) DO UPDATE
           SET content_hash = excluded.content_hash, reason = excluded.reason, failed_at = excluded.failed_at,
               access = excluded.access
    )
    SELECT COALESCE(jsonb_object_agg(x.state, x.n), '{}') INTO counts
      FROM (SELECT u.state, count(*) AS n FROM updated AS u GROUP BY u.state) AS x;
    RETURN counts;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.settle_tickets(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.settle_tickets(jsonb) TO kgrag_writer;
COMMENT ON FUNCTION kgrag_private.settle_tickets(jsonb) IS
'Private. Settles tickets this session claimed (kgrag_private.claim_tickets), from a JSON array (at most 10,000) of {ticket, state, reason, delay}: stored and unchanged (their payload dropped), failed (with its reason, kept in kgrag.ingest_failure too), retry (the document failed in a way that may pass: queued again after 2^attempts seconds, at most 600, until the setting ingest_max_attempts is reached, then failed), wait (the endpoint failed, not the document: queued again after delay seconds, doubled for each wait of the ticket in a row, at most 3,600, no attempt counted; the wait and its reason in reason: a circuit breaker every worker of the tenant obeys). A ticket not claimed by this session is left as it is. Returns {state: n}. SECURITY DEFINER, owned by the schema owner, on the allow-list: the queue is written through its functions only; for kgrag_writer (pgkgrag worker).';

CREATE OR REPLACE FUNCTION kgrag.retry_documents(tickets bigint[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    retried integer;
    documents integer;
    size bigint;
BEGIN
    PERFORM kgrag_private.check_writing(t);
    IF tickets IS NULL OR cardinality(tickets) > 10000 THEN
        RAISE EXCEPTION 'name 0 to 10,000 tickets a call' USING ERRCODE = '22023';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('kgrag|' || t || '|queue'), 0);
    SELECT count(*), COALESCE(sum(i.bytes), 0) INTO documents, size FROM kgrag.ingest_ticket AS i
     WHERE i.tenant_id = t AND i.ticket = ANY (tickets) AND i.state = 'failed' AND i.document IS NOT NULL;
    PERFORM kgrag_private.queue_room(t, documents, size);
    UPDATE kgrag.ingest_ticket AS i
       SET state = 'queued', attempts = 0, reason = NULL, not_before = now(), started_at = NULL, finished_at = NULL
     WHERE i.tenant_id = t AND i.ticket = ANY (tickets) AND i.state = 'failed' AND i.document IS NOT NULL;
    GET DIAGNOSTICS retried = ROW_COUNT;
    IF retried > 0 THEN
        PERFORM pg_notify('kgrag_ingest', '');
    END IF;
    RETURN retried;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.retry_documents(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.retry_documents(bigint[]) TO kgrag_writer;
COMMENT ON FUNCTION kgrag.retry_documents(bigint[]) IS
'Queues again the failed tickets named (at most 10,000; those of the current tenant the caller sees, with their payload), their attempts counted from 0, and returns how many; other tickets are ignored. 53400 when they would take the waiting documents past the ceilings (kgrag.submit_document). SECURITY DEFINER, owned by the schema owner, on the allow-list: the queue is written through its functions only; for kgrag_writer and writer keys.';

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
    IF jsonb_typeof(doc -> 'doc_id') IS DISTINCT FROM 'string' OR doc ->> 'doc_id' = ''
       OR length(doc ->> 'doc_id') > 256 OR strpos(doc ->> 'doc_id', '#') > 0 OR doc ->> 'doc_id' ~ '[[:cntrl:]]'
       -- (no blank at either end, Unicode's included: Python would strip it, SQL would not)
       OR doc ->> 'doc_id' ~ '^[[:space:]\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]'
       OR doc ->> 'doc_id' ~ '[[:space:]\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]$' THEN
        RETURN 'doc_id must be a text of 1 to 256 characters, without ''#'', control characters or blank space at either end';
    END IF;
    -- what a JSON reader of the worker may refuse: nesting past 32 levels, a number of more than
    -- 100 digits (checked on the document's text: a quoted string holds neither in a way that
    -- matters, so a text with many brackets is measured by its structure below only if needed)
    IF doc::text ~ '[0-9]{101}' AND EXISTS (
           WITH RECURSIVE walk(v, depth) AS (
               SELECT doc, 1
               UNION ALL
               SELECT c.v, w.depth + 1
                 FROM walk AS w
                CROSS JOIN LATERAL (SELECT e.value FROM jsonb_each(CASE WHEN jsonb_typeof(w.v) = 'object' THEN w.v END) AS e
                                    UNION ALL
                                    SELECT a.value FROM jsonb_array_elements(CASE WHEN jsonb_typeof(w.v) = 'array' THEN w.v END) AS a) AS c(v)
                WHERE w.depth <= 33)
           SELECT 1 FROM walk AS w WHERE jsonb_typeof(w.v) = 'number' AND length(w.v::text) > 100) THEN
        RETURN 'a number of the document has more than 100 digits';
    END IF;
    IF (SELECT max(depth) FROM (
            WITH RECURSIVE walk(v, depth) AS (
                SELECT doc, 1
                UNION ALL
                SELECT c.v, w.depth + 1
                  FROM walk AS w
                 CROSS JOIN LATERAL (SELECT e.value FROM jsonb_each(CASE WHEN jsonb_typeof(w.v) = 'object' THEN w.v END) AS e
                                     UNION ALL
                                     SELECT a.value FROM jsonb_array_elements(CASE WHEN jsonb_typeof(w.v) = 'array' THEN w.v END) AS a) AS c(v)
                 WHERE w.depth <= 33 AND jsonb_typeof(c.v) IN ('object', 'array'))
            SELECT w.depth FROM walk AS w) AS x) > 32 THEN
        RETURN 'the document nests deeper than 32 levels';
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
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    max_documents bigint := (kgrag.setting('queue_max_documents') #>> '{}')::bigint;
    max_bytes numeric := (kgrag.setting('queue_max_mb') #>> '{}')::numeric * 1048576;
    waiting bigint;
    held numeric;
BEGIN
    -- the tenant's row, locked: one writer of its queue at a time from here to the commit (under
    -- REPEATABLE READ a second one fails to serialize), whatever of the queue either sees
    SELECT l.documents, l.bytes INTO waiting, held FROM kgrag.ingest_queue_load AS l WHERE l.tenant_id = tenant FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO kgrag.ingest_queue_load AS l (tenant_id) VALUES (tenant) ON CONFLICT (tenant_id) DO NOTHING;
        SELECT l.documents, l.bytes INTO waiting, held FROM kgrag.ingest_queue_load AS l WHERE l.tenant_id = tenant FOR UPDATE;
    END IF;
    IF documents = 0 AND bytes = 0 THEN
        RETURN;  -- the lock alone (no new version of the row: a long transaction of submissions stays fast)
    END IF;
    IF documents > 0 AND waiting + documents > max_documents THEN
        RAISE EXCEPTION 'the ingestion queue of tenant % holds % documents, and % more would pass its ceiling of % (setting queue_max_documents)',
            quote_literal(tenant), waiting, documents, max_documents
            USING ERRCODE = '53400', HINT = 'Submit again once a worker (pgkgrag worker) has taken some: SELECT state, count(*) FROM kgrag.ingest_queue GROUP BY 1;';
    END IF;
    IF documents > 0 AND held + bytes > max_bytes THEN
        RAISE EXCEPTION 'the ingestion queue of tenant % holds % MB, and % MB more would pass its ceiling of % MB (setting queue_max_mb)',
            quote_literal(tenant), round(held / 1048576, 1), round(bytes / 1048576.0, 1), round(max_bytes / 1048576, 1)
            USING ERRCODE = '53400', HINT = 'Submit again once a worker (pgkgrag worker) has taken some.';
    END IF;
    UPDATE kgrag.ingest_queue_load AS l
       SET documents = greatest(l.documents + queue_room.documents, 0), bytes = greatest(l.bytes + queue_room.bytes, 0)
     WHERE l.tenant_id = tenant;
END
$$;
COMMENT ON FUNCTION kgrag_private.queue_room(text, integer, bigint) IS
'Private. Counts documents more documents of bytes bytes as waiting in the tenant''s ingestion queue (kgrag.ingest_queue_load, its row locked until the commit: one writer of the queue at a time), or, given negative numbers, fewer; raises 53400 (configuration_limit_exceeded) when more would pass the settings queue_max_documents or queue_max_mb (the schema owner''s). For the queue''s functions (SECURITY DEFINER), which alone write the row.';

CREATE OR REPLACE FUNCTION kgrag.submit_document(doc jsonb) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    held text[] := kgrag_private.groups_for(t);  -- the caller's (session_user's, or its key's)
    max_text bigint := ((kgrag.setting('max_document_mb') #>> '{}')::numeric * 1048576)::bigint;
    size bigint;
    fault text;
    groups text[];
    digest text;
    id text;
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
    id := doc ->> 'doc_id';
    groups := NULLIF(ARRAY(SELECT DISTINCT g FROM jsonb_array_elements_text(COALESCE(NULLIF(doc -> 'access', 'null'), '[]')) AS g ORDER BY g), '{}');
    PERFORM kgrag_private.check_audiences(COALESCE(groups, '{}'));
    -- the queue's row first (one writer of the tenant's queue at a time), then what is there
    PERFORM kgrag_private.queue_room(t, 0, 0);
    -- a stored document of that id is replaced only by a writer who sees it, as by pgkgrag ingest
    -- (the worker checks again with the submitter's groups: kgrag_private.claim_tickets)
    IF EXISTS (SELECT 1 FROM kgrag.document AS d
                WHERE d.tenant_id = t AND d.doc_id = id AND NOT kgrag_private.sees(d.access, held)) THEN
        RAISE EXCEPTION 'document %: a document of that id is for groups this transaction does not hold: not its to replace',
            quote_literal(left(id, 100)) USING ERRCODE = '42501';
    END IF;
    digest := md5(doc::text);  -- (jsonb's text is normalized: one document, one digest)
    -- the same document waiting as the last version of its id: that ticket
    SELECT i.ticket INTO ticket FROM kgrag.ingest_ticket AS i
     WHERE i.tenant_id = t AND i.doc_id = id AND i.state = 'queued' AND i.payload_md5 = digest
       AND kgrag_private.sees(i.access, held)
       AND NOT EXISTS (SELECT 1 FROM kgrag.ingest_ticket AS later
                        WHERE later.tenant_id = t AND later.doc_id = id AND later.ticket > i.ticket)
     ORDER BY i.ticket DESC LIMIT 1;
    IF ticket IS NOT NULL THEN
        RETURN ticket;
    END IF;
    PERFORM kgrag_private.queue_room(t, 1, size);
    ticket := nextval('kgrag.ingest_ticket_seq');
    INSERT INTO kgrag.ingest_ticket (tenant_id, ticket, doc_id, document, payload_md5, bytes, access, submitted_groups,
                                     submitted_by)
    VALUES (t, ticket, id, doc, digest, size, groups, held, session_user);
    PERFORM pg_notify('kgrag_ingest', '');  -- (no tenant named: any session may listen)
    RETURN ticket;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.submit_document(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.submit_document(jsonb) TO kgrag_writer;
COMMENT ON FUNCTION kgrag.submit_document(jsonb) IS
'Submits a document to the current tenant''s ingestion queue and returns its ticket; a worker (pgkgrag worker) ingests it as pgkgrag ingest would a JSONL line, and kgrag.ingest_queue shows its state. The document has the fields of a JSONL line (doc_id, text, title, metadata, language, source_uri, entities, relations, sections, access) and is checked here (kgrag_private.submission_fault): 22023 for a bad one, 54000 for one above the size limits (max_document_mb for its text, 8 times that in all), nothing queued. The same document waiting as the last version of its doc_id returns its ticket; one unchanged since it was stored is settled unchanged by the worker. 53400 when the tenant''s waiting documents would pass the ceilings queue_max_documents or queue_max_mb (the schema owner''s settings: retry later; kgrag.ingest_queue_load counts them, one submitter of a tenant at a time). A document for groups (access) is for groups the caller holds, and one replacing a stored document is by a caller who sees it (42501). SECURITY DEFINER, owned by the schema owner, on the allow-list: the queue is written through its functions only; for kgrag_writer and writer keys (a reader''s key: 42501). Notifies channel kgrag_ingest (an empty payload).';

CREATE OR REPLACE VIEW kgrag.ingest_queue WITH (security_invoker = true) AS
SELECT i.ticket, i.doc_id, i.state, i.attempts, i.reason, i.bytes, i.access, i.submitted_by, i.submitted_at,
       i.not_before, i.started_at, i.finished_at
  FROM kgrag.ingest_ticket AS i;
GRANT SELECT ON kgrag.ingest_queue TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.ingest_queue IS
'The current tenant''s ingestion queue (the tickets of kgrag.submit_document that the session sees: a document for an audience by those who hold one of its groups): ticket, doc_id, state (queued; working; stored; unchanged: already stored as submitted; failed: see reason, kgrag.retry_documents tries it again), attempts, reason, bytes, access, who submitted it and when, not_before (when a worker may next try it), when the last attempt started and when it was settled. A ticket whose worker was killed shows working until a worker claims again: then it is queued, and taken.';

CREATE OR REPLACE FUNCTION kgrag_private.claim_tickets(most integer)
RETURNS TABLE (ticket bigint, doc_id text, document text, attempts integer)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    held text[] := kgrag_private.groups_for(t);  -- the caller's: the tickets of audiences it sees
    max_attempts integer := (kgrag.setting('ingest_max_attempts') #>> '{}')::integer;
    claim_minutes integer := (kgrag.setting('ingest_claim_minutes') #>> '{}')::integer;
    lock_class constant integer := pg_catalog.hashtext('kgrag|ingest claim');
    key integer := pg_catalog.pg_backend_pid();
    at timestamptz := now();
    stale timestamptz;
    gone_tickets bigint[];
    gone_failed boolean[];
    other integer;
    gone_keys integer[] := '{}';
    chosen bigint[];
    refused bigint[];
    left_docs integer;
    left_bytes bigint;
BEGIN
    PERFORM kgrag_private.check_writing(t);
    IF most IS NULL OR most NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'claim 1 to 10,000 tickets a call, got %', COALESCE(most::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    -- A claim is marked with this session's process id, which it holds as a session advisory lock
    -- until it ends: a claim whose id nobody holds is a gone worker's (killed, disconnected).
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks AS l
                    WHERE l.locktype = 'advisory' AND l.pid = key AND l.granted
                      AND l.classid = lock_class::oid AND l.objid = key::oid AND l.objsubid = 2) THEN
        PERFORM pg_catalog.pg_advisory_lock(lock_class, key);
    END IF;
    PERFORM kgrag_private.queue_room(t, 0, 0);  -- (the queue's row: its counts move below)
    -- the claims of gone sessions go back to the queue, or fail once tried as often as allowed
    -- (a document that kills its worker every time stops here). Whose session is gone is asked
    -- here, of this server's locks (on Citus, the coordinator's), never in the statement that a
    -- distributed table's shard runs.
    FOR other IN SELECT DISTINCT i.claimed_key FROM kgrag.ingest_ticket AS i
                  WHERE i.tenant_id = t AND i.state = 'working' AND i.claimed_key IS DISTINCT FROM key
    LOOP
        IF other IS NULL OR pg_catalog.pg_try_advisory_xact_lock(lock_class, other) THEN
            gone_keys := gone_keys || COALESCE(other, 0);
        END IF;
    END LOOP;
    -- (Citus runs a statement that writes a distributed table on its shard: it takes no CASE over
    -- a function that is not immutable, so what each row becomes is computed first, here)
    stale := now() - make_interval(mins => claim_minutes);
    SELECT array_agg(i.ticket), array_agg(i.attempts >= max_attempts),
           COALESCE(sum(i.bytes) FILTER (WHERE i.attempts >= max_attempts), 0),
           count(*) FILTER (WHERE i.attempts >= max_attempts)
      INTO gone_tickets, gone_failed, left_bytes, left_docs
      FROM kgrag.ingest_ticket AS i
     WHERE i.tenant_id = t AND i.state = 'working' AND kgrag_private.sees(i.access, held)
       AND i.claimed_key IS DISTINCT FROM key
       -- (or held past ingest_claim_minutes: a hung worker's; what it writes after is unchanged)
       AND (COALESCE(i.claimed_key, 0) = ANY (gone_keys) OR i.started_at < stale);
    IF gone_tickets IS NOT NULL THEN
        UPDATE kgrag.ingest_ticket AS i
           SET state = CASE WHEN g.failed THEN 'failed' ELSE 'queued' END,
               reason = CASE WHEN g.failed THEN 'its worker stopped while ingesting it, ' || i.attempts::text || ' times' END,
               finished_at = CASE WHEN g.failed THEN at END,
               claimed_key = NULL
          FROM unnest(gone_tickets, gone_failed) AS g(ticket, failed)
         WHERE i.tenant_id = t AND i.ticket = g.ticket;
    ELSE
        left_docs := 0;
        left_bytes := 0;
    END IF;
    -- the oldest waiting tickets no other worker holds, each after every earlier ticket of its
    -- document (two versions of a document are applied in the order they came); chosen once, then
    -- claimed (a join would choose again for every row it updates)
    -- (the first waiting ticket of each document, found by one probe of ingest_ticket_doc_idx per
    -- candidate: a correlated subquery, never a join over every waiting ticket, whatever the
    -- statistics say)
    chosen := ARRAY(SELECT w.ticket FROM kgrag.ingest_ticket AS w
                     WHERE w.tenant_id = t AND w.state = 'queued' AND w.not_before <= at
                       AND kgrag_private.sees(w.access, held)
                       AND w.ticket = (SELECT e.ticket FROM kgrag.ingest_ticket AS e
                                        WHERE e.tenant_id = t AND e.doc_id = w.doc_id AND e.state IN ('queued', 'working')
                                        ORDER BY e.ticket LIMIT 1)
                     ORDER BY w.ticket LIMIT most FOR UPDATE SKIP LOCKED);
    -- and no more than 64 MB of documents a claim (one at least): a page is held in a worker's memory
    chosen := ARRAY(SELECT x.ticket
                      FROM (SELECT i.ticket, i.bytes, sum(i.bytes) OVER (ORDER BY i.ticket) AS upto
                              FROM kgrag.ingest_ticket AS i WHERE i.tenant_id = t AND i.ticket = ANY (chosen)) AS x
                     WHERE x.upto - x.bytes < 67108864 ORDER BY x.ticket);
    -- a ticket replacing a stored document its submitter did not see fails here, whoever the worker
    refused := ARRAY(SELECT i.ticket FROM kgrag.ingest_ticket AS i
                      WHERE i.tenant_id = t AND i.ticket = ANY (chosen)
                        AND EXISTS (SELECT 1 FROM kgrag.document AS d
                                     WHERE d.tenant_id = t AND d.doc_id = i.doc_id
                                       AND NOT kgrag_private.sees(d.access, COALESCE(i.submitted_groups, '{}'))));
    WITH failed AS (
        UPDATE kgrag.ingest_ticket AS i
           SET state = 'failed', finished_at = at, attempts = i.attempts + 1,
               reason = 'a document of that id is for groups its submitter did not hold: not theirs to replace'
         WHERE i.tenant_id = t AND i.ticket = ANY (refused)
        RETURNING i.bytes
    )
    SELECT left_docs + count(*), left_bytes + COALESCE(sum(f.bytes), 0) INTO left_docs, left_bytes FROM failed AS f;
    IF left_docs > 0 THEN
        PERFORM kgrag_private.queue_room(t, -left_docs, -left_bytes);
    END IF;
    RETURN QUERY
    UPDATE kgrag.ingest_ticket AS i
       SET state = 'working', attempts = i.attempts + 1, started_at = at, reason = NULL, claimed_key = key
     WHERE i.tenant_id = t AND i.ticket = ANY (chosen) AND i.ticket <> ALL (refused)
    RETURNING i.ticket, i.doc_id, i.document::text, i.attempts;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.claim_tickets(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.claim_tickets(integer) TO kgrag_writer;
COMMENT ON FUNCTION kgrag_private.claim_tickets(integer) IS
'Private. Claims for this session up to most (1 to 10,000) of the current tenant''s queued tickets of the audiences it sees, oldest first (64 MB of documents at most, one at least), skipping those another worker holds (FOR UPDATE SKIP LOCKED) and those of a document with an earlier ticket waiting, and returns (ticket, doc_id, document as JSON text, attempts): each now working, its attempts counted; a ticket whose doc_id names a stored document its submitter did not see fails instead. First gives back to the queue the claims of worker sessions that are gone (a killed worker loses nothing) or held longer than the setting ingest_claim_minutes (a hung one), or fails those tried ingest_max_attempts times: a session marks its claims with its process id and holds it as a session advisory lock until it ends. SECURITY DEFINER, owned by the schema owner, on the allow-list: the queue is written through its functions only; for kgrag_writer (pgkgrag worker).';

CREATE OR REPLACE FUNCTION kgrag_private.settle_tickets(settled jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    held text[] := kgrag_private.groups_for(t);
    max_attempts integer := (kgrag.setting('ingest_max_attempts') #>> '{}')::integer;
    most_waits constant integer := 10;  -- endpoint failures in a row a ticket waits through; then they count
    me integer := pg_catalog.pg_backend_pid();  -- (this session's, read here: on Citus, the coordinator's)
    at timestamptz := now();
    tickets bigint[];
    states text[];
    reasons text[];
    new_waits integer[];
    new_attempts integer[];
    nexts timestamptz[];
    dropped boolean[];
    done boolean[];
    counts jsonb;
    left_docs integer;
    left_bytes bigint;
BEGIN
    PERFORM kgrag_private.check_writing(t);
    IF jsonb_typeof(settled) IS DISTINCT FROM 'array' OR jsonb_array_length(settled) > 10000 THEN
        RAISE EXCEPTION 'settle a JSON array of at most 10,000 tickets a call' USING ERRCODE = '22023';
    END IF;
    PERFORM kgrag_private.queue_room(t, 0, 0);  -- (the queue's row: its counts move below)
    -- only this session's claims (its process id: kgrag_private.claim_tickets); what each becomes
    -- computed first (Citus runs a write of a distributed table on its shard, with no CASE over a
    -- function that is not immutable)
    SELECT array_agg(d.ticket), array_agg(d.state), array_agg(d.reason), array_agg(d.waits), array_agg(d.attempts),
           array_agg(d.next_at), array_agg(d.state IN ('stored', 'unchanged')), array_agg(d.state <> 'queued')
      INTO tickets, states, reasons, new_waits, new_attempts, nexts, dropped, done
      FROM (SELECT m.ticket, m.state,
                   CASE WHEN m.asked = 'retry' AND m.state = 'failed'
                             THEN format('failed %s times, the last: %s', m.attempts, m.reason)
                        WHEN m.asked = 'wait'
                             THEN format('waiting %s s (the endpoint failed %s times in a row): %s',
                                         round(m.delay::numeric, 1), m.waits + 1, m.reason)
                        ELSE m.reason END AS reason,
                   CASE WHEN m.asked = 'wait' THEN m.waits + 1 ELSE 0 END AS waits,
                   -- a wait is the endpoint's failure, not the document's: no attempt counted
                   CASE WHEN m.asked = 'wait' THEN greatest(m.attempts - 1, 0) ELSE m.attempts END AS attempts,
                   CASE WHEN m.state = 'queued'
                        THEN at + make_interval(secs => CASE WHEN m.asked = 'wait' THEN m.delay
                                                             ELSE least(2 ^ least(m.attempts, 12), 600) END) END AS next_at
              FROM (SELECT x.*, CASE WHEN x.asked = 'retry' AND x.attempts >= max_attempts THEN 'failed'
                                     WHEN x.asked IN ('retry', 'wait') THEN 'queued' ELSE x.asked END AS state
                      FROM (SELECT i.ticket,
                                   CASE WHEN g.state = 'wait' AND i.waits + 1 >= most_waits THEN 'retry' ELSE g.state END AS asked,
                                   CASE WHEN g.state = 'wait' AND i.waits + 1 >= most_waits
                                        THEN format('the endpoint failed %s times in a row: %s', i.waits + 1, g.reason)
                                        ELSE g.reason END AS reason,
                                   least(g.delay * 2 ^ least(i.waits, 12), 3600) AS delay, i.waits, i.attempts
                              FROM kgrag.ingest_ticket AS i
                              JOIN (SELECT DISTINCT ON (s.ticket) s.ticket, s.state, left(s.reason, 2000) AS reason,
                                           least(greatest(COALESCE(s.delay, 0), 0), 3600) AS delay
                                      FROM jsonb_to_recordset(settled) AS s(ticket bigint, state text, reason text,
                                                                            delay double precision)
                                     WHERE s.state IN ('stored', 'unchanged', 'failed', 'retry', 'wait')
                                     ORDER BY s.ticket) AS g ON g.ticket = i.ticket
                             WHERE i.tenant_id = t AND i.state = 'working' AND i.claimed_key = me
                               AND kgrag_private.sees(i.access, held)) AS x) AS m) AS d;
    IF tickets IS NULL THEN
        RETURN '{}';
    END IF;
    UPDATE kgrag.ingest_ticket AS i
       SET state = u.state, reason = u.reason, waits = u.waits, attempts = u.attempts,
           -- a document stored keeps no payload; a failed one keeps it for kgrag.retry_documents
           document = CASE WHEN u.dropped THEN NULL ELSE i.document END,
           not_before = COALESCE(u.next_at, i.not_before),
           finished_at = CASE WHEN u.done THEN at END,
           claimed_key = NULL
      FROM unnest(tickets, states, reasons, new_waits, new_attempts, nexts, dropped, done)
           AS u(ticket, state, reason, waits, attempts, next_at, dropped, done)
     WHERE i.tenant_id = t AND i.ticket = u.ticket;
    -- the failures kept with the other failures of the tenant's documents (one left as it is when
    -- it is an audience's the caller does not see)
    INSERT INTO kgrag.ingest_failure AS f (tenant_id, doc_id, content_hash, reason, access)
    SELECT DISTINCT ON (i.doc_id) t, i.doc_id, 'ticket:' || i.ticket, i.reason, i.access
      FROM kgrag.ingest_ticket AS i
     WHERE i.tenant_id = t AND i.ticket = ANY (tickets) AND i.state = 'failed'
       AND NOT EXISTS (SELECT 1 FROM kgrag.ingest_failure AS x
                        WHERE x.tenant_id = t AND x.doc_id = i.doc_id AND NOT kgrag_private.sees(x.access, held))
     ORDER BY i.doc_id, i.ticket DESC
    ON CONFLICT (tenant_id, doc_id) DO UPDATE
       SET content_hash = excluded.content_hash, reason = excluded.reason, failed_at = excluded.failed_at,
           access = excluded.access;
    SELECT COALESCE(jsonb_object_agg(x.state, x.n), '{}') INTO counts
      FROM (SELECT u.state, count(*) AS n FROM unnest(states) AS u(state) GROUP BY u.state) AS x;
    SELECT count(*), COALESCE(sum(i.bytes), 0) INTO left_docs, left_bytes
      FROM kgrag.ingest_ticket AS i
     WHERE i.tenant_id = t AND i.ticket = ANY (tickets) AND i.state <> 'queued';
    IF left_docs > 0 THEN  -- no longer waiting
        PERFORM kgrag_private.queue_room(t, -left_docs, -left_bytes);
    END IF;
    RETURN counts;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.settle_tickets(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.settle_tickets(jsonb) TO kgrag_writer;
COMMENT ON FUNCTION kgrag_private.settle_tickets(jsonb) IS
'Private. Settles tickets this session claimed (kgrag_private.claim_tickets: by its process id), from a JSON array (at most 10,000) of {ticket, state, reason, delay}: stored and unchanged (their payload dropped), failed (with its reason, kept in kgrag.ingest_failure too), retry (the document failed in a way that may pass: queued again after 2^attempts seconds, at most 600, until the setting ingest_max_attempts is reached, then failed), wait (the endpoint failed, not the document: queued again after delay seconds, doubled for each wait of the ticket in a row, at most 3,600, no attempt counted; the wait and its reason in reason: a circuit breaker every worker of the tenant obeys; after 10 waits in a row a wait counts as an attempt, so a document that always fails the endpoint ends failed). A ticket not claimed by this session is left as it is. Returns {state: n}. SECURITY DEFINER, owned by the schema owner, on the allow-list: the queue is written through its functions only; for kgrag_writer (pgkgrag worker).';

CREATE OR REPLACE FUNCTION kgrag.retry_documents(tickets bigint[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    held text[] := kgrag_private.groups_for(t);
    at timestamptz := now();
    again bigint[];
    documents integer;
    size bigint;
BEGIN
    PERFORM kgrag_private.check_writing(t);
    IF tickets IS NULL OR cardinality(tickets) > 10000 THEN
        RAISE EXCEPTION 'name 0 to 10,000 tickets a call' USING ERRCODE = '22023';
    END IF;
    PERFORM kgrag_private.queue_room(t, 0, 0);  -- (the queue's row first)
    -- the failed ones the caller sees with their payload, each the last version of its document
    -- (an older version tried again would undo a newer one)
    again := ARRAY(SELECT i.ticket FROM kgrag.ingest_ticket AS i
                    WHERE i.tenant_id = t AND i.ticket = ANY (tickets) AND i.state = 'failed' AND i.document IS NOT NULL
                      AND kgrag_private.sees(i.access, held)
                      AND NOT EXISTS (SELECT 1 FROM kgrag.ingest_ticket AS later
                                       WHERE later.tenant_id = t AND later.doc_id = i.doc_id AND later.ticket > i.ticket)
                    ORDER BY i.ticket);
    SELECT count(*), COALESCE(sum(i.bytes), 0) INTO documents, size
      FROM kgrag.ingest_ticket AS i WHERE i.tenant_id = t AND i.ticket = ANY (again);
    IF documents = 0 THEN
        RETURN 0;
    END IF;
    PERFORM kgrag_private.queue_room(t, documents, size);
    UPDATE kgrag.ingest_ticket AS i
       SET state = 'queued', attempts = 0, waits = 0, reason = NULL, not_before = at, started_at = NULL,
           finished_at = NULL
     WHERE i.tenant_id = t AND i.ticket = ANY (again);
    PERFORM pg_notify('kgrag_ingest', '');
    RETURN documents;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.retry_documents(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.retry_documents(bigint[]) TO kgrag_writer;
COMMENT ON FUNCTION kgrag.retry_documents(bigint[]) IS
'Queues again the failed tickets named (at most 10,000; those of the current tenant the caller sees, with their payload, each the last ticket of its doc_id: an older version would undo a newer one), their attempts counted from 0, and returns how many; other tickets are ignored. 53400 when they would take the waiting documents past the ceilings (kgrag.submit_document). SECURITY DEFINER, owned by the schema owner, on the allow-list: the queue is written through its functions only; for kgrag_writer and writer keys.';

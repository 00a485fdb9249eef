-- The logs' care: kept as long as each tenant's retention says (kgrag.purge, a SECURITY DEFINER
-- function owned by kgrag_logger, which alone besides the schema owner may delete log rows), and
-- forgetting what a deleted document named (kgrag_private.forget_in_logs, which only
-- kgrag.delete_documents calls, as the schema owner): no tenant's writer can erase or rewrite its log.

CREATE OR REPLACE FUNCTION kgrag_private.redact(body text, names text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    name text;
BEGIN
    -- longest first: a name inside a longer one goes with it
    FOR name IN SELECT x FROM unnest(names) AS x ORDER BY length(x) DESC, x LOOP
        body := regexp_replace(body, '(^|\W)' || regexp_replace(name, '([][(){}.*+?^$|\\-])', '\\\1', 'g') || '(?=\W|$)',
                               '\1[forgotten]', 'gi');
    END LOOP;
    RETURN body;
END
$$;
COMMENT ON FUNCTION kgrag_private.redact(text, text[]) IS
'Private. Returns body with every occurrence of each name as a whole word or phrase (case-insensitive, not inside a longer word; longest names first) replaced by [forgotten]; NULL for NULL.';

CREATE OR REPLACE FUNCTION kgrag_private.forgettable(doc_ids text[]) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes each query to one shard
BEGIN
    -- what deleting the documents may make the query log forget, read before they go: their
    -- chunks, the entities they mention or name, those entities' names and the aliases the
    -- documents gave (bounded as kgrag_private.forget_in_logs takes them)
    RETURN (
        WITH chunks AS MATERIALIZED (
            SELECT c.chunk_id FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.doc_id = ANY (doc_ids)
        ), entities AS MATERIALIZED (
            SELECT m.entity_id FROM kgrag.mention AS m
             WHERE m.tenant_id = t AND m.chunk_id IN (SELECT x.chunk_id FROM chunks AS x)
            UNION
            SELECT s.entity_id FROM kgrag.alias_source AS s WHERE s.tenant_id = t AND s.doc_id = ANY (doc_ids)
        ), names AS MATERIALIZED (
            SELECT e.name FROM kgrag.entity AS e
             WHERE e.tenant_id = t AND e.entity_id IN (SELECT x.entity_id FROM entities AS x)
            UNION
            SELECT s.alias FROM kgrag.alias_source AS s WHERE s.tenant_id = t AND s.doc_id = ANY (doc_ids)
        )
        SELECT jsonb_build_object(
                   'chunks', (SELECT COALESCE(jsonb_agg(x.chunk_id), '[]') FROM (SELECT * FROM chunks ORDER BY 1 LIMIT 10000) AS x),
                   'entities', (SELECT COALESCE(jsonb_agg(x.entity_id), '[]')
                                  FROM (SELECT * FROM entities ORDER BY 1 LIMIT 10000) AS x),
                   'names', (SELECT COALESCE(jsonb_agg(x.name), '[]')
                               FROM (SELECT * FROM names AS n WHERE length(n.name) BETWEEN 2 AND 300 ORDER BY 1 LIMIT 1000) AS x)));
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.forgettable(text[]) FROM PUBLIC;
COMMENT ON FUNCTION kgrag_private.forgettable(text[]) IS
'Private. Returns what deleting documents of the current tenant may make its query log forget, read before they go: {"chunks", "entities", "names"}: their chunks, the entities they mention or name (at most 10,000 each), those entities'' names and the aliases the documents gave (at most 1,000, of 2 to 300 characters). For kgrag.delete_documents and kgrag.set_access (SECURITY DEFINER) alone: no tenant role may call it.';

CREATE OR REPLACE FUNCTION kgrag_private.forget_in_logs(noted jsonb) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes each query to one shard
    gone_entities text[];
    gone_chunks text[];
    gone_names text[];
    n integer;
BEGIN
    -- what was noted that the graph no longer holds (every name is an alias of its entity)
    gone_entities := ARRAY(SELECT x FROM jsonb_array_elements_text(noted -> 'entities') AS x
                            WHERE NOT EXISTS (SELECT 1 FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.entity_id = x));
    gone_chunks := ARRAY(SELECT x FROM jsonb_array_elements_text(noted -> 'chunks') AS x
                          -- (a chunk of a document gone into an audience is no longer everyone's either)
                          WHERE NOT EXISTS (SELECT 1 FROM kgrag.chunk AS c
                                             WHERE c.tenant_id = t AND c.chunk_id = x AND c.access IS NULL));
    gone_names := ARRAY(SELECT x FROM jsonb_array_elements_text(noted -> 'names') AS x
                         WHERE NOT EXISTS (SELECT 1 FROM kgrag.alias AS a  -- (a name of the shared graph)
                                            WHERE a.tenant_id = t AND a.alias_fold = kgrag.canonical_name(x)
                                              AND strpos(a.entity_id, '~') = 0));
    UPDATE kgrag.query_log AS q
       SET seeds = ARRAY(SELECT s FROM unnest(q.seeds) WITH ORDINALITY AS u(s, o) WHERE s <> ALL (gone_entities) ORDER BY u.o),
           chunk_ids = ARRAY(SELECT c FROM unnest(q.chunk_ids) WITH ORDINALITY AS u(c, o) WHERE c <> ALL (gone_chunks) ORDER BY u.o),
           reason = kgrag_private.redact(q.reason, gone_names),
           question = kgrag_private.redact(q.question, gone_names)
     -- only the searches that came to the documents (their seeds or chunks): a name the documents
     -- gave is not the document's to take out of a search that never reached it
     WHERE q.tenant_id = t AND (q.seeds && gone_entities OR q.chunk_ids && gone_chunks);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.forget_in_logs(jsonb) FROM PUBLIC;
COMMENT ON FUNCTION kgrag_private.forget_in_logs(jsonb) IS
'Private. Redacts from the current tenant''s kgrag.query_log what deleted documents, or documents gone into an audience, named (noted: what kgrag_private.forgettable read before they went), as far as the shared graph no longer holds it (a chunk for an audience, and a name of an audience''s graph, count as gone), in the searches that reached them (whose seeds or chunks were theirs): the entity ids among the seeds, the chunk ids among the chunks returned, and the names (entity names and aliases) in the reasons and question texts, replaced by [forgotten]. Returns the rows changed. For kgrag.delete_documents and kgrag.set_access (SECURITY DEFINER, owned by the schema owner) alone: no tenant role may call it, so no tenant role aims the redaction, which changes log rows nobody else may change.';

CREATE OR REPLACE FUNCTION kgrag.purge() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    acting text := kgrag.current_tenant();  -- '*' (the schema owner's alone): every tenant
    t text;
    days jsonb;
    n integer;
    done jsonb := '{}';
    one jsonb;
    kept record;
BEGIN
    IF acting <> '*' THEN  -- (a reader's API key deletes nothing: kgrag_private.check_writing)
        PERFORM kgrag_private.check_writing(acting);
    END IF;
    FOR t IN SELECT acting WHERE acting <> '*'
             UNION ALL
             (SELECT x.tenant_id  -- every tenant holding such rows
                FROM (SELECT q.tenant_id FROM kgrag.query_log AS q UNION SELECT a.tenant_id FROM kgrag.answer_log AS a
                      UNION SELECT f.tenant_id FROM kgrag.ingest_failure AS f
                      UNION SELECT o.tenant_id FROM kgrag.log_overflow AS o
                      UNION SELECT c.tenant_id FROM kgrag.llm_call AS c
                      UNION SELECT i.tenant_id FROM kgrag.ingest_ticket AS i) AS x
               WHERE acting = '*' ORDER BY 1) LOOP
        -- the tenant's retention, within the owner's limits (kgrag_private.within_limits)
        SELECT jsonb_object_agg(k.key, kgrag_private.within_limits(k.key,
                   (SELECT s.value FROM kgrag.settings AS s WHERE s.tenant_id = t AND s.key = k.key)))
          INTO days
          FROM unnest(ARRAY['query_log_days', 'answer_log_days', 'ingest_failure_days', 'ingest_ticket_days']) AS k(key);
        one := '{}';
        -- (a ticket of the queue once settled: one queued or at work again keeps its row)
        FOR kept IN SELECT * FROM (VALUES ('query_log', 'query_log_days', 'searched_at', ''),
                                          ('log_overflow', 'query_log_days', 'minute', ''),
                                          ('answer_log', 'answer_log_days', 'answered_at', ''),
                                          ('llm_call', 'answer_log_days', 'called_at', ''),
                                          ('ingest_failure', 'ingest_failure_days', 'failed_at', ''),
                                          ('ingest_ticket', 'ingest_ticket_days', 'finished_at',
                                           ' AND (x.state IN (''stored'', ''unchanged'') OR x.state = ''failed'''
                                           ' AND x.finished_at < now() - make_interval(days => $3))'))
                                 AS v(name, key, stamp, settled) LOOP
            -- ($3: a failed ticket keeps its payload, for kgrag.retry_documents, as long as its failure row)
            EXECUTE format('DELETE FROM kgrag.%I AS x WHERE x.tenant_id = $1 AND x.%I < now() - make_interval(days => $2)',
                           kept.name, kept.stamp) || kept.settled
              USING t, floor((days ->> kept.key)::numeric)::integer, floor((days ->> 'ingest_failure_days')::numeric)::integer;
            GET DIAGNOSTICS n = ROW_COUNT;
            one := one || jsonb_build_object(kept.name, n);
        END LOOP;
        done := done || jsonb_build_object(t, one);
    END LOOP;
    RETURN done;
END
$$;
GRANT CREATE ON SCHEMA kgrag TO kgrag_logger;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag.purge() OWNER TO kgrag_logger;
REVOKE CREATE ON SCHEMA kgrag FROM kgrag_logger;
REVOKE EXECUTE ON FUNCTION kgrag.purge() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.purge() TO kgrag_writer;
COMMENT ON FUNCTION kgrag.purge() IS
'Deletes the rows kept past their tenant''s retention: kgrag.query_log and kgrag.log_overflow older than the setting query_log_days, kgrag.answer_log and kgrag.llm_call older than answer_log_days, kgrag.ingest_failure older than ingest_failure_days, the tickets of the ingestion queue (kgrag.ingest_queue) stored or unchanged longer ago than ingest_ticket_days, failed ones (their payload kept for kgrag.retry_documents) after the longer of ingest_ticket_days and ingest_failure_days (each within the limits of setting_limits: 7 to 365 days by default, 3,650 for failures and tickets), and nothing else. For the current tenant; acting as tenant ''*'' (the schema owner), for every tenant (a scheduler such as pg_cron runs, as the owner: DO $$ BEGIN PERFORM kgrag.use_tenant(''*''); PERFORM kgrag.purge(); END $$). Returns {tenant: {table: rows deleted}}. SECURITY DEFINER, owned by kgrag_logger (which alone, besides the owner, may delete log rows), on the allow-list; for the owner and kgrag_writer (pgkgrag purge).';

CREATE OR REPLACE FUNCTION kgrag_private.log_llm_calls_at(tenant text, calls jsonb) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag_private.check_delegated_tenant(tenant);
    n integer;
BEGIN
    IF jsonb_typeof(calls) IS DISTINCT FROM 'array' OR jsonb_array_length(calls) > 1000 THEN
        RAISE EXCEPTION 'calls must be a JSON array of at most 1,000 calls (the driver sends pages)' USING ERRCODE = '22023';
    END IF;
    INSERT INTO kgrag.llm_call (tenant_id, purpose, route, model, prompt_tokens, completion_tokens, cached, ms)
    SELECT t, c ->> 'purpose', left(c ->> 'route', 32), left(COALESCE(c ->> 'model', ''), 200),
           greatest(COALESCE((c ->> 'prompt_tokens')::integer, 0), 0),
           greatest(COALESCE((c ->> 'completion_tokens')::integer, 0), 0),
           COALESCE((c ->> 'cached')::boolean, false), greatest(COALESCE((c ->> 'ms')::float8, 0), 0)
      FROM jsonb_array_elements(calls) AS c;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
GRANT CREATE ON SCHEMA kgrag_private TO kgrag_logger;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag_private.log_llm_calls_at(text, jsonb) OWNER TO kgrag_logger;
REVOKE CREATE ON SCHEMA kgrag_private FROM kgrag_logger;
REVOKE EXECUTE ON FUNCTION kgrag_private.log_llm_calls_at(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.log_llm_calls_at(text, jsonb) TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag_private.log_llm_calls_at(text, jsonb) IS
'Private. What kgrag_private.log_llm_calls does, for the tenant the transaction acts for (tenant: checked against it). SECURITY DEFINER, owned by kgrag_logger (which alone writes the logs), on the allow-list. On a Citus cluster a delegated function (kgrag_private.delegate_calls): it runs, as kgrag_logger, on the worker holding the tenant''s shards. Returns the rows written.';

CREATE OR REPLACE FUNCTION kgrag_private.log_llm_calls(calls jsonb) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    n integer;
BEGIN
    -- one statement, its values bound (EXECUTE ... USING): on Citus, one call to the tenant's worker
    EXECUTE 'SELECT * FROM kgrag_private.log_llm_calls_at($1, $2)' INTO n USING kgrag.current_tenant(), calls;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.log_llm_calls(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.log_llm_calls(jsonb) TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag_private.log_llm_calls(jsonb) IS
'Private. Records LLM calls made for the current tenant in kgrag.llm_call: calls = [{purpose (extraction, report, answer or rerank), route, model, prompt_tokens, completion_tokens, cached, ms}], at most 1,000 per call (bounded text, no negative count). The driver calls it after its extraction, report and answer calls. Through kgrag_private.log_llm_calls_at (SECURITY DEFINER, owned by kgrag_logger, which alone writes the logs, on the allow-list: a tenant''s roles read the table, never write it; on Citus, one call to the worker holding the tenant''s shards). Returns the rows written.';

CREATE OR REPLACE VIEW kgrag.llm_cost WITH (security_invoker = true) AS
SELECT (c.called_at AT TIME ZONE 'UTC')::date AS day, c.purpose, c.route, c.model,
       count(*) FILTER (WHERE NOT c.cached) AS calls,
       count(*) FILTER (WHERE c.cached) AS cached,
       sum(c.prompt_tokens) AS prompt_tokens,
       sum(c.completion_tokens) AS completion_tokens,
       round(avg(c.ms) FILTER (WHERE NOT c.cached)::numeric, 1) AS mean_ms
  FROM kgrag.llm_call AS c
 WHERE c.tenant_id = kgrag.current_tenant()
 GROUP BY 1, 2, 3, 4;
GRANT SELECT ON kgrag.llm_cost TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.llm_cost IS
'What the current tenant''s graph and answers cost in LLM calls, per day (UTC), purpose (extraction and community reports: the graph; answer: the questions served), the answer''s route and model: calls made, chunks answered from the extraction cache, tokens in and out as the endpoint counted them, mean milliseconds a call.';

-- The query log of searches: written through one SECURITY DEFINER function (kgrag_logger may insert
-- into kgrag.query_log and nothing else), and read per route.

CREATE OR REPLACE FUNCTION kgrag_private.log_search(
    route text, reason text, seeds text[], paths_walked integer, rows_returned integer,
    ms double precision, fallback boolean, question text, context_chars integer, chunk_ids text[], embedder text,
    schema_revision text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
SET plan_cache_mode = force_custom_plan  -- see kgrag_private.search_at: the overflow upsert, one shard and
                                         -- nothing volatile, kept 24 MB of plans after 900 searches over the rate
AS $$
DECLARE
    -- computed first: Citus takes no subquery inside INSERT ... VALUES
    kept_seeds text[] := ARRAY(SELECT left(u.s, 200) FROM unnest(COALESCE(seeds, '{}'::text[])) WITH ORDINALITY AS u(s, o)
                                ORDER BY u.o LIMIT 100);
    kept_chunks text[] := ARRAY(SELECT left(u.c, 200) FROM unnest(COALESCE(chunk_ids, '{}'::text[])) WITH ORDINALITY AS u(c, o)
                                 ORDER BY u.o LIMIT 1000);
    t text := kgrag.current_tenant();
    asker text[] := kgrag_private.groups_for(t);  -- who may read the row (kgrag.query_log's policy)
    rate integer := floor((kgrag.setting('log_rate_per_minute') #>> '{}')::numeric)::integer;
BEGIN
    IF route IS NULL OR route NOT IN (SELECT r.route FROM kgrag.routes() AS r) THEN
        RAISE EXCEPTION 'unknown route %', COALESCE(quote_literal(route), 'NULL') USING ERRCODE = '22023';
    END IF;
    -- beyond the tenant's rate, the search is counted for its minute, not logged
    IF rate IS NOT NULL AND (SELECT count(*) FROM (SELECT 1 FROM kgrag.query_log AS q
                                                    WHERE q.tenant_id = t AND q.searched_at > now() - interval '1 minute'
                                                    LIMIT rate) AS r) >= rate THEN
        INSERT INTO kgrag.log_overflow AS o (tenant_id, minute, searches) VALUES (t, date_trunc('minute', now()), 1)
        ON CONFLICT (tenant_id, minute) DO UPDATE SET searches = o.searches + 1;
        RETURN;
    END IF;
    INSERT INTO kgrag.query_log (tenant_id, route, reason, seeds, paths_walked, rows_returned, ms,
                                 fallback, question, context_chars, chunk_ids, embedder, schema_revision, groups)
    VALUES (t, route, left(COALESCE(reason, ''), 4000),
            kept_seeds, greatest(COALESCE(paths_walked, 0), 0), greatest(COALESCE(rows_returned, 0), 0), greatest(COALESCE(ms, 0), 0),
            COALESCE(fallback, false),
            CASE WHEN (kgrag.setting('log_question_text') #>> '{}')::boolean THEN left(question, 2000) END, CASE WHEN context_chars IS NOT NULL THEN greatest(context_chars, 0) END,
            kept_chunks, left(embedder, 64), left(schema_revision, 16), asker);
END
$$;
GRANT CREATE ON SCHEMA kgrag_private TO kgrag_logger;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag_private.log_search(text, text, text[], integer, integer, double precision, boolean, text, integer, text[], text, text) OWNER TO kgrag_logger;
REVOKE CREATE ON SCHEMA kgrag_private FROM kgrag_logger;
REVOKE EXECUTE ON FUNCTION kgrag_private.log_search(text, text, text[], integer, integer, double precision, boolean, text, integer, text[], text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.log_search(text, text, text[], integer, integer, double precision, boolean, text, integer, text[], text, text)
    TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag_private.log_search(text, text, text[], integer, integer, double precision, boolean, text, integer, text[], text, text) IS
'Private. Adds the query log row of a search (kgrag_search calls it, or kgrag.context_blocks with the characters it packed): for the current tenant only, a known route, no hash of the question, the text bounded (reason 4,000, 100 seeds of 200 characters, 1,000 chunk ids of 200, embedder 64, revision 16, question 2,000, kept only where the setting log_question_text allows, within the owner''s limits), the time and log_id set by the database, and the groups the asker held (kgrag.current_groups: only a session holding them all reads the row). Beyond the tenant''s setting log_rate_per_minute rows in the last minute, the search is counted in kgrag.log_overflow instead. SECURITY DEFINER, owned by kgrag_logger (which may insert into kgrag.query_log and nothing else), on the allow-list: readers may not write the log themselves.';

CREATE OR REPLACE FUNCTION kgrag_private.log_entry(entry jsonb, context_chars integer) RETURNS void
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT kgrag_private.log_search(entry ->> 'route', entry ->> 'reason',
                             ARRAY(SELECT jsonb_array_elements_text(COALESCE(entry -> 'seeds', '[]'))),
                             (entry ->> 'paths')::integer, (entry ->> 'rows')::integer, (entry ->> 'ms')::float8,
                             (entry ->> 'fallback')::boolean, entry ->> 'question', context_chars,
                             ARRAY(SELECT jsonb_array_elements_text(COALESCE(entry -> 'chunks', '[]'))),
                             entry ->> 'embedder', entry ->> 'revision')
$$;
COMMENT ON FUNCTION kgrag_private.log_entry(jsonb, integer) IS
'Private. Writes a query log row from the entry kgrag_search made (jsonb: hash, route, reason, seeds, paths, rows, ms, fallback, question, chunks, embedder, revision) and the characters kgrag.context_blocks packed (NULL for a search alone), through kgrag_private.log_search.';

CREATE OR REPLACE VIEW kgrag.search_by_route WITH (security_invoker = true) AS
SELECT q.route,
       count(*) AS questions,
       count(*) FILTER (WHERE q.rows_returned = 0) AS empty,
       count(*) FILTER (WHERE q.fallback) AS fallbacks,
       round(avg(q.context_chars)) AS mean_context_chars,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY q.ms)::numeric, 1) AS p50_ms,
       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY q.ms)::numeric, 1) AS p95_ms,
       min(q.searched_at) AS first_search,
       max(q.searched_at) AS last_search
  FROM kgrag.query_log AS q
 WHERE q.tenant_id = kgrag.current_tenant()
 GROUP BY q.route;
GRANT SELECT ON kgrag.search_by_route TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.search_by_route IS
'The current tenant''s logged searches per route: questions, empty answers, fallbacks (the walk over its budget, vector and lexical search answering instead), the mean characters kgrag.context packed (over the searches made for a context), p50 and p95 milliseconds, the first and last search. Which questions came back empty: SELECT route, question, searched_at FROM kgrag.query_log WHERE rows_returned = 0 (the text is kept where the setting log_question_text is true).';

-- kgrag_search: the entry point. Routes the question, runs the route, logs the query (unless the
-- transaction is read-only, as on a hot standby). Usable from psql with the question text alone.

CREATE OR REPLACE FUNCTION kgrag_private.search_in_time(deadline timestamptz, budget_ms integer) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF clock_timestamp() > deadline THEN
        RAISE EXCEPTION 'search cancelled after % ms (setting search_timeout_ms)', budget_ms
            USING ERRCODE = '57014',
                  HINT = 'A hub-heavy or very long question: narrow it, or pass options (hops, degree_cap, relations).';
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.search_in_time(timestamptz, integer) IS
'Private. Returns nothing; raises SQLSTATE 57014 when a kgrag_search has run past its deadline (setting search_timeout_ms). Checked between the search''s phases; the walk itself checks the same deadline row by row.';

CREATE OR REPLACE FUNCTION kgrag_private.log_search(
    question_hash text, route text, reason text, seeds text[], paths_walked integer, rows_returned integer,
    ms double precision, fallback boolean, question text, context_chars integer)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    -- computed first: Citus takes no subquery inside INSERT ... VALUES
    kept_seeds text[] := ARRAY(SELECT left(u.s, 200) FROM unnest(COALESCE(seeds, '{}'::text[])) WITH ORDINALITY AS u(s, o)
                                ORDER BY u.o LIMIT 100);
BEGIN
    IF route IS NULL OR route NOT IN (SELECT r.route FROM kgrag.routes() AS r) THEN
        RAISE EXCEPTION 'unknown route %', COALESCE(quote_literal(route), 'NULL') USING ERRCODE = '22023';
    END IF;
    INSERT INTO kgrag.query_log (tenant_id, question_hash, route, reason, seeds, paths_walked, rows_returned, ms,
                                 fallback, question, context_chars)
    VALUES (kgrag.current_tenant(), left(COALESCE(question_hash, ''), 64), route, left(COALESCE(reason, ''), 4000),
            kept_seeds, greatest(COALESCE(paths_walked, 0), 0), greatest(COALESCE(rows_returned, 0), 0), greatest(COALESCE(ms, 0), 0),
            COALESCE(fallback, false), left(question, 2000), CASE WHEN context_chars IS NOT NULL THEN greatest(context_chars, 0) END);
END
$$;
GRANT CREATE ON SCHEMA kgrag_private TO kgrag_logger;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag_private.log_search(text, text, text, text[], integer, integer, double precision, boolean, text, integer) OWNER TO kgrag_logger;
REVOKE CREATE ON SCHEMA kgrag_private FROM kgrag_logger;
REVOKE EXECUTE ON FUNCTION kgrag_private.log_search(text, text, text, text[], integer, integer, double precision, boolean, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.log_search(text, text, text, text[], integer, integer, double precision, boolean, text, integer)
    TO kgrag_reader, kgrag_writer;
COMMENT ON FUNCTION kgrag_private.log_search(text, text, text, text[], integer, integer, double precision, boolean, text, integer) IS
'Private. Adds the query log row of a search (kgrag_search calls it, or kgrag.context_blocks with the characters it packed): for the current tenant only, a known route, the text bounded (hash 64, reason 4,000, 100 seeds of 200 characters, question 2,000: the caller passes it only where the setting log_question_text allows), the time and log_id set by the database. SECURITY DEFINER, owned by kgrag_logger (which may insert into kgrag.query_log and nothing else), on the allow-list: readers may not write the log themselves.';

CREATE OR REPLACE FUNCTION kgrag_private.log_entry(entry jsonb, context_chars integer) RETURNS void
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT kgrag_private.log_search(entry ->> 'hash', entry ->> 'route', entry ->> 'reason',
                             ARRAY(SELECT jsonb_array_elements_text(COALESCE(entry -> 'seeds', '[]'))),
                             (entry ->> 'paths')::integer, (entry ->> 'rows')::integer, (entry ->> 'ms')::float8,
                             (entry ->> 'fallback')::boolean, entry ->> 'question', context_chars)
$$;
COMMENT ON FUNCTION kgrag_private.log_entry(jsonb, integer) IS
'Private. Writes a query log row from the entry kgrag_search made (jsonb: hash, route, reason, seeds, paths, rows, ms, fallback, question) and the characters kgrag.context_blocks packed (NULL for a search alone), through kgrag_private.log_search.';

CREATE OR REPLACE FUNCTION kgrag.kgrag_search(
    question_vec vector DEFAULT NULL, route text DEFAULT 'auto', question text DEFAULT NULL, k integer DEFAULT 10,
    options jsonb DEFAULT '{}')
RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    started timestamptz := clock_timestamp();
    budget_ms integer := kgrag.setting('search_timeout_ms')::integer;
    deadline timestamptz := clock_timestamp() + budget_ms * interval '1 millisecond';
    opts jsonb;
    decided record;
    chosen text;
    why text;
    rows_out kgrag.search_row[];
    lists jsonb;
    over_budget text;  -- why the walk stopped, when it ran out of its budget
    entry jsonb;  -- the query log row
BEGIN
    IF route IS NULL OR (route <> 'auto' AND route NOT IN (SELECT r.route FROM kgrag.routes() AS r)) THEN
        RAISE EXCEPTION 'unknown route %: use auto, %', quote_literal(COALESCE(route, 'NULL')),
            (SELECT string_agg(r.route, ', ') FROM kgrag.routes() AS r)
            USING ERRCODE = '22023';
    END IF;
    PERFORM kgrag_private.check_k(k);
    IF question_vec IS NULL AND question IS NULL THEN
        RAISE EXCEPTION 'nothing to search for: give the question vector, the question text, or both'
            USING ERRCODE = '22023',
                  HINT = 'From psql: SELECT * FROM kgrag.kgrag_search(question => ''...'');';
    END IF;
    IF question_vec IS NOT NULL THEN
        PERFORM kgrag_private.check_question_vector(question_vec);
    END IF;
    IF question IS NOT NULL AND btrim(question) = '' THEN
        RAISE EXCEPTION 'the question text is empty: pass NULL to search by the vector alone' USING ERRCODE = '22023';
    END IF;
    PERFORM kgrag_private.check_question(question);
    opts := kgrag_private.search_options(options);
    PERFORM set_config('kgrag.paths_walked', '0', true);
    PERFORM set_config('kgrag.search_deadline', deadline::text, true);  -- the walk keeps to it too

    SELECT * INTO decided FROM kgrag.route(question_vec, question, options);
    PERFORM kgrag_private.search_in_time(deadline, budget_ms);
    IF jsonb_typeof(opts -> 'seed_entities') = 'array' THEN  -- the caller names the seeds
        decided.seeds := kgrag.resolve_entities(ARRAY(SELECT jsonb_array_elements_text(opts -> 'seed_entities')));
        decided.route := 'local';
        decided.reason := format('seeds chosen by the caller: %s',
                                 (SELECT string_agg(e.name, ', ' ORDER BY u.o) FROM unnest(decided.seeds) WITH ORDINALITY AS u(id, o)
                                    JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = u.id));
    END IF;
    IF kgrag_search.route = 'auto' THEN
        chosen := decided.route;
        why := decided.reason;
    ELSE
        chosen := kgrag_search.route;
        why := format('route %s chosen by the caller (the router would pick %s: %s)', chosen, decided.route,
                      decided.reason);
    END IF;

    IF chosen IN ('local', 'mixed') AND cardinality(decided.seeds) > 0 THEN
        BEGIN
            rows_out := ARRAY(SELECT x FROM kgrag_private.local_rows(question_vec, question, decided.seeds, decided.named_seeds, k, opts) AS x);
            why := why || CASE WHEN opts ->> 'graph_ranking' = 'pagerank' THEN '; graph chunks ranked by Personalized PageRank from the seeds and the nearest chunks'
                               WHEN opts ->> 'graph_ranking' = 'both' THEN '; graph chunks ranked by the k-hop paths from the seeds and by Personalized PageRank, fused'
                               ELSE '; graph chunks ranked by the k-hop paths from the seeds' END;
            IF EXISTS (SELECT 1 FROM unnest(rows_out) AS x WHERE x.payload -> 'ranks' ? 'own_page') THEN
                why := why || '; first the seeds'' own pages (documents titled with their names)';
            END IF;
            IF EXISTS (SELECT 1 FROM unnest(rows_out) AS x WHERE x.payload -> 'ranks' ? 'bridge_page') THEN
                why := why || ', then the page each names nearest the question';
            END IF;
        EXCEPTION WHEN query_canceled THEN
            -- Only the walk's own budget (khop_timeout_ms, max_paths_walked, the search's deadline)
            -- falls back; a cancel from outside (statement_timeout, pg_cancel_backend) stays one.
            GET STACKED DIAGNOSTICS over_budget = MESSAGE_TEXT;
            IF over_budget NOT LIKE 'graph traversal %' THEN
                RAISE;
            END IF;
            lists := kgrag_private.chunk_lists(question_vec, question, k, opts);
            rows_out := ARRAY(SELECT (x.rank, x.ref_id, x.kind, x.source, x.score, x.route, x.reason,
                                      x.payload || '{"coverage": "reduced", "fallback": "vector+lexical"}')::kgrag.search_row
                                FROM kgrag_private.fused_chunks(lists, k, opts) AS x);
            why := why || format('; the graph was over budget (%s): vector and lexical chunks returned instead, '
                                 'coverage reduced', over_budget);
        END;
    END IF;
    IF chosen = 'mixed' THEN
        rows_out := ARRAY(SELECT x FROM kgrag_private.global_rows(question_vec, question, false, k, opts || '{"reports": 1}') AS x
                           WHERE x.kind = 'community') || COALESCE(rows_out, '{}');
    ELSIF chosen = 'global' THEN
        rows_out := ARRAY(SELECT x FROM kgrag_private.global_rows(
                              question_vec, question,
                              (opts ->> 'whole_collection')::boolean OR (kgrag_search.route = 'auto' AND cardinality(decided.seeds) = 0),
                              k, opts) AS x);
    ELSIF chosen = 'vector' OR (chosen = 'local' AND cardinality(decided.seeds) = 0) THEN
        lists := kgrag_private.chunk_lists(question_vec, question, k, opts);
        rows_out := ARRAY(SELECT x FROM kgrag_private.fused_chunks(lists, k, opts) AS x);
        IF chosen = 'local' THEN
            why := why || '; no seed: vector and lexical chunks only';
        END IF;
    END IF;
    rows_out := COALESCE(rows_out, '{}');
    IF over_budget IS NOT NULL AND cardinality(rows_out) = 0 THEN  -- nothing to return instead: the error stands
        RAISE EXCEPTION '%', over_budget
            USING ERRCODE = '57014',
                  HINT = 'Vector and lexical search found nothing either. Walk fewer hops, pass a degree cap, or filter relations.';
    END IF;
    IF cardinality(rows_out) = 0 THEN
        PERFORM kgrag_private.search_in_time(deadline, budget_ms);
    ELSIF clock_timestamp() > deadline THEN  -- what was found is returned rather than thrown away
        why := why || format('; ran past search_timeout_ms (%s ms)', budget_ms);
    END IF;
    PERFORM set_config('kgrag.search_deadline', '', true);
    IF (opts ->> 'neighbours')::boolean THEN
        rows_out := ARRAY(SELECT x FROM kgrag_private.with_neighbours(rows_out) AS x);
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(rows_out) AS x  -- the entities returned: bounded by the rows
                 JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = x.ref_id
                WHERE x.kind = 'entity'
                  AND (e.answer_stale
                       OR (e.degree > 0  -- kgrag.entities.no_community, with the bound tenant
                           AND NOT EXISTS (SELECT 1 FROM kgrag.community_member AS m
                                            WHERE m.tenant_id = t AND m.entity_id = e.entity_id)))) THEN
        why := why || '; the graph is stale around these results (connected entities in no community yet, or answers of '
                      'changed documents): run `pgkgrag build` (SELECT * FROM kgrag.staleness)';
    END IF;
    IF question_vec IS NULL THEN
        why := why || '; no question vector: vector search skipped, text matched by entity linking and full-text search';
    END IF;
    IF chosen IN ('global', 'mixed') THEN
        IF NOT EXISTS (SELECT 1 FROM kgrag.community_report AS r WHERE r.tenant_id = t) THEN
            why := why || '; this tenant has no community reports yet: run `pgkgrag build`';
        ELSIF EXISTS (SELECT 1 FROM kgrag.community_report AS r WHERE r.tenant_id = t AND r.stale) THEN
            why := why || format('; %s community reports are stale (documents changed since they were written) and '
                                 'were left out: run `pgkgrag build`',
                                 (SELECT count(*) FROM kgrag.community_report AS r WHERE r.tenant_id = t AND r.stale));
        END IF;
    END IF;
    IF cardinality(rows_out) = 0 THEN
        IF NOT EXISTS (SELECT 1 FROM kgrag.document AS d WHERE d.tenant_id = t) THEN
            why := format('tenant %s has no documents (%s)', quote_literal(t), why);
        ELSE
            why := format('nothing cleared the floors (%s): no entity seed, no chunk above similarity %s, no lexical '
                          'match covering %s of the question''s words, no report above similarity %s',
                          why, opts ->> 'chunk_min_similarity', opts ->> 'lexical_min_coverage',
                          opts ->> 'report_min_similarity');
        END IF;
    END IF;

    IF (opts ->> 'log')::boolean THEN
        IF current_setting('transaction_read_only')::boolean THEN
            why := why || ' (not logged in kgrag.query_log: the transaction is read-only)';
        ELSE
            entry := jsonb_build_object(
                'hash', md5(COALESCE(question, question_vec::text)), 'route', chosen, 'reason', why,
                'seeds', to_jsonb(decided.seeds),
                'paths', COALESCE(NULLIF(current_setting('kgrag.paths_walked', true), ''), '0')::integer,
                'rows', cardinality(rows_out), 'ms', extract(epoch FROM clock_timestamp() - started) * 1000,
                'fallback', over_budget IS NOT NULL,
                'question', CASE WHEN (kgrag.setting('log_question_text') #>> '{}')::boolean THEN question END);
            IF current_setting('kgrag.defer_log', true) = 'on' THEN
                PERFORM set_config('kgrag.deferred_log', entry::text, true);  -- kgrag.context_blocks logs it
            ELSE
                PERFORM kgrag_private.log_entry(entry, NULL);
            END IF;
        END IF;
    END IF;
    PERFORM set_config('kgrag.last_route', chosen, true);
    PERFORM set_config('kgrag.last_reason', why, true);
    RETURN QUERY
    SELECT (row_number() OVER ())::integer, x.ref_id, x.kind, x.source, x.score, chosen, why, x.payload
      FROM unnest(rows_out) AS x;
END
$$;
COMMENT ON FUNCTION kgrag.kgrag_search(vector, text, text, integer, jsonb) IS
'The entry point. Returns one row per result (rank, ref_id, kind, source, score, route, reason, payload) for a question embedding and its text (either may be NULL, not both: from psql, kgrag_search(question => ''...'') searches by the text alone, with entity linking, full-text search, the graph and the reports ranked by their words) and a route: auto (the router picks, see kgrag.route), local, global, mixed or vector. k bounds the chunk rows; options (jsonb) override hops, degree_cap, entities, reports, seeds, level, relations, as_of, the floors (chunk_min_similarity, entity_seed_min_similarity, report_min_similarity, lexical_min_coverage), rrf_k, graph_weight, whole_collection (global route: every report of the level by weight; formerly shape), seed_entities (entity ids, names or aliases: the local route from these, whatever the router would pick), direction (out, in or both: how the walk follows typed edges; default out), graph_ranking (paths: the graph''s chunks are those of the entities the walk reached, nearest first; pagerank: by Personalized PageRank mass, see kgrag.personalized_pagerank, source pagerank and payload.ppr_mass; both: the two lists fused; default setting search_graph_ranking; the reason says which ranked them), neighbours (add after each chunk the chunk before and after it in its document, source neighbour; default setting search_neighbours) and log (whether this search is logged; default setting query_log; never in a read-only transaction, where the reason says so). payload.evidence_refs always names chunks of the tenant. A walk that runs out of its budget (khop_timeout_ms, max_paths_walked, search_timeout_ms) does not fail the search: the route falls back to vector and lexical chunks, the reason says so, each such row has payload.coverage = reduced, and kgrag.query_log.fallback is true; the error stands only when the fallback finds nothing either. A question with nothing relevant returns no rows (a tenant without documents says so), and the reason is logged (kgrag.query_log) and left for kgrag.last_search().';

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
GRANT SELECT ON kgrag.search_by_route TO kgrag_reader, kgrag_writer;
COMMENT ON VIEW kgrag.search_by_route IS
'The current tenant''s logged searches per route: questions, empty answers, fallbacks (the walk over its budget, vector and lexical search answering instead), the mean characters kgrag.context packed (over the searches made for a context), p50 and p95 milliseconds, the first and last search. Which questions came back empty: SELECT route, question, searched_at FROM kgrag.query_log WHERE rows_returned = 0 (the text is kept where the setting log_question_text is true).';

CREATE OR REPLACE FUNCTION kgrag.reranker()
RETURNS TABLE (url text, api text, model text, timeout_ms integer, candidates integer)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    url := kgrag.setting('rerank_url') #>> '{}';
    IF COALESCE(url, '') = '' THEN
        RETURN;  -- no reranker
    END IF;
    api := kgrag.setting('rerank_api') #>> '{}';
    model := COALESCE(kgrag.setting('rerank_model') #>> '{}', '');
    IF url !~ '^https?://[^[:space:]]+$' OR length(url) > 2000 THEN
        RAISE EXCEPTION 'setting rerank_url must be an http(s) URL, got %', quote_literal(left(url, 200)) USING ERRCODE = '22023';
    END IF;
    IF api IS NULL OR api NOT IN ('tei', 'cohere') THEN
        RAISE EXCEPTION 'setting rerank_api must be tei or cohere, got %', COALESCE(quote_literal(api), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    BEGIN
        timeout_ms := (kgrag.setting('rerank_timeout_ms') #>> '{}')::integer;
        candidates := (kgrag.setting('rerank_candidates') #>> '{}')::integer;
    EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
        timeout_ms := NULL;
    END;
    IF timeout_ms IS NULL OR timeout_ms NOT BETWEEN 1 AND 60000 THEN
        RAISE EXCEPTION 'setting rerank_timeout_ms must be an integer between 1 and 60000' USING ERRCODE = '22023';
    END IF;
    IF candidates IS NULL OR candidates NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'setting rerank_candidates must be an integer between 1 and 1000' USING ERRCODE = '22023';
    END IF;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag.reranker() IS
'Returns the current tenant''s reranker, checked: (url, api: tei | cohere, model, timeout_ms, candidates), or no row while the setting rerank_url is empty (the default). The database does not call it: the Python driver (pgkgrag search, pgkgrag.Client) sends the question and the texts of up to candidates fused chunks and keeps the best k in the reranker''s order, or the fused order when it fails or takes longer than timeout_ms. Raises SQLSTATE 22023 for a setting out of shape.';

CREATE OR REPLACE FUNCTION kgrag.last_search() RETURNS TABLE (route text, reason text)
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT NULLIF(pg_catalog.current_setting('kgrag.last_route', true), ''),
           NULLIF(pg_catalog.current_setting('kgrag.last_reason', true), '')
$$;
COMMENT ON FUNCTION kgrag.last_search() IS
'Returns the route and the reason of the last kgrag_search of this transaction (one row; NULLs before any search), what a search that returned no row leaves behind.';

-- kgrag_search: the entry point. Routes the question, runs the route, logs the query (unless the
-- transaction is read-only, as on a hot standby). Usable from psql with the question text alone.

CREATE OR REPLACE FUNCTION kgrag._search_in_time(deadline timestamptz, budget_ms integer) RETURNS void
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
COMMENT ON FUNCTION kgrag._search_in_time(timestamptz, integer) IS
'Private. Returns nothing; raises SQLSTATE 57014 when a kgrag_search has run past its deadline (setting search_timeout_ms). Checked between the search''s phases; the walk itself checks the same deadline row by row.';

CREATE OR REPLACE FUNCTION kgrag._log_search(
    question_hash text, route text, reason text, seeds text[], paths_walked integer, rows_returned integer,
    ms double precision)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
BEGIN
    IF route IS NULL OR route NOT IN (SELECT r.route FROM kgrag.routes() AS r) THEN
        RAISE EXCEPTION 'unknown route %', COALESCE(quote_literal(route), 'NULL') USING ERRCODE = '22023';
    END IF;
    INSERT INTO kgrag.query_log (tenant_id, question_hash, route, reason, seeds, paths_walked, rows_returned, ms)
    VALUES (kgrag.current_tenant(), left(COALESCE(question_hash, ''), 64), route, left(COALESCE(reason, ''), 4000),
            ARRAY(SELECT left(u.s, 200) FROM unnest(COALESCE(seeds, '{}'::text[])) WITH ORDINALITY AS u(s, o)
                   ORDER BY u.o LIMIT 100),
            greatest(COALESCE(paths_walked, 0), 0), greatest(COALESCE(rows_returned, 0), 0), greatest(COALESCE(ms, 0), 0));
END
$$;
GRANT CREATE ON SCHEMA kgrag TO kgrag_logger;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag._log_search(text, text, text, text[], integer, integer, double precision) OWNER TO kgrag_logger;
REVOKE CREATE ON SCHEMA kgrag FROM kgrag_logger;
REVOKE EXECUTE ON FUNCTION kgrag._log_search(text, text, text, text[], integer, integer, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag._log_search(text, text, text, text[], integer, integer, double precision)
    TO kgrag_reader, kgrag_writer;
COMMENT ON FUNCTION kgrag._log_search(text, text, text, text[], integer, integer, double precision) IS
'Private. Adds the query log row of a search (kgrag_search calls it): for the current tenant only, a known route, the text bounded (hash 64, reason 4,000, 100 seeds of 200 characters), the time and log_id set by the database. SECURITY DEFINER, owned by kgrag_logger (which may insert into kgrag.query_log and nothing else), on the allow-list: readers may not write the log themselves.';

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
BEGIN
    IF route IS NULL OR (route <> 'auto' AND route NOT IN (SELECT r.route FROM kgrag.routes() AS r)) THEN
        RAISE EXCEPTION 'unknown route %: use auto, %', quote_literal(COALESCE(route, 'NULL')),
            (SELECT string_agg(r.route, ', ') FROM kgrag.routes() AS r)
            USING ERRCODE = '22023';
    END IF;
    PERFORM kgrag._check_k(k);
    IF question_vec IS NULL AND question IS NULL THEN
        RAISE EXCEPTION 'nothing to search for: give the question vector, the question text, or both'
            USING ERRCODE = '22023',
                  HINT = 'From psql: SELECT * FROM kgrag.kgrag_search(question => ''...'');';
    END IF;
    IF question_vec IS NOT NULL THEN
        PERFORM kgrag._check_question_vector(question_vec);
    END IF;
    IF question IS NOT NULL AND btrim(question) = '' THEN
        RAISE EXCEPTION 'the question text is empty: pass NULL to search by the vector alone' USING ERRCODE = '22023';
    END IF;
    PERFORM kgrag._check_question(question);
    opts := kgrag._search_options(options);
    PERFORM set_config('kgrag.paths_walked', '0', true);
    PERFORM set_config('kgrag.search_deadline', deadline::text, true);  -- the walk keeps to it too

    SELECT * INTO decided FROM kgrag.route(question_vec, question, options);
    PERFORM kgrag._search_in_time(deadline, budget_ms);
    IF kgrag_search.route = 'auto' THEN
        chosen := decided.route;
        why := decided.reason;
    ELSE
        chosen := kgrag_search.route;
        why := format('route %s chosen by the caller (the router would pick %s: %s)', chosen, decided.route,
                      decided.reason);
    END IF;

    IF chosen IN ('local', 'mixed') AND cardinality(decided.seeds) > 0 THEN
        rows_out := ARRAY(SELECT x FROM kgrag._local_rows(question_vec, question, decided.seeds, k, opts) AS x);
    END IF;
    IF chosen = 'mixed' THEN
        rows_out := ARRAY(SELECT x FROM kgrag._global_rows(question_vec, question, false, k, opts || '{"reports": 1}') AS x
                           WHERE x.kind = 'community') || COALESCE(rows_out, '{}');
    ELSIF chosen = 'global' THEN
        rows_out := ARRAY(SELECT x FROM kgrag._global_rows(
                              question_vec, question,
                              (opts ->> 'whole_collection')::boolean OR (kgrag_search.route = 'auto' AND cardinality(decided.seeds) = 0),
                              k, opts) AS x);
    ELSIF chosen = 'vector' OR (chosen = 'local' AND cardinality(decided.seeds) = 0) THEN
        lists := kgrag._chunk_lists(question_vec, question, k, opts);
        rows_out := ARRAY(SELECT x FROM kgrag._fused_chunks(lists, k, opts) AS x);
        IF chosen = 'local' THEN
            why := why || '; no seed: vector and lexical chunks only';
        END IF;
    END IF;
    PERFORM kgrag._search_in_time(deadline, budget_ms);
    PERFORM set_config('kgrag.search_deadline', '', true);
    rows_out := COALESCE(rows_out, '{}');
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
            PERFORM kgrag._log_search(md5(COALESCE(question, question_vec::text)), chosen, why, decided.seeds,
                    COALESCE(NULLIF(current_setting('kgrag.paths_walked', true), ''), '0')::integer,
                    cardinality(rows_out), extract(epoch FROM clock_timestamp() - started) * 1000);
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
'The entry point. Returns one row per result (rank, ref_id, kind, source, score, route, reason, payload) for a question embedding and its text (either may be NULL, not both: from psql, kgrag_search(question => ''...'') searches by the text alone, with entity linking, full-text search, the graph and the reports ranked by their words) and a route: auto (the router picks, see kgrag.route), local, global, mixed or vector. k bounds the chunk rows; options (jsonb) override hops, degree_cap, entities, reports, seeds, level, relations, as_of, the floors (chunk_min_similarity, entity_seed_min_similarity, report_min_similarity, lexical_min_coverage), rrf_k, graph_weight, whole_collection (global route: every report of the level by weight; formerly shape) and log (whether this search is logged; default setting query_log; never in a read-only transaction, where the reason says so). payload.evidence_refs always names chunks of the tenant. A question with nothing relevant returns no rows (a tenant without documents says so), and the reason is logged (kgrag.query_log) and left in the setting kgrag.last_reason.';

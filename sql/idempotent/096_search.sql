-- kgrag_search: the entry point. Checks its input, routes the question (kgrag.route, or the seeds
-- the caller names), runs the route (falling back to vector and lexical chunks when the walk runs
-- out of its budget), says why (the reason, with what is stale or missing), and logs the query
-- (unless the transaction is read-only, as on a hot standby). Usable from psql with the question
-- text alone. The routes' rows are in 092-094, the log in 095_search_log.sql.

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

CREATE OR REPLACE FUNCTION kgrag_private.check_search_input(question_vec vector, route text, question text, k integer)
RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
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
END
$$;
COMMENT ON FUNCTION kgrag_private.check_search_input(vector, text, text, integer) IS
'Private. Returns nothing; raises SQLSTATE 22023 for a kgrag_search input it cannot take: an unknown route, k out of range, neither a question vector nor a text, a vector of the wrong dimension or zero length, an empty or oversized question.';

CREATE OR REPLACE FUNCTION kgrag_private.search_route(
    question_vec vector, asked text, question text, options jsonb, opts jsonb)
RETURNS TABLE (route text, reason text, seeds text[], named_seeds text[], subject text, subject_absent boolean,
               count_rule text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    decided record;
BEGIN
    SELECT * INTO decided FROM kgrag_private.route_at(t, question_vec, question, options);  -- (kgrag.route)
    PERFORM kgrag_private.search_in_time(current_setting('kgrag.search_deadline')::timestamptz,
                                         kgrag.setting('search_timeout_ms')::integer);
    IF jsonb_typeof(opts -> 'seed_entities') = 'array' THEN  -- the caller names the seeds
        decided.seeds := kgrag_private.with_twins(kgrag.resolve_entities(ARRAY(SELECT jsonb_array_elements_text(opts -> 'seed_entities'))));
        decided.route := 'local';
        decided.reason := format('seeds chosen by the caller: %s',
                                 (SELECT string_agg(e.name, ', ' ORDER BY u.o) FROM unnest(decided.seeds) WITH ORDINALITY AS u(id, o)
                                    JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = u.id));
    END IF;
    seeds := decided.seeds;
    named_seeds := decided.named_seeds;
    subject := decided.subject;
    subject_absent := decided.subject_absent AND decided.route = 'global';
    count_rule := decided.count_rule;
    IF asked = 'auto' THEN
        route := decided.route;
        reason := decided.reason;
    ELSE
        route := asked;
        reason := format('route %s chosen by the caller (the router would pick %s: %s)', asked, decided.route,
                         decided.reason);
    END IF;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.search_route(vector, text, text, jsonb, jsonb) IS
'Private. Returns the route a kgrag_search takes and why, with its seeds and what kgrag.route found of the question''s subject (subject, subject_absent, count_rule): the router''s (kgrag.route) for route auto, else the route asked for, its reason naming what the router would pick; the local route from the option seed_entities where the caller names the seeds. Checks the search''s deadline after routing.';

CREATE OR REPLACE FUNCTION kgrag_private.search_rows(
    route text, asked text, question_vec vector, question text, seeds text[], named_seeds text[], k integer, opts jsonb,
    subject text, subject_absent boolean)
RETURNS TABLE (result kgrag.search_row[], said text, over_budget text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    rows_out kgrag.search_row[];
BEGIN
    said := '';
    IF route IN ('local', 'mixed') AND cardinality(seeds) > 0 THEN
        BEGIN
            rows_out := ARRAY(SELECT x FROM kgrag_private.local_rows(question_vec, question, seeds, named_seeds, k, opts) AS x);
            said := CASE WHEN opts ->> 'graph_ranking' = 'pagerank' THEN '; graph chunks ranked by Personalized PageRank from the seeds and the nearest chunks'
                         WHEN opts ->> 'graph_ranking' = 'both' THEN '; graph chunks ranked by the k-hop paths from the seeds and by Personalized PageRank, fused'
                         ELSE '; graph chunks ranked by the k-hop paths from the seeds' END;
            IF EXISTS (SELECT 1 FROM unnest(rows_out) AS x WHERE x.payload -> 'ranks' ? 'own_page') THEN
                said := said || '; first the seeds'' own pages (documents titled with their names)';
                IF EXISTS (SELECT 1 FROM unnest(rows_out) AS x WHERE x.payload -> 'ranks' ? 'bridge_page') THEN
                    said := said || ', then the page each names nearest the question';
                END IF;
            ELSIF EXISTS (SELECT 1 FROM unnest(rows_out) AS x WHERE x.payload -> 'ranks' ? 'bridge_page') THEN
                said := said || '; first the page the nearest chunk names nearest the question';
            END IF;
        EXCEPTION WHEN query_canceled THEN
            -- Only the walk's own budget (khop_timeout_ms, max_paths_walked, the search's deadline)
            -- falls back; a cancel from outside (statement_timeout, pg_cancel_backend) stays one.
            GET STACKED DIAGNOSTICS over_budget = MESSAGE_TEXT;
            IF over_budget NOT LIKE 'graph traversal %' THEN
                RAISE;
            END IF;
            rows_out := ARRAY(SELECT (x.rank, x.ref_id, x.kind, x.source, x.score, x.route, x.reason,
                                      x.payload || '{"coverage": "reduced", "fallback": "vector+lexical"}')::kgrag.search_row
                                FROM kgrag_private.fused_chunks(kgrag_private.chunk_lists(question_vec, question, k, opts, true), k, opts) AS x);
            said := format('; the graph was over budget (%s): vector and lexical chunks returned instead, '
                           'coverage reduced', over_budget);
        END;
    END IF;
    IF route = 'mixed' THEN
        -- one map: the report of the community of the subject the question names (not a fuzzy or
        -- vector seed) nearest the question
        rows_out := ARRAY(SELECT x FROM kgrag_private.global_rows(question_vec, question, false, k,
                                                                 opts || '{"reports": 1}', COALESCE(named_seeds, '{}')) AS x
                           WHERE x.kind = 'community') || COALESCE(rows_out, '{}');
    ELSIF route = 'global' AND subject_absent AND NOT (opts ->> 'whole_collection')::boolean THEN
        rows_out := '{}';  -- an aggregation about what nobody wrote about: nothing, not every report
    ELSIF route = 'global' THEN
        -- the whole collection for an aggregation without a subject; with a subject the graph
        -- does not name, the reports are ranked against it (by its words without a vector)
        rows_out := ARRAY(SELECT x FROM kgrag_private.global_rows(
                              question_vec, CASE WHEN cardinality(seeds) = 0 THEN COALESCE(subject, question) ELSE question END,
                              (opts ->> 'whole_collection')::boolean
                              OR (asked = 'auto' AND cardinality(seeds) = 0 AND subject IS NULL),
                              k, opts) AS x);
        IF cardinality(rows_out) = 0 AND asked = 'auto' AND cardinality(seeds) = 0 AND subject IS NOT NULL THEN
            rows_out := ARRAY(SELECT x FROM kgrag_private.global_rows(question_vec, question, true, k, opts) AS x);
            said := '; no report cleared the floor against the subject: every report of the level, by weight';
        END IF;
    ELSIF route = 'vector' OR (route = 'local' AND cardinality(seeds) = 0) THEN
        -- (a forced vector route still knows the seeds the router found)
        rows_out := ARRAY(SELECT x FROM kgrag_private.fused_chunks(
                              kgrag_private.chunk_lists(question_vec, question, k, opts, cardinality(seeds) > 0), k, opts) AS x);
        IF route = 'local' THEN
            said := said || '; no seed: vector and lexical chunks only';
        END IF;
    END IF;
    result := COALESCE(rows_out, '{}');
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.search_rows(text, text, vector, text, text[], text[], integer, jsonb, text, boolean) IS
'Private. Runs a route for kgrag_search: (result = its rows, said = what the reason adds, over_budget = why the walk stopped when it ran out of its budget). local and mixed walk from the seeds (kgrag_private.local_rows; a walk over its budget falls back to vector and lexical chunks, each row payload.coverage = reduced); mixed puts first the report of a community its named seeds are in, the nearest to the question (else the best report above the floor); global returns reports and the chunks they cite (the whole collection by weight where asked, or where the router found no subject and no seed; ranked against the subject where it names one but no entity, or by weight where none clears the floor; nothing where the question names a subject no chunk holds, subject_absent, unless whole_collection is asked); vector, and local without a seed, the fused vector and lexical chunks.';

CREATE OR REPLACE FUNCTION kgrag_private.search_caveats(
    reason text, result kgrag.search_row[], route text, has_vector boolean, opts jsonb, subject_absent boolean)
RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    IF EXISTS (SELECT 1 FROM unnest(result) AS x  -- the entities returned: bounded by the rows
                 JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = x.ref_id
                WHERE x.kind = 'entity'
                  AND (e.answer_stale
                       OR EXISTS (SELECT 1 FROM kgrag_private.connected_in_no_community AS u
                                   WHERE u.tenant_id = t AND u.entity_id = e.entity_id))) THEN
        reason := reason || '; the graph is stale around these results (connected entities in no community yet, or answers of '
                            'changed documents): run `pgkgrag build` (SELECT * FROM kgrag.staleness)';
    END IF;
    IF NOT has_vector THEN
        reason := reason || '; no question vector: vector search skipped, text matched by entity linking and full-text search';
    END IF;
    IF route IN ('global', 'mixed') THEN
        IF NOT EXISTS (SELECT 1 FROM kgrag.community_report AS r WHERE r.tenant_id = t) THEN
            reason := reason || '; this tenant has no community reports yet: run `pgkgrag build`';
        ELSIF EXISTS (SELECT 1 FROM kgrag.community_report AS r WHERE r.tenant_id = t AND r.stale) THEN
            reason := reason || format('; %s community reports are stale (documents changed since they were written) and '
                                       'were left out: run `pgkgrag build`',
                                       (SELECT count(*) FROM kgrag.community_report AS r WHERE r.tenant_id = t AND r.stale));
        END IF;
    END IF;
    IF cardinality(result) = 0 AND NOT subject_absent THEN  -- an absent subject is reason enough
        IF NOT EXISTS (SELECT 1 FROM kgrag.document AS d WHERE d.tenant_id = t) THEN
            reason := format('tenant %s has no documents (%s)', quote_literal(t), reason);
            -- said to every client, not only in kgrag.last_search(): a wrong tenant name looks like this
            RAISE NOTICE 'tenant % has no documents: the search found nothing to search', quote_literal(t)
                USING HINT = 'Check the name (SELECT * FROM kgrag.tenants() lists the tenants with documents), or ingest first.';
        ELSE
            reason := format('nothing cleared the floors (%s): no entity seed, no chunk above similarity %s%s, no lexical '
                             'match covering %s of the question''s words, no report above similarity %s',
                             reason, opts ->> 'chunk_min_similarity',
                             CASE WHEN (opts ->> 'chunk_alone_min_similarity')::float8 > (opts ->> 'chunk_min_similarity')::float8
                                  THEN format(' (%s where nothing else matched: the median similarity of two of the '
                                              'collection''s passages, setting chunk_spread)', opts ->> 'chunk_alone_min_similarity')
                                  ELSE '' END,
                             opts ->> 'lexical_min_coverage', opts ->> 'report_min_similarity');
        END IF;
    END IF;
    RETURN reason;
END
$$;
COMMENT ON FUNCTION kgrag_private.search_caveats(text, kgrag.search_row[], text, boolean, jsonb, boolean) IS
'Private. Returns a search''s reason with what the caller should know added: the graph stale around the entities returned, no question vector, no or stale community reports for the global and mixed routes, and for no row at all, that the tenant has no documents (also raised as a NOTICE, which every client shows) or that nothing cleared the floors (naming them, and the median passage similarity a vector chunk alone must clear where it is higher).';

CREATE OR REPLACE FUNCTION kgrag_private.log_search_result(
    question text, question_vec vector, route text, reason text, seeds text[], returned kgrag.search_row[],
    started timestamptz, fallback boolean, opts jsonb)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    entry jsonb;  -- the query log row
BEGIN
    IF NOT (opts ->> 'log')::boolean THEN
        RETURN reason;
    END IF;
    IF current_setting('transaction_read_only')::boolean THEN
        RETURN reason || ' (not logged in kgrag.query_log: the transaction is read-only)';
    END IF;
    entry := jsonb_build_object(
        'route', route, 'reason', reason,
        'seeds', to_jsonb(seeds),
        'paths', COALESCE(NULLIF(current_setting('kgrag.paths_walked', true), ''), '0')::integer,
        'rows', cardinality(returned), 'ms', extract(epoch FROM clock_timestamp() - started) * 1000,
        'fallback', fallback,
        'chunks', to_jsonb(ARRAY(SELECT x.ref_id FROM unnest(returned) AS x WHERE x.kind = 'chunk')),
        'embedder', kgrag.setting('embedder') #>> '{}', 'revision', kgrag.version(),
        'question', CASE WHEN (kgrag.setting('log_question_text') #>> '{}')::boolean THEN question END);
    IF current_setting('kgrag.defer_log', true) = 'on' THEN
        PERFORM set_config('kgrag.deferred_log', entry::text, true);  -- kgrag.context_blocks logs it
    ELSE
        PERFORM kgrag_private.log_entry(entry, NULL);
    END IF;
    RETURN reason;
END
$$;
COMMENT ON FUNCTION kgrag_private.log_search_result(text, vector, text, text, text[], kgrag.search_row[], timestamptz, boolean, jsonb) IS
'Private. Logs a search in kgrag.query_log where the option log says so (the chunks returned, the tenant''s embedder and the schema revision, so that a past answer can be explained; the question text only where the setting log_question_text allows; inside kgrag.context_blocks, the entry is left for it to log with the characters it packed) and returns the reason, which says so when a read-only transaction (a hot standby) cannot log.';

CREATE OR REPLACE FUNCTION kgrag_private.count_caveat(count_rule text, subject text, rows_in kgrag.search_row[])
RETURNS TABLE (said text, result kgrag.search_row[])
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    matching jsonb := kgrag_private.subject_count(subject, cardinality(rows_in));
BEGIN
    IF (matching ->> 'chunks')::integer = 0 AND NOT EXISTS (SELECT 1 FROM jsonb_each_text(matching -> 'entities')) THEN
        -- no word of it in any chunk, no entity type of that name: a zero would be a guess
        said := format('; the question asks for a count or a complete list (rule %s): no chunk holds every word of "%s" '
                       'and no entity type is called so, so the count is unknown, not zero (the documents may say it '
                       'in other words or in another language); %s rows are shown%s', count_rule, subject,
                       cardinality(rows_in),
                       CASE WHEN cardinality(rows_in) > 0 THEN ', found by meaning or by name: not a count' ELSE '' END);
        matching := matching || '{"known": false}';
    ELSE
        said := format('; the question asks for a count or a complete list (rule %s): %s chunks in %s documents hold every word of "%s"',
                       count_rule,
                       CASE WHEN (matching ->> 'capped')::boolean THEN 'more than ' ELSE '' END || (matching ->> 'chunks'),
                       CASE WHEN (matching ->> 'capped')::boolean THEN 'at least ' ELSE '' END || (matching ->> 'documents'),
                       subject)
                || COALESCE((SELECT ', the graph holds ' || string_agg(format('%s entities of type %s', e.value, e.key), ', ' ORDER BY e.key)
                               FROM jsonb_each_text(matching -> 'entities') AS e), '')
                || format('; %s rows are shown: a count or a list made from them alone may be incomplete',
                          cardinality(rows_in));
        matching := matching || '{"known": true}';
    END IF;
    result := ARRAY(SELECT (x.rank, x.ref_id, x.kind, x.source, x.score, x.route, x.reason,
                            x.payload || jsonb_build_object('matching', matching))::kgrag.search_row
                      FROM unnest(rows_in) WITH ORDINALITY AS x(rank, ref_id, kind, source, score, route, reason, payload, o)
                     ORDER BY x.o);
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.count_caveat(text, text, kgrag.search_row[]) IS
'Private. For a question that asks how many or for every item (a count rule of kgrag.router_rule matched): what the reason adds (how many chunks and documents hold the subject, how many entities of the types it names, and that only the rows shown were returned; where no chunk holds its words and no entity type has its name, that the count is unknown, not zero: the documents may say it otherwise, in another language) and the rows with payload.matching (kgrag_private.subject_count; known = false for an unknown count).';

CREATE OR REPLACE FUNCTION kgrag_private.leave_last_search(route text, reason text, reports text[]) RETURNS void
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT pg_catalog.set_config('kgrag.last_route', COALESCE(route, ''), true),
           pg_catalog.set_config('kgrag.last_reason', COALESCE(reason, ''), true),
           pg_catalog.set_config('kgrag.last_reports', COALESCE(reports, '{}')::text, true)
$$;
COMMENT ON FUNCTION kgrag_private.leave_last_search(text, text, text[]) IS
'Private. Leaves, for the rest of the transaction on this node, what kgrag.last_search() returns: the last search''s route, reason and community reports (ids in rank order). kgrag_private.search_at calls it where it runs, and the public functions that call it again where they run (on Citus, the coordinator, while the search ran on a worker).';

CREATE OR REPLACE FUNCTION kgrag_private.search_at(
    tenant text, question_vec vector, route text, question text, k integer, options jsonb)
RETURNS TABLE (result_rows kgrag.search_row[], last_route text, last_reason text, last_reports text[])
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = auto  -- cached plans where it runs (use_tenant forces custom ones on Citus, for the
                            -- coordinator's UPDATEs; a delegated read runs every statement on one worker)
                            -- but never a generic plan of a one-shard read of one table (Citus's fast
                            -- path): Citus 14.0.1 plans such a plan's shard query again on every run and
                            -- keeps each plan (citusdata/citus#8783), and a worker's connection grew by
                            -- about 1 MB a search. The functions holding such a read force custom plans
                            -- (fts_probe, paths_relations, log_search for the upsert that counts searches over
                            -- the log rate), or run it with EXECUTE (route_at, link_entities_at,
                            -- context_blocks_at).
                            -- tests/citus/test_delegation.py watches a worker's connection over the read
                            -- entry points as a reader calls them, within and over the log rate.
AS $$
DECLARE
    started timestamptz := clock_timestamp();
    budget_ms integer := kgrag.setting('search_timeout_ms')::integer;
    deadline timestamptz := clock_timestamp() + budget_ms * interval '1 millisecond';
    opts jsonb;
    decided record;
    ran record;
    rows_out kgrag.search_row[];
    why text;
    counted record;
BEGIN
    PERFORM kgrag_private.check_delegated_tenant(tenant);  -- fails closed before anything else is read
    -- one embedder for the whole search: kgrag.reembed_switch takes this lock exclusively, so it waits
    -- for the searches in flight, and a search it overtook reads the new embedder throughout (one
    -- that began before it would otherwise check the question's vector against the old model and
    -- then compare it with the new model's vectors, finding nothing)
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('kgrag.embedder:' || tenant, 0));
    question_vec := kgrag_private.fit_vector(question_vec);  -- a narrower model's, zero-padded
    PERFORM kgrag_private.check_search_input(question_vec, route, question, k);
    opts := kgrag_private.search_options(options);
    PERFORM set_config('kgrag.paths_walked', '0', true);
    PERFORM set_config('kgrag.search_deadline', deadline::text, true);  -- the walk keeps to it too

    SELECT * INTO decided FROM kgrag_private.search_route(question_vec, search_at.route, question, options, opts);
    SELECT * INTO ran FROM kgrag_private.search_rows(decided.route, search_at.route, question_vec, question,
                                                     decided.seeds, decided.named_seeds, k, opts, decided.subject,
                                                     decided.subject_absent);
    rows_out := ran.result;
    why := decided.reason || ran.said;
    IF ran.over_budget IS NOT NULL AND cardinality(rows_out) = 0 THEN  -- nothing to return instead: the error stands
        RAISE EXCEPTION '%', ran.over_budget
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
    why := kgrag_private.search_caveats(why, rows_out, decided.route, question_vec IS NOT NULL, opts,
                                        decided.subject_absent);
    IF decided.count_rule IS NOT NULL AND decided.subject IS NOT NULL THEN  -- how many match, of which k are shown
        SELECT c.said, c.result INTO counted FROM kgrag_private.count_caveat(decided.count_rule, decided.subject, rows_out) AS c;
        why := why || counted.said;
        rows_out := counted.result;
    END IF;
    why := kgrag_private.log_search_result(question, question_vec, decided.route, why, decided.seeds,
                                           rows_out, started, ran.over_budget IS NOT NULL, opts);
    result_rows := ARRAY(SELECT ((row_number() OVER ())::integer, x.ref_id, x.kind, x.source, x.score, decided.route, why,
                                 x.payload)::kgrag.search_row
                           FROM unnest(rows_out) AS x);
    last_route := decided.route;
    last_reason := why;
    last_reports := ARRAY(SELECT x.ref_id FROM unnest(rows_out) AS x WHERE x.kind = 'community');
    PERFORM kgrag_private.leave_last_search(last_route, last_reason, last_reports);
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.search_at(text, vector, text, text, integer, jsonb) IS
'Private. kgrag.kgrag_search itself, for the tenant the transaction acts for (tenant: checked against it), as one row: the rows found, and the route, reason and community reports kgrag.last_search() returns. On a Citus cluster a delegated function (kgrag_private.delegate_calls): the public function''s one call runs here on the worker holding the tenant''s shards, the walk, the fusion and the log next to them.';

CREATE OR REPLACE FUNCTION kgrag.kgrag_search(
    question_vec vector DEFAULT NULL, route text DEFAULT 'auto', question text DEFAULT NULL, k integer DEFAULT 10,
    options jsonb DEFAULT '{}')
RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    done record;
BEGIN
    -- one statement, its values bound (EXECUTE ... USING): on Citus, one call to the tenant's worker
    EXECUTE 'SELECT * FROM kgrag_private.search_at($1, $2, $3, $4, $5, $6)'
       INTO done USING kgrag.current_tenant(), question_vec, route, question, k, options;
    PERFORM kgrag_private.leave_last_search(done.last_route, done.last_reason, done.last_reports);
    RETURN QUERY SELECT * FROM unnest(done.result_rows);
END
$$;
COMMENT ON FUNCTION kgrag.kgrag_search(vector, text, text, integer, jsonb) IS
'The entry point. Returns one row per result (rank, ref_id, kind, source, score, route, reason, payload) for a question embedding and its text (either may be NULL, not both: from psql, kgrag_search(question => ''...'') searches by the text alone, with entity linking, full-text search, the graph and the reports ranked by their words) and a route: auto (the router picks, see kgrag.route), local, global, mixed or vector. k bounds the chunk rows; options (jsonb) override hops, degree_cap, entities, reports, seeds, level, relations, as_of, the floors (chunk_min_similarity, entity_seed_min_similarity, report_min_similarity, lexical_min_coverage; chunk_alone_min_similarity: where the question has no seed and no lexical match (always, for a search by a vector without the question''s text), a vector chunk must also clear it, by default the median similarity of two of the tenant''s passages, kgrag.refresh_chunk_spread, so that an unrelated question returns nothing whatever the embedder''s scale; -1 turns it off), rrf_k, graph_weight, whole_collection (global route: every report of the level by weight; formerly shape), seed_entities (entity ids, names or aliases: the local route from these, whatever the router would pick), direction (out, in or both: how the walk follows typed edges; default out), graph_ranking (paths: the graph''s chunks are those of the entities the walk reached, nearest first; pagerank: by Personalized PageRank mass, see kgrag.personalized_pagerank, source pagerank and payload.ppr_mass; both: the two lists fused; default setting search_graph_ranking; the reason says which ranked them), neighbours (add after each chunk the chunk before and after it in its document, source neighbour; default setting search_neighbours) and log (whether this search is logged; default setting query_log; never in a read-only transaction, where the reason says so). payload.evidence_refs always names chunks of the tenant. A walk that runs out of its budget (khop_timeout_ms, max_paths_walked, search_timeout_ms) does not fail the search: the route falls back to vector and lexical chunks, the reason says so, each such row has payload.coverage = reduced, and kgrag.query_log.fallback is true; the error stands only when the fallback finds nothing either. A question about the collection (a global rule) naming a subject no chunk holds returns no rows, and says so. A question asking how many or for every item (a count rule: how many, all the, quantos, todos os) says in its reason and in each row''s payload.matching how many chunks, documents and entities of the type it names match, and that only the rows returned are shown. A question with nothing relevant returns no rows (a tenant without documents says so), and the reason is logged (kgrag.query_log) and left for kgrag.last_search().';

CREATE OR REPLACE FUNCTION kgrag.last_search() RETURNS TABLE (route text, reason text, reports text[])
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT NULLIF(pg_catalog.current_setting('kgrag.last_route', true), ''),
           NULLIF(pg_catalog.current_setting('kgrag.last_reason', true), ''),
           NULLIF(pg_catalog.current_setting('kgrag.last_reports', true), '')::text[]
$$;
COMMENT ON FUNCTION kgrag.last_search() IS
'Returns the route, the reason and the community reports (their ids, in rank order: the maps of the global and mixed routes) of the last kgrag_search of this transaction (one row; NULLs before any search): what a search that returned no row leaves behind, and what a map step over the reports reads (kgrag.report_context) without searching again, kgrag.context included.';

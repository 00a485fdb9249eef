-- kgrag_search: the router and the local, global, mixed and vector routes, each answer with
-- citations that resolve to real chunks, the context packer and the query log.

CREATE OR REPLACE FUNCTION kgrag._search_options(options jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    allowed constant text[] := ARRAY['hops', 'degree_cap', 'entities', 'reports', 'seeds', 'level', 'relations',
                                     'as_of', 'chunk_min_similarity', 'entity_seed_min_similarity',
                                     'report_min_similarity', 'lexical_min_coverage', 'rrf_k', 'graph_weight', 'shape'];
    unknown text;
    merged jsonb;
BEGIN
    IF options IS NULL OR jsonb_typeof(options) <> 'object' THEN
        RAISE EXCEPTION 'options must be a jsonb object, e.g. {"hops": 2, "degree_cap": 4}' USING ERRCODE = '22023';
    END IF;
    SELECT string_agg(key, ', ' ORDER BY key) INTO unknown FROM jsonb_object_keys(options) AS key
     WHERE key <> ALL (allowed);
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'unknown search option(s): %', unknown
            USING ERRCODE = '22023', HINT = 'Known options: ' || array_to_string(allowed, ', ');
    END IF;
    merged := jsonb_build_object(
        'hops', kgrag.setting('search_hops'), 'degree_cap', kgrag.setting('search_degree_cap'),
        'entities', kgrag.setting('search_entities'), 'reports', kgrag.setting('search_reports'),
        'seeds', kgrag.setting('search_seeds'), 'level', 0, 'relations', NULL, 'as_of', NULL,
        'chunk_min_similarity', kgrag.setting('chunk_min_similarity'),
        'entity_seed_min_similarity', kgrag.setting('entity_seed_min_similarity'),
        'report_min_similarity', kgrag.setting('report_min_similarity'),
        'lexical_min_coverage', kgrag.setting('lexical_min_coverage'), 'rrf_k', kgrag.setting('rrf_k'),
        'graph_weight', kgrag.setting('rrf_graph_weight'),
        'shape', false) || options;
    BEGIN  -- every value must have the type its use needs
        PERFORM (merged ->> 'hops')::integer, (merged ->> 'degree_cap')::integer, (merged ->> 'entities')::integer,
                (merged ->> 'reports')::integer, (merged ->> 'seeds')::integer, (merged ->> 'level')::integer,
                (merged ->> 'as_of')::timestamptz, (merged ->> 'chunk_min_similarity')::float8,
                (merged ->> 'entity_seed_min_similarity')::float8, (merged ->> 'report_min_similarity')::float8,
                (merged ->> 'lexical_min_coverage')::float8, (merged ->> 'rrf_k')::integer,
                (merged ->> 'graph_weight')::float8,
                (merged ->> 'shape')::boolean,
                ARRAY(SELECT jsonb_array_elements_text(COALESCE(merged -> 'relations', '[]'))
                       WHERE jsonb_typeof(merged -> 'relations') IS DISTINCT FROM 'null');
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION 'bad search option value: %', SQLERRM
            USING ERRCODE = '22023', HINT = 'hops, degree_cap, entities, reports, seeds, level, rrf_k are integers; '
                                            '*_similarity and lexical_min_coverage numbers; as_of a timestamp; '
                                            'relations an array of relation types; shape a boolean.';
    END;
    IF (merged ->> 'hops')::integer NOT BETWEEN 0 AND kgrag.setting('max_hops')::integer THEN
        RAISE EXCEPTION 'option hops = % is outside 0..% (setting max_hops)', merged ->> 'hops',
            kgrag.setting('max_hops') USING ERRCODE = '22023';
    END IF;
    IF (merged ->> 'degree_cap')::integer < 1 OR (merged ->> 'entities')::integer NOT BETWEEN 0 AND 100
       OR (merged ->> 'reports')::integer NOT BETWEEN 1 AND 1000 OR (merged ->> 'seeds')::integer NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'options out of range: degree_cap >= 1 (or null), entities 0..100, reports 1..1000, seeds 1..100'
            USING ERRCODE = '22023';
    END IF;
    RETURN merged;
END
$$;
COMMENT ON FUNCTION kgrag._search_options(jsonb) IS
'Private. Returns the search options completed with the tenant''s settings; raises a clear error for an unknown option or a value of the wrong type.';

CREATE OR REPLACE FUNCTION kgrag.route(question_vec vector, question text DEFAULT NULL, options jsonb DEFAULT '{}')
RETURNS TABLE (route text, reason text, seeds text[], linked text[], profile_gap double precision, marker text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    opts jsonb := kgrag._search_options(options);
    n_seeds integer := (opts ->> 'seeds')::integer;
    folded text := kgrag.fold(COALESCE(question, ''));
    v_linked text[] := '{}';
    vector_seeds text[] := '{}';
    profile float8[];
    gap float8;
    flat boolean;
    global_rule record;
    mixed_rule record;
    named text;
BEGIN
    IF question IS NOT NULL THEN
        -- Entities the question names. One without edges cannot seed a walk, but its own chunks
        -- are still evidence about the subject: it stays, at hop 0.
        v_linked := ARRAY(SELECT l.entity_id FROM kgrag.link_entities(question, include_isolated => true) AS l
                           ORDER BY l.score DESC, l.entity_id LIMIT n_seeds);
    END IF;
    -- The shape of the entity similarity profile: a question naming a subject peaks, a question
    -- about the whole collection (or about nothing here) is flat.
    profile := ARRAY(SELECT p.similarity FROM kgrag.search_entities_vector(question_vec, 4, profile => true) AS p
                      ORDER BY p.rank);
    gap := CASE WHEN cardinality(profile) = 0 THEN 0 ELSE profile[1] - profile[cardinality(profile)] END;
    flat := cardinality(profile) >= 4 AND gap < kgrag.setting('router_flat_gap')::float8;
    -- Vector search seeds the traversal when the words name nothing the graph knows, and only
    -- when its profile peaks: a name found in the text is more precise than a neighbour in space.
    IF NOT flat AND cardinality(v_linked) = 0 THEN
        vector_seeds := ARRAY(SELECT s.entity_id FROM kgrag.search_entities_vector(
                                     question_vec, n_seeds, (opts ->> 'entity_seed_min_similarity')::float8) AS s
                               ORDER BY s.rank);
    END IF;
    seeds := v_linked || ARRAY(SELECT x FROM unnest(vector_seeds) AS x WHERE x <> ALL (v_linked));
    linked := v_linked;
    profile_gap := gap;

    SELECT r.rule_id, r.route, r.description INTO global_rule
      FROM (SELECT DISTINCT ON (rr.rule_id) rr.* FROM kgrag.router_rule AS rr
             WHERE rr.tenant_id IN ('*', t) ORDER BY rr.rule_id, (rr.tenant_id = '*')) AS r
     WHERE r.enabled AND r.route = 'global' AND folded ~* r.pattern
     ORDER BY r.rule_id LIMIT 1;
    SELECT r.rule_id, r.route, r.description INTO mixed_rule
      FROM (SELECT DISTINCT ON (rr.rule_id) rr.* FROM kgrag.router_rule AS rr
             WHERE rr.tenant_id IN ('*', t) ORDER BY rr.rule_id, (rr.tenant_id = '*')) AS r
     WHERE r.enabled AND r.route = 'mixed' AND folded ~* r.pattern
     ORDER BY r.rule_id LIMIT 1;
    SELECT string_agg(e.name, ', ' ORDER BY array_position(seeds, e.entity_id)) INTO named
      FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.entity_id = ANY (seeds[1:3]);

    IF global_rule.rule_id IS NOT NULL THEN
        route := 'global';
        marker := global_rule.rule_id;
        reason := format('the question %s (rule %s)', global_rule.description, global_rule.rule_id)
                  || CASE WHEN cardinality(seeds) = 0 THEN ' without naming a subject: every report of the level, by weight'
                          ELSE format(': community reports ranked against it (it names %s)', named) END;
    ELSIF cardinality(seeds) = 0 THEN
        route := 'vector';
        reason := 'no entity of the graph is named'
                  || CASE WHEN flat THEN format(' and none stands out (top-1 minus top-4 similarity %s < %s)',
                                               round(gap::numeric, 3), kgrag.setting('router_flat_gap'))
                          ELSE format(' or close enough (best entity similarity %s < %s)',
                                      COALESCE(round(profile[1]::numeric, 3)::text, 'none'),
                                      opts ->> 'entity_seed_min_similarity') END
                  || ': vector and lexical search over the chunks';
    ELSIF mixed_rule.rule_id IS NOT NULL THEN
        route := 'mixed';
        marker := mixed_rule.rule_id;
        reason := format('the question names %s and %s (rule %s): a community report as the map, the chunks '
                         'around the subject as evidence', named, regexp_replace(mixed_rule.description,
                         '^names a subject and ', ''), mixed_rule.rule_id);
    ELSE
        route := 'local';
        reason := format('the question names %s: the evidence is in the chunks around it', named);
    END IF;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag.route(vector, text, jsonb) IS
'Returns the route the router picks for a question and why: (route, reason, seeds, linked, profile_gap, marker). Aggregation markers (kgrag.router_rule, route global) send it to global; no entity named or close to it (entity linking and a peaked entity-similarity profile above the seed floor) to vector; a named subject with a broad-context marker to mixed; a named subject to local. Seeds come from entity linking, or, when it finds none, from entity vector search above the seed floor when the similarity profile peaks. profile_gap = top-1 minus top-4 entity similarity.';

CREATE OR REPLACE FUNCTION kgrag._fused_chunks(lists jsonb, k integer, opts jsonb) RETURNS SETOF kgrag.search_row
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- RRF over the named chunk lists; each row says which list ranked it best.
    SELECT NULL::integer, f.ref_id, 'chunk', b.source, f.score, NULL, NULL,
           jsonb_build_object('ranks', f.ranks, 'evidence_refs', jsonb_build_array(f.ref_id),
                              'doc_id', c.doc_id, 'title', c.title)
      FROM kgrag.rrf(lists, (opts ->> 'rrf_k')::integer, jsonb_build_object('graph', (opts ->> 'graph_weight')::float8)) AS f
      JOIN kgrag.chunk AS c ON c.tenant_id = kgrag.current_tenant() AND c.chunk_id = f.ref_id
     CROSS JOIN LATERAL (SELECT r.key AS source FROM jsonb_each_text(f.ranks) AS r
                          ORDER BY r.value::integer, array_position(ARRAY['graph', 'vector', 'lexical'], r.key)
                          LIMIT 1) AS b
     ORDER BY f.rank
     LIMIT k
$$;
COMMENT ON FUNCTION kgrag._fused_chunks(jsonb, integer, jsonb) IS
'Private. Returns the k best chunks of the RRF fusion of named chunk lists as search rows; source = the list that ranked the chunk best, payload.ranks = its rank in every list.';

CREATE OR REPLACE FUNCTION kgrag._chunk_lists(question_vec vector, question text, k integer, opts jsonb)
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT jsonb_build_object(
        'vector', COALESCE((SELECT jsonb_agg(v.chunk_id ORDER BY v.rank)
                              FROM kgrag.search_chunks_vector(question_vec, k) AS v
                             WHERE v.similarity >= (opts ->> 'chunk_min_similarity')::float8), '[]'),
        'lexical', COALESCE((SELECT jsonb_agg(l.chunk_id ORDER BY l.rank)
                               FROM kgrag.search_chunks_lexical(question, k, 'any', NULL,
                                                                (opts ->> 'lexical_min_coverage')::float8) AS l
                              WHERE question IS NOT NULL), '[]'))
$$;
COMMENT ON FUNCTION kgrag._chunk_lists(vector, text, integer, jsonb) IS
'Private. Returns {"vector": [...], "lexical": [...]}: the chunk ids of vector search above the similarity floor and of lexical search above the coverage floor, best first.';

CREATE OR REPLACE FUNCTION kgrag._local_rows(question_vec vector, question text, seeds text[], k integer, opts jsonb)
RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    lists jsonb;
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS kgrag_reached (
        entity_id text, hop integer, path text[], seed text, weight float8, position integer
    ) ON COMMIT DROP;
    TRUNCATE pg_temp.kgrag_reached;
    INSERT INTO pg_temp.kgrag_reached
    SELECT r.entity_id, r.hop, r.path, r.seed,
           COALESCE((SELECT max(g.weight) FROM kgrag.edge AS g
                      WHERE g.tenant_id = t AND g.src = r.path[cardinality(r.path) - 1] AND g.dst = r.entity_id), 0),
           NULL
      FROM kgrag.k_hop(seeds, (opts ->> 'hops')::integer, (opts ->> 'degree_cap')::integer,
                       CASE WHEN jsonb_typeof(opts -> 'relations') = 'array'
                            THEN ARRAY(SELECT jsonb_array_elements_text(opts -> 'relations')) END,
                       (opts ->> 'as_of')::timestamptz) AS r;
    -- closest first, then the strongest link, then the seed order
    UPDATE pg_temp.kgrag_reached AS r SET position = o.position
      FROM (SELECT x.entity_id, row_number() OVER (ORDER BY x.hop, x.weight DESC,
                   array_position(seeds, x.seed), x.entity_id COLLATE "C") AS position
              FROM pg_temp.kgrag_reached AS x) AS o
     WHERE o.entity_id = r.entity_id;

    -- The graph's chunk list: each reached entity's answer chunk in that order, then the other
    -- chunks that cite reached entities (nearest first, those citing more of them first).
    lists := kgrag._chunk_lists(question_vec, question, k, opts) || jsonb_build_object('graph', (
        SELECT COALESCE(jsonb_agg(x.chunk_id ORDER BY x.tier, x.key1, x.key2 DESC, x.chunk_id), '[]')
          FROM (SELECT DISTINCT ON (u.chunk_id) u.* FROM (
                    SELECT e.answer_chunk_id AS chunk_id, 0 AS tier, r.position::float8 AS key1, 0::float8 AS key2
                      FROM pg_temp.kgrag_reached AS r
                      JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = r.entity_id
                     WHERE e.answer_chunk_id IS NOT NULL
                    UNION ALL
                    SELECT m.chunk_id, 1, min(r.hop), count(*)
                      FROM pg_temp.kgrag_reached AS r
                      JOIN kgrag.mention AS m ON m.tenant_id = t AND m.entity_id = r.entity_id
                     GROUP BY m.chunk_id) AS u
                 ORDER BY u.chunk_id, u.tier, u.key1) AS x));

    RETURN QUERY
    SELECT NULL::integer, r.entity_id, 'entity', 'graph', 1.0::float8 / (1 + r.hop), NULL::text, NULL::text,
           jsonb_build_object(
               'name', e.name, 'type', e.type, 'seed', r.seed, 'hop', r.hop, 'path', to_jsonb(r.path),
               'answer', e.answer,
               'evidence_refs', to_jsonb(ARRAY(
                   SELECT y.chunk_id FROM (
                       SELECT DISTINCT ON (z.chunk_id) z.chunk_id, z.o FROM (
                           SELECT e.answer_chunk_id AS chunk_id, 0 AS o WHERE e.answer_chunk_id IS NOT NULL
                           UNION ALL
                           SELECT m.chunk_id, 1 FROM kgrag.mention AS m
                            WHERE m.tenant_id = t AND m.entity_id = r.entity_id) AS z
                        ORDER BY z.chunk_id, z.o) AS y
                    ORDER BY y.o, y.chunk_id COLLATE "C" LIMIT 3)),
               'relations', COALESCE((
                   SELECT jsonb_agg(jsonb_build_object('src', p.src, 'rel', p.rel, 'dst', p.dst) ORDER BY p.step)
                     FROM kgrag.path_relations(r.path) AS p), '[]'))
      FROM pg_temp.kgrag_reached AS r
      JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = r.entity_id
     WHERE r.position <= (opts ->> 'entities')::integer
     ORDER BY r.position;
    RETURN QUERY SELECT * FROM kgrag._fused_chunks(lists, k, opts);
END
$$;
COMMENT ON FUNCTION kgrag._local_rows(vector, text, text[], integer, jsonb) IS
'Private. The local route: entities within hops of the seeds (degree cap, relation and as_of filters), nearest first, with their answers, paths and evidence; then chunks fused by RRF from three lists: the graph''s (answer chunks of the reached entities, then chunks citing them), vector search and lexical search.';

CREATE OR REPLACE FUNCTION kgrag._global_rows(question_vec vector, shape boolean, k integer, opts jsonb)
RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n integer := (opts ->> 'reports')::integer;
    lvl integer := (opts ->> 'level')::integer;
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS kgrag_maps (community_id text, score float8, position integer) ON COMMIT DROP;
    TRUNCATE pg_temp.kgrag_maps;
    IF shape THEN
        -- the shape of the collection: every report of the level, by weight (distinct documents)
        INSERT INTO pg_temp.kgrag_maps
        SELECT r.community_id, r.weight, row_number() OVER (ORDER BY r.weight DESC, r.community_id COLLATE "C")
          FROM kgrag.community_report AS r
          JOIN kgrag.community AS c ON c.tenant_id = t AND c.community_id = r.community_id AND c.level = lvl
         WHERE r.tenant_id = t
         ORDER BY r.weight DESC, r.community_id COLLATE "C" LIMIT n;
    ELSE
        INSERT INTO pg_temp.kgrag_maps
        SELECT s.community_id, s.similarity, row_number() OVER (ORDER BY s.rank)
          FROM kgrag.search_reports_vector(question_vec, n, lvl) AS s
         WHERE s.similarity >= (opts ->> 'report_min_similarity')::float8;
    END IF;
    -- the reports are the map; what they cite (the chunks that exist) is the evidence
    RETURN QUERY
    SELECT NULL::integer, m.community_id, 'community', 'community', m.score, NULL::text, NULL::text,
           jsonb_build_object('title', r.title, 'report', r.report, 'weight', r.weight, 'level', c.level,
                              'stale', r.stale, 'generator', r.generator,
                              'evidence_refs', to_jsonb(ARRAY(
                                  SELECT x.id FROM unnest(r.evidence_chunk_ids) WITH ORDINALITY AS x(id, o)
                                   WHERE EXISTS (SELECT 1 FROM kgrag.chunk AS ch WHERE ch.tenant_id = t AND ch.chunk_id = x.id)
                                   ORDER BY x.o)))
      FROM pg_temp.kgrag_maps AS m
      JOIN kgrag.community_report AS r ON r.tenant_id = t AND r.community_id = m.community_id
      JOIN kgrag.community AS c ON c.tenant_id = t AND c.community_id = m.community_id
     ORDER BY m.position;
    RETURN QUERY
    SELECT NULL::integer, x.chunk_id, 'chunk', 'community', x.score, NULL::text, NULL::text,
           jsonb_build_object('via', x.community_id, 'evidence_refs', jsonb_build_array(x.chunk_id),
                              'doc_id', ch.doc_id, 'title', ch.title)
      FROM (SELECT DISTINCT ON (e.id) e.id AS chunk_id, m.community_id, m.score, m.position, e.o
              FROM pg_temp.kgrag_maps AS m
              JOIN kgrag.community_report AS r ON r.tenant_id = t AND r.community_id = m.community_id
             CROSS JOIN LATERAL unnest(r.evidence_chunk_ids) WITH ORDINALITY AS e(id, o)
             ORDER BY e.id, m.position, e.o) AS x
      JOIN kgrag.chunk AS ch ON ch.tenant_id = t AND ch.chunk_id = x.chunk_id
     ORDER BY x.position, x.o
     LIMIT _global_rows.k;
END
$$;
COMMENT ON FUNCTION kgrag._global_rows(vector, boolean, integer, jsonb) IS
'Private. The global route: community reports of the chosen level (option level) ranked against the question above the report floor, or, for a question about the shape of the collection (shape), every report by weight; each report as the map (kind community), then up to k chunks they cite as evidence (kind chunk, payload.via = the community).';

CREATE OR REPLACE FUNCTION kgrag.kgrag_search(
    question_vec vector, route text DEFAULT 'auto', question text DEFAULT NULL, k integer DEFAULT 10,
    options jsonb DEFAULT '{}')
RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    started timestamptz := clock_timestamp();
    opts jsonb;
    decided record;
    chosen text;
    why text;
    rows_out kgrag.search_row[];
    lists jsonb;
BEGIN
    IF route IS NULL OR route NOT IN ('auto', 'local', 'global', 'mixed', 'vector') THEN
        RAISE EXCEPTION 'unknown route %: use auto, local, global, mixed or vector', quote_literal(COALESCE(route, 'NULL'))
            USING ERRCODE = '22023';
    END IF;
    PERFORM kgrag._check_k(k);
    PERFORM kgrag._check_question_vector(question_vec);
    IF question IS NOT NULL AND btrim(question) = '' THEN
        RAISE EXCEPTION 'the question text is empty: pass NULL to search by the vector alone' USING ERRCODE = '22023';
    END IF;
    opts := kgrag._search_options(options);
    PERFORM set_config('kgrag.paths_walked', '0', true);

    SELECT * INTO decided FROM kgrag.route(question_vec, question, options);
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
        rows_out := ARRAY(SELECT x FROM kgrag._global_rows(question_vec, false, k, opts || '{"reports": 1}') AS x
                           WHERE x.kind = 'community') || COALESCE(rows_out, '{}');
    ELSIF chosen = 'global' THEN
        rows_out := ARRAY(SELECT x FROM kgrag._global_rows(
                              question_vec,
                              (opts ->> 'shape')::boolean OR (kgrag_search.route = 'auto' AND cardinality(decided.seeds) = 0),
                              k, opts) AS x);
    ELSIF chosen = 'vector' OR (chosen = 'local' AND cardinality(decided.seeds) = 0) THEN
        lists := kgrag._chunk_lists(question_vec, question, k, opts);
        rows_out := ARRAY(SELECT x FROM kgrag._fused_chunks(lists, k, opts) AS x);
        IF chosen = 'local' THEN
            why := why || '; no seed: vector and lexical chunks only';
        END IF;
    END IF;
    rows_out := COALESCE(rows_out, '{}');
    IF cardinality(rows_out) = 0 THEN
        why := format('nothing cleared the floors (%s): no entity seed, no chunk above similarity %s, no lexical match '
                      'covering %s of the question''s words, no report above similarity %s',
                      why, opts ->> 'chunk_min_similarity', opts ->> 'lexical_min_coverage',
                      opts ->> 'report_min_similarity');
    END IF;

    PERFORM set_config('kgrag.last_route', chosen, true);
    PERFORM set_config('kgrag.last_reason', why, true);
    IF kgrag.setting('query_log')::boolean THEN
        INSERT INTO kgrag.query_log (tenant_id, question_hash, route, reason, seeds, paths_walked, rows_returned, ms)
        VALUES (t, md5(COALESCE(question, question_vec::text)), chosen, why, decided.seeds,
                COALESCE(NULLIF(current_setting('kgrag.paths_walked', true), ''), '0')::integer,
                cardinality(rows_out), extract(epoch FROM clock_timestamp() - started) * 1000);
    END IF;
    RETURN QUERY
    SELECT (row_number() OVER ())::integer, x.ref_id, x.kind, x.source, x.score, chosen, why, x.payload
      FROM unnest(rows_out) AS x;
END
$$;
COMMENT ON FUNCTION kgrag.kgrag_search(vector, text, text, integer, jsonb) IS
'The entry point. Returns one row per result (rank, ref_id, kind, source, score, route, reason, payload) for a question embedding, its text (optional, for entity linking, lexical search and the router''s markers) and a route: auto (the router picks, see kgrag.route), local, global, mixed or vector. k bounds the chunk rows; options (jsonb) override hops, degree_cap, entities, reports, seeds, level, relations, as_of, the floors and rrf_k. payload.evidence_refs always names chunks of the tenant. A question with nothing relevant returns no rows, and the reason is logged (kgrag.query_log) and left in the setting kgrag.last_reason.';

CREATE OR REPLACE FUNCTION kgrag.citations_resolvable(refs text[]) RETURNS boolean
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT refs IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM unnest(refs) AS r(id)
         WHERE r.id IS NULL
            OR NOT EXISTS (SELECT 1 FROM kgrag.chunk AS c WHERE c.tenant_id = kgrag.current_tenant() AND c.chunk_id = r.id))
$$;
COMMENT ON FUNCTION kgrag.citations_resolvable(text[]) IS
'Returns true when every reference is the id of a chunk of the current tenant (a community id, a deleted chunk or another tenant''s chunk makes it false). An empty array is true; NULL is false.';

CREATE OR REPLACE FUNCTION kgrag.cited_chunks(refs text[])
RETURNS TABLE (chunk_id text, doc_id text, title text, text text)
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT c.chunk_id, c.doc_id, d.title, c.text
      FROM (SELECT r.id, min(r.o) AS o FROM unnest(refs) WITH ORDINALITY AS r(id, o) GROUP BY r.id) AS x
      JOIN kgrag.chunk AS c ON c.tenant_id = kgrag.current_tenant() AND c.chunk_id = x.id
      JOIN kgrag.document AS d ON d.tenant_id = c.tenant_id AND d.doc_id = c.doc_id
     ORDER BY x.o
$$;
COMMENT ON FUNCTION kgrag.cited_chunks(text[]) IS
'Returns the chunks the references name, in the order given, once each: (chunk_id, doc_id, title of the document, text). References that do not resolve are left out (see kgrag.citations_resolvable).';

CREATE OR REPLACE FUNCTION kgrag.context_blocks(
    question_vec vector, route text DEFAULT 'auto', question text DEFAULT NULL, max_chars integer DEFAULT 4000,
    k integer DEFAULT 10, options jsonb DEFAULT '{}')
RETURNS TABLE (block integer, kind text, ref_id text, body text, chars integer)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    r record;
    candidate text;
    used integer := 0;
    n integer := 0;
    cost integer;
    seen text[] := '{}';
BEGIN
    IF max_chars IS NULL OR max_chars < 1 THEN
        RAISE EXCEPTION 'max_chars must be >= 1, got %', COALESCE(max_chars::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    FOR r IN SELECT * FROM kgrag.kgrag_search(question_vec, route, question, k, options) ORDER BY 1 LOOP
        IF r.kind = 'chunk' THEN
            CONTINUE WHEN r.ref_id = ANY (seen);
            SELECT format('[%s | %s] %s', c.doc_id, c.chunk_id, c.text) INTO candidate
              FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.chunk_id = r.ref_id;
        ELSIF r.kind = 'entity' THEN
            -- the answer and the relations that led to it count in the same budget
            candidate := format('[entity %s] %s', r.payload ->> 'name', COALESCE(r.payload ->> 'answer', ''))
                         || COALESCE(' (' || (r.payload -> 'evidence_refs' ->> 0) || ')', '')
                         || COALESCE((SELECT string_agg(E'\n  ' || COALESCE(s.name, x.rel ->> 'src') || ' -['
                                                        || COALESCE(x.rel ->> 'rel', '?') || ']-> '
                                                        || COALESCE(d.name, x.rel ->> 'dst'), '' ORDER BY x.i)
                                        FROM jsonb_array_elements(r.payload -> 'relations') WITH ORDINALITY AS x(rel, i)
                                        LEFT JOIN kgrag.entity AS s ON s.tenant_id = t AND s.entity_id = x.rel ->> 'src'
                                        LEFT JOIN kgrag.entity AS d ON d.tenant_id = t AND d.entity_id = x.rel ->> 'dst'), '');
        ELSE
            candidate := format('[map %s] %s', r.ref_id, r.payload ->> 'report');
        END IF;
        cost := length(candidate) + CASE WHEN n > 0 THEN 2 ELSE 0 END;  -- blocks are joined by a blank line
        CONTINUE WHEN used + cost > max_chars;
        used := used + cost;
        n := n + 1;
        IF r.kind = 'chunk' THEN
            seen := seen || r.ref_id;
        END IF;
        block := n;
        kind := r.kind;
        ref_id := r.ref_id;
        body := candidate;
        chars := length(candidate);
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION kgrag.context_blocks(vector, text, text, integer, integer, jsonb) IS
'Returns the context for an LLM as blocks, highest ranked first, within max_chars in total (blank-line separators included): community maps, entity answers with the relations of their path, and chunks tagged [doc_id | chunk_id], each chunk once. A block that does not fit is skipped and smaller ones after it may still fit.';

CREATE OR REPLACE FUNCTION kgrag.context(
    question_vec vector, route text DEFAULT 'auto', question text DEFAULT NULL, max_chars integer DEFAULT 4000,
    k integer DEFAULT 10, options jsonb DEFAULT '{}')
RETURNS text
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT COALESCE(string_agg(b.body, E'\n\n' ORDER BY b.block), '')
      FROM kgrag.context_blocks(question_vec, route, question, max_chars, k, options) AS b
$$;
COMMENT ON FUNCTION kgrag.context(vector, text, text, integer, integer, jsonb) IS
'Returns the context block for an LLM as one text of at most max_chars characters: kgrag.context_blocks joined by blank lines. Empty when the search returned nothing.';

-- The local route: the walk from the seeds, the graph's chunk list (by the walk's paths or by
-- Personalized PageRank), the seeds' own pages and the bridge pages they name, then the entities
-- reached and the chunks fused by RRF (kgrag_private.fused_chunks).

CREATE OR REPLACE FUNCTION kgrag_private.reached_entities(seeds text[], opts jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    rels text[] := CASE WHEN jsonb_typeof(opts -> 'relations') = 'array'
                        THEN ARRAY(SELECT jsonb_array_elements_text(opts -> 'relations')) END;
    rel_keys text[] := ARRAY(SELECT kgrag.relation_key(r) FROM unnest(rels) AS r WHERE r IS NOT NULL);
    f record;  -- the relations the walk follows: kgrag_private.walk_filter
    reached jsonb;
BEGIN
    SELECT * INTO f FROM kgrag_private.walk_filter((opts ->> 'as_of')::timestamptz, (opts ->> 'history')::boolean,
                                                   (opts ->> 'min_confidence')::float8);
    -- closest first, then the surest path, then the strongest last step, then the seed order
    WITH walked AS MATERIALIZED (
        SELECT x.* FROM kgrag.k_hop(seeds, (opts ->> 'hops')::integer, (opts ->> 'degree_cap')::integer, rels,
                                    (opts ->> 'as_of')::timestamptz, opts ->> 'direction', (opts ->> 'history')::boolean,
                                    (opts ->> 'min_confidence')::float8) AS x
    ), step AS (  -- every step of the paths, each pair of entities looked up once
        SELECT DISTINCT w.path[i] AS a, w.path[i + 1] AS b, w.directions[i] AS way
          FROM walked AS w CROSS JOIN LATERAL generate_series(1, cardinality(w.path) - 1) AS i
    ), linked AS (
        SELECT s.a, s.b, s.way, l.weight, l.confidence
          FROM step AS s
         CROSS JOIN LATERAL (
               SELECT max(g.weight) AS weight,  -- the strength of the link, either way, every relation
                      -- the surest edge the walk could take for this step (kgrag_private.walk_filter)
                      max(g.confidence) FILTER (
                          WHERE CASE WHEN s.way = 'out' THEN g.src = s.a ELSE g.src = s.b END
                            AND (rels IS NULL OR g.rel = ANY (rel_keys))
                            AND g.confidence >= f.min_conf
                            AND (f.at IS NULL OR ((g.valid_from IS NULL OR g.valid_from <= f.at)
                                                  AND (g.valid_to IS NULL OR g.valid_to > f.at)))
                            AND (NOT f.guarded OR g.rel <> 'CO_OCCURS' OR kgrag_private.pair_walkable(t, g.src, g.dst, f.at, f.min_conf)))
                          AS confidence
                 FROM kgrag.edge AS g
                WHERE g.tenant_id = t
                  AND ((g.src = s.a AND g.dst = s.b) OR (g.dst = s.a AND g.src = s.b))) AS l
    ), scored AS (
        SELECT w.*,
               COALESCE((SELECT e.common_word FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.entity_id = w.entity_id),
                        false) AS common_word,
               COALESCE((SELECT l.weight FROM linked AS l
                          WHERE l.a = w.path[w.hop] AND l.b = w.entity_id AND l.way = w.directions[w.hop]), 0) AS weight,
               -- the product of the steps' confidences (rounded: the same product whatever the order)
               (SELECT CASE WHEN bool_or(l.confidence = 0) THEN 0
                            ELSE COALESCE(round(exp(sum(ln(l.confidence)))::numeric, 12)::float8, 1) END
                  FROM generate_series(1, w.hop) AS i
                  JOIN linked AS l ON l.a = w.path[i] AND l.b = w.path[i + 1] AND l.way = w.directions[i]) AS confidence
          FROM walked AS w
    )
    SELECT COALESCE(jsonb_agg(jsonb_build_object('entity_id', r.entity_id, 'hop', r.hop, 'path', r.path,
                                                 'directions', r.directions, 'seed', r.seed,
                                                 'confidence', r.confidence, 'position', r.position)
                              ORDER BY r.position), '[]')
      INTO reached
      FROM (SELECT s.*, row_number() OVER (ORDER BY s.hop, s.common_word, s.confidence DESC, s.weight DESC,
                                                    array_position(seeds, s.seed), s.entity_id COLLATE "C") AS position
              FROM scored AS s) AS r;
    RETURN reached;
END
$$;
COMMENT ON FUNCTION kgrag_private.reached_entities(text[], jsonb) IS
'Private. Returns the entities the walk from the seeds reaches (kgrag.k_hop with the options hops, degree_cap, relations, as_of, direction, history and min_confidence) as a jsonb array of {entity_id, hop, path, directions, seed, confidence, position}, by position: the nearest first, then, at one distance, named entities before common words (kgrag.entity.common_word), then the surest path (confidence: the product of its steps'' confidences, each the highest confidence of the edges the walk could take for that step: a co-occurrence is sure, 1, a stated relation as sure as its best evidence), then the strongest last step, then the seed order. Held as a value, not a temporary table: it runs on a standby.';

CREATE OR REPLACE FUNCTION kgrag_private.pagerank_list(question_vec vector, seeds text[], k integer, opts jsonb)
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- The walk restarts at the seeds (each by its specificity) and at the nearest chunks
    -- (ppr_chunk_seed_weight times the similarity, min-max normalized over the candidates, as
    -- HippoRAG 2 weighs its passages).
    SELECT COALESCE(jsonb_agg(jsonb_build_object('chunk_id', p.node_id, 'mass', p.mass) ORDER BY p.rank), '[]')
      FROM (SELECT COALESCE(array_agg(v.chunk_id ORDER BY v.rank), '{}') AS ids,
                   COALESCE(array_agg(kgrag.setting('ppr_chunk_seed_weight')::float8
                                      * COALESCE((v.similarity - v.low) / NULLIF(v.high - v.low, 0), 1)
                                      ORDER BY v.rank), '{}') AS weights
              FROM (SELECT x.chunk_id, x.rank, x.similarity, min(x.similarity) OVER () AS low,
                           max(x.similarity) OVER () AS high
                      FROM kgrag.search_chunks_vector(question_vec, 4 * k) AS x
                     WHERE question_vec IS NOT NULL) AS v) AS c
     CROSS JOIN LATERAL kgrag.personalized_pagerank(seeds, NULL, c.ids, c.weights, NULL, (opts ->> 'hops')::integer,
                                                    (opts ->> 'degree_cap')::integer, (opts ->> 'as_of')::timestamptz,
                                                    (opts ->> 'history')::boolean, (opts ->> 'min_confidence')::float8) AS p
     WHERE p.kind = 'chunk' AND p.mass > 0 AND p.rank <= 4 * k
$$;
COMMENT ON FUNCTION kgrag_private.pagerank_list(vector, text[], integer, jsonb) IS
'Private. Returns the graph''s chunk list of graph_ranking pagerank: the first 4 k chunks by Personalized PageRank mass from the seeds and the 4 k chunks nearest the question (weighted by ppr_chunk_seed_weight times their min-max normalized similarity), as a jsonb array of {chunk_id, mass}, best first.';

CREATE OR REPLACE FUNCTION kgrag_private.paths_list(reached jsonb, others text[], k integer, opts jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    per_entity integer := kgrag.setting('graph_chunks_per_entity')::integer;
BEGIN
    -- Each reached entity's answer chunk in the walk's order, then the other chunks that cite
    -- reached entities (nearest first, those citing more of them first). A hub cites thousands of
    -- chunks: the chunks ranked are each reached entity's first graph_chunks_per_entity citing
    -- chunks (by chunk id, an index range) and the chunks of the other lists, each with every
    -- reached entity it cites counted (its own mentions, read by chunk: OFFSET 0 keeps the planner
    -- from reading every mention of the reached hubs instead, 34,491 rows for 6 entities at 100k
    -- chunks under auto_explain), so the work is bounded by the walk, not by the corpus. The list
    -- stops after the last one that could still be among the k fused rows: one of its first k, or
    -- one another list holds too. A chunk past that and in no other list scores below each of the
    -- k before it, all in this list, so the fused rows are the same.
    RETURN (
        SELECT COALESCE(jsonb_agg(z.chunk_id ORDER BY z.o), '[]')
          FROM (SELECT y.chunk_id, y.o, max(CASE WHEN y.o <= k OR y.chunk_id = ANY (others) THEN y.o END) OVER () AS last
          FROM (SELECT x.chunk_id, row_number() OVER (ORDER BY x.tier, x.key1, x.key2 DESC, x.chunk_id) AS o
          FROM (SELECT DISTINCT ON (u.chunk_id) u.* FROM (
                    SELECT e.answer_chunk_id AS chunk_id, 0 AS tier, r.position::float8 AS key1, 0::float8 AS key2
                      FROM jsonb_to_recordset(reached) AS r(entity_id text, hop integer, path text[], seed text, position integer)
                     CROSS JOIN LATERAL (SELECT x.answer_chunk_id FROM kgrag.entity AS x  -- a key lookup each
                                          WHERE x.tenant_id = t AND x.entity_id = r.entity_id
                                            AND x.answer_chunk_id IS NOT NULL OFFSET 0) AS e
                    UNION ALL
                    SELECT m.chunk_id, 1, min(r.hop), count(*)
                      FROM (SELECT y.chunk_id, y.entity_id
                              FROM (SELECT DISTINCT c.id FROM (
                                        SELECT x.chunk_id FROM jsonb_to_recordset(reached) AS r(entity_id text)
                                         CROSS JOIN LATERAL (SELECT y.chunk_id FROM kgrag.mention AS y
                                                              WHERE y.tenant_id = t AND y.entity_id = r.entity_id
                                                              ORDER BY y.chunk_id LIMIT per_entity) AS x
                                        UNION ALL
                                        SELECT o.id FROM unnest(others) AS o(id)) AS c(id)) AS c
                              JOIN kgrag.mention AS y ON y.tenant_id = t AND y.chunk_id = c.id
                            OFFSET 0) AS m  -- each candidate's own mentions, then the reached entities among them
                      JOIN jsonb_to_recordset(reached) AS r(entity_id text, hop integer) ON r.entity_id = m.entity_id
                     GROUP BY m.chunk_id) AS u
                 ORDER BY u.chunk_id, u.tier, u.key1) AS x
                 ) AS y) AS z
         WHERE z.o <= z.last OR (opts ->> 'graph_weight')::float8 <= 0);  -- weight 0: ties everywhere, no cut
END
$$;
COMMENT ON FUNCTION kgrag_private.paths_list(jsonb, text[], integer, jsonb) IS
'Private. Returns the graph''s chunk list of graph_ranking paths (a jsonb array of chunk ids): the answer chunks of the reached entities (kgrag_private.reached_entities) in the walk''s order, then the chunks citing reached entities (each entity''s first graph_chunks_per_entity, and the chunks of the other lists), nearest first and those citing more of them first; cut after the last chunk that could still be among the k fused rows.';

CREATE OR REPLACE FUNCTION kgrag_private.pinned_pages(
    question_vec vector, seeds text[], named text[], nearest text, k integer, opts jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    -- A seed's own page: the chunk that answers for a seed the question names (by a whole name,
    -- as kgrag.route says: not a fuzzy link, not a seed found by vector search) in a document
    -- titled with its name (the page about it: kgrag.is_page_about). A bridge page: for each own
    -- page, the page of one entity that page names (a mention in it, at most the first 50 by id),
    -- not a seed, the one whose page is nearest the question: the second step of a two-hop
    -- question ("the soap opera Kate Ramsay is from was created by who?"). It follows what the
    -- page names, not the graph's edges, so a walk filtered by relations or as_of gets none.
    -- A question that names no page ("the initial tornado of the Late-May 1998 outbreak hit a
    -- state named after which tribes?") takes its one bridge from the chunk nearest it instead
    -- (nearest: the first of the vector list, which stays where RRF puts it; from k = 2 on, so
    -- that one row is left to RRF).
    -- The own pages come first, in the seeds' order, at most half of the k rows; then the
    -- bridge pages in the same order, the two together at most (k + 1) / 2; RRF fills the rest.
    RETURN (
    WITH own AS MATERIALIZED (
        SELECT p.chunk_id, p.o FROM (
            SELECT e.answer_chunk_id AS chunk_id, min(s.o) AS o
              FROM unnest(seeds) WITH ORDINALITY AS s(id, o)
              JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = s.id
              JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = e.answer_chunk_id
             WHERE s.id = ANY (named) AND kgrag.is_page_about(c.title, e.name)
             GROUP BY e.answer_chunk_id) AS p
         ORDER BY p.o
         LIMIT k / 2
    ), anchor AS (  -- the pages a bridge starts from
        SELECT w.chunk_id, w.o FROM own AS w
        UNION ALL
        SELECT nearest, 1 WHERE nearest IS NOT NULL AND k >= 2 AND NOT EXISTS (SELECT 1 FROM own)
    ), bridge AS (
        SELECT b.chunk_id, min(b.o) AS o FROM (
            SELECT DISTINCT ON (w.o) w.o, n.chunk_id
              FROM anchor AS w
             CROSS JOIN LATERAL (
                   SELECT e.answer_chunk_id AS chunk_id, c.embedding <=> question_vec AS distance
                     FROM (SELECT m.entity_id FROM kgrag.mention AS m
                            WHERE m.tenant_id = t AND m.chunk_id = w.chunk_id
                              AND m.entity_id <> ALL (seeds)
                            ORDER BY m.entity_id LIMIT 50) AS m
                     JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = m.entity_id
                     JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = e.answer_chunk_id
                    WHERE c.embedding IS NOT NULL
                      AND kgrag.is_page_about(c.title, e.name)
                      AND e.answer_chunk_id <> w.chunk_id
                      AND NOT EXISTS (SELECT 1 FROM own AS x WHERE x.chunk_id = e.answer_chunk_id)) AS n
             WHERE question_vec IS NOT NULL AND opts ->> 'relations' IS NULL AND opts ->> 'as_of' IS NULL
             ORDER BY w.o, n.distance, n.chunk_id COLLATE "C") AS b
         GROUP BY b.chunk_id
    ), pinned AS (
        SELECT x.chunk_id, x.list, row_number() OVER (ORDER BY x.list = 'bridge_page', x.o) AS pos
          FROM (SELECT w.chunk_id, w.o, 'own_page' AS list FROM own AS w
                UNION ALL
                SELECT b.chunk_id, b.o, 'bridge_page' FROM bridge AS b) AS x
         ORDER BY pos
         LIMIT (k + 1) / 2
    )
    SELECT jsonb_build_object(
               'own_page', COALESCE((SELECT jsonb_agg(p.chunk_id ORDER BY p.pos) FROM pinned AS p WHERE p.list = 'own_page'), '[]'),
               'bridge_page', COALESCE((SELECT jsonb_agg(p.chunk_id ORDER BY p.pos) FROM pinned AS p WHERE p.list = 'bridge_page'), '[]')));
END
$$;
COMMENT ON FUNCTION kgrag_private.pinned_pages(vector, text[], text[], text, integer, jsonb) IS
'Private. Returns the chunk lists the local route puts first, {"own_page": [...], "bridge_page": [...]}: the seeds'' own pages (the answer chunk of a seed in named, the seeds the question names by a whole name, in a document about it, see kgrag.is_page_about: in seed order, at most k / 2), then for each own page a bridge page (the page of the entity it names, among its first 50 by id and not a seed, whose page is nearest question_vec; none without question_vec or with the options relations or as_of), the two at most (k + 1) / 2. Without an own page and with k of 2 or more, one bridge page from the chunk nearest (the first of the vector list), which is not pinned itself.';

CREATE OR REPLACE FUNCTION kgrag_private.entity_rows(reached jsonb, opts jsonb) RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN QUERY
    WITH shown AS MATERIALIZED (
        SELECT r.*, row_number() OVER (ORDER BY r.position) AS path_no
          FROM jsonb_to_recordset(reached)
               AS r(entity_id text, hop integer, path text[], directions text[], seed text, confidence float8, position integer)
         WHERE r.position <= (opts ->> 'entities')::integer
    ), steps AS MATERIALIZED (  -- the relations along every shown path, in one call
        SELECT p.path_no, jsonb_agg(jsonb_strip_nulls(jsonb_build_object('src', p.src, 'rel', p.rel, 'dst', p.dst,
                                                                         'valid_from', p.valid_from, 'valid_to', p.valid_to))
                                    ORDER BY p.step) AS relations
          FROM kgrag_private.paths_relations((SELECT COALESCE(jsonb_agg(to_jsonb(s.path) ORDER BY s.path_no), '[]')
                                                FROM shown AS s),
                                             (opts ->> 'as_of')::timestamptz, (opts ->> 'history')::boolean,
                                             (opts ->> 'min_confidence')::float8) AS p
         GROUP BY p.path_no
    )
    SELECT NULL::integer, r.entity_id, 'entity', 'graph', 1.0::float8 / (1 + r.hop), NULL::text, NULL::text,
           jsonb_build_object(
               'name', e.name, 'type', e.type, 'seed', r.seed, 'hop', r.hop, 'path', to_jsonb(r.path),
               'directions', to_jsonb(r.directions), 'confidence', r.confidence,
               'answer', e.answer,
               'evidence_refs', to_jsonb(ARRAY(
                   SELECT y.chunk_id FROM (
                       SELECT DISTINCT ON (z.chunk_id) z.chunk_id, z.o FROM (
                           SELECT e.answer_chunk_id AS chunk_id, 0 AS o WHERE e.answer_chunk_id IS NOT NULL
                           UNION ALL
                           -- a hub's first three from the index, not its thousands sorted
                           (SELECT m.chunk_id, 1 FROM kgrag.mention AS m
                             WHERE m.tenant_id = t AND m.entity_id = r.entity_id ORDER BY m.chunk_id LIMIT 3)) AS z
                        ORDER BY z.chunk_id, z.o) AS y
                    ORDER BY y.o, y.chunk_id COLLATE "C" LIMIT 3)),
               'relations', COALESCE(x.relations, '[]'))
      FROM shown AS r
      JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = r.entity_id
      LEFT JOIN steps AS x ON x.path_no = r.path_no
     ORDER BY r.position;
END
$$;
COMMENT ON FUNCTION kgrag_private.entity_rows(jsonb, jsonb) IS
'Private. Returns the first (option entities) reached entities as search rows (kind entity, source graph, score 1 / (1 + hop)), payload: name, type, seed, hop, path, directions, confidence (the path''s, kgrag_private.reached_entities), answer, evidence_refs (the answer chunk, then the first citing chunks, three in all) and the relations along the path ({src, rel, dst}, with valid_from and valid_to where the relation has them).';

CREATE OR REPLACE FUNCTION kgrag_private.local_rows(
    question_vec vector, question text, seeds text[], named text[], k integer, opts jsonb)
RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    reached jsonb := kgrag_private.reached_entities(seeds, opts);
    lists jsonb := kgrag_private.chunk_lists(question_vec, question, k, opts, true);
    ranked jsonb := '[]';  -- with graph_ranking pagerank or both: the chunks by Personalized PageRank mass
BEGIN
    IF opts ->> 'graph_ranking' IN ('pagerank', 'both') THEN
        ranked := kgrag_private.pagerank_list(question_vec, seeds, k, opts);
        lists := lists || jsonb_build_object('pagerank', (SELECT COALESCE(jsonb_agg(r -> 'chunk_id'), '[]')
                                                            FROM jsonb_array_elements(ranked) AS r));
    END IF;
    IF opts ->> 'graph_ranking' IN ('paths', 'both') THEN
        lists := lists || jsonb_build_object('graph', kgrag_private.paths_list(
            reached, ARRAY(SELECT v.id FROM jsonb_each(lists) AS l CROSS JOIN LATERAL jsonb_array_elements_text(l.value) AS v(id)),
            k, opts));
    END IF;
    lists := lists || kgrag_private.pinned_pages(question_vec, seeds, named, lists -> 'vector' ->> 0, k, opts);
    RETURN QUERY SELECT * FROM kgrag_private.entity_rows(reached, opts);
    RETURN QUERY
    SELECT f.rank, f.ref_id, f.kind, f.source, f.score, f.route, f.reason,
           f.payload || COALESCE((SELECT jsonb_build_object('ppr_mass', r.mass)
                                    FROM jsonb_to_recordset(ranked) AS r(chunk_id text, mass float8)
                                   WHERE r.chunk_id = f.ref_id), '{}')
      FROM kgrag_private.fused_chunks(lists, k, opts) WITH ORDINALITY AS f
     ORDER BY f.ordinality;
END
$$;
COMMENT ON FUNCTION kgrag_private.local_rows(vector, text, text[], text[], integer, jsonb) IS
'Private. The local route: entities within hops of the seeds (degree cap, relation, as_of and direction filters; payload.directions says how each step was walked), nearest first, with their answers, paths and evidence (kgrag_private.entity_rows); then the pinned chunks (kgrag_private.pinned_pages: the seeds'' own pages, list own_page, then a bridge page for each, list bridge_page, or without an own page one bridge page from the nearest chunk); then chunks fused by RRF from vector search, lexical search and the graph (option graph_ranking): paths, the list graph (kgrag_private.paths_list), the answer chunks of the reached entities then the chunks citing them, nearest first; pagerank, the list pagerank (kgrag_private.pagerank_list), the chunks by Personalized PageRank mass from the seeds and the nearest chunks (payload.ppr_mass); both, the two lists.';

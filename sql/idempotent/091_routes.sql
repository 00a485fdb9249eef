-- The route bodies behind kgrag_search: fused chunk lists (RRF over vector, lexical and graph
-- lists), the local route (the walk from the seeds) and the global route (community reports).

CREATE OR REPLACE FUNCTION kgrag_private.fused_chunks(lists jsonb, k integer, opts jsonb) RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    -- the pinned chunks: the list own_page, then bridge_page, each in its order
    pinned text[] := ARRAY(SELECT jsonb_array_elements_text(COALESCE(lists -> 'own_page', '[]')))
                     || ARRAY(SELECT jsonb_array_elements_text(COALESCE(lists -> 'bridge_page', '[]')));
BEGIN
    RETURN QUERY
    -- RRF over the named chunk lists, the pinned chunks first in their order; each row says which
    -- other list ranked it best.
    SELECT NULL::integer, f.ref_id, 'chunk', COALESCE(b.source, 'graph'), f.score, NULL, NULL,
           jsonb_build_object('ranks', f.ranks, 'evidence_refs', jsonb_build_array(f.ref_id),
                              'doc_id', c.doc_id, 'title', c.title)
      FROM (SELECT r.* FROM kgrag.rrf(lists, (opts ->> 'rrf_k')::integer,
                                      jsonb_build_object('graph', (opts ->> 'graph_weight')::float8,
                                                         'pagerank', (opts ->> 'graph_weight')::float8)) AS r
             ORDER BY array_position(pinned, r.ref_id), r.rank
             LIMIT k) AS f  -- the k best only are read further
      JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = f.ref_id
      LEFT JOIN LATERAL (SELECT r.key AS source FROM jsonb_each_text(f.ranks) AS r
                          WHERE r.key NOT IN ('own_page', 'bridge_page')
                          ORDER BY r.value::integer, array_position(ARRAY['graph', 'pagerank', 'vector', 'lexical'], r.key)
                          LIMIT 1) AS b ON true
     ORDER BY array_position(pinned, f.ref_id), f.rank
     LIMIT k;
END
$$;
COMMENT ON FUNCTION kgrag_private.fused_chunks(jsonb, integer, jsonb) IS
'Private. Returns the k best chunks of the RRF fusion of named chunk lists as search rows, the chunks of the lists own_page then bridge_page (if given) first in their order; source = the list other than those two that ranked the chunk best (graph when none did), payload.ranks = its rank in every list.';

CREATE OR REPLACE FUNCTION kgrag_private.chunk_lists(question_vec vector, question text, k integer, opts jsonb)
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT jsonb_build_object(
        'vector', COALESCE((SELECT jsonb_agg(v.chunk_id ORDER BY v.rank)
                              FROM kgrag.search_chunks_vector(question_vec, k) AS v
                             WHERE question_vec IS NOT NULL
                               AND v.similarity >= (opts ->> 'chunk_min_similarity')::float8), '[]'),
        'lexical', COALESCE((SELECT jsonb_agg(l.chunk_id ORDER BY l.rank)
                               FROM kgrag.search_chunks_lexical(question, k, 'any', NULL,
                                                                (opts ->> 'lexical_min_coverage')::float8) AS l
                              WHERE question IS NOT NULL), '[]'))
$$;
COMMENT ON FUNCTION kgrag_private.chunk_lists(vector, text, integer, jsonb) IS
'Private. Returns {"vector": [...], "lexical": [...]}: the chunk ids of vector search above the similarity floor and of lexical search above the coverage floor, best first (a list is empty when its input, the vector or the text, is NULL).';

CREATE OR REPLACE FUNCTION kgrag_private.local_rows(
    question_vec vector, question text, seeds text[], named text[], k integer, opts jsonb)
RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    lists jsonb;
    reached jsonb;  -- the walk's answer, held in the function (no temporary table: it runs on a standby)
    ranked jsonb := '[]';  -- with graph_ranking pagerank or both: the chunks by Personalized PageRank mass
    others text[];  -- the chunks of the lists other than the graph's
    per_entity integer := kgrag.setting('graph_chunks_per_entity')::integer;
    bridge_candidates constant integer := 50;  -- the entities of an own page looked at for its bridge page
BEGIN
    -- closest first, then the strongest link, then the seed order
    SELECT COALESCE(jsonb_agg(jsonb_build_object('entity_id', w.entity_id, 'hop', w.hop, 'path', w.path,
                                                 'directions', w.directions, 'seed', w.seed, 'position', w.position)
                              ORDER BY w.position), '[]')
      INTO reached
      FROM (SELECT r.entity_id, r.hop, r.path, r.directions, r.seed,
                   row_number() OVER (ORDER BY r.hop, r.weight DESC, array_position(seeds, r.seed),
                                      r.entity_id COLLATE "C") AS position
              FROM (SELECT x.*, COALESCE((SELECT max(g.weight) FROM kgrag.edge AS g  -- the last step, either way
                                           WHERE g.tenant_id = t
                                             AND ((g.src = x.path[cardinality(x.path) - 1] AND g.dst = x.entity_id)
                                                  OR (g.dst = x.path[cardinality(x.path) - 1] AND g.src = x.entity_id))),
                                         0) AS weight
                      FROM kgrag.k_hop(seeds, (opts ->> 'hops')::integer, (opts ->> 'degree_cap')::integer,
                                       CASE WHEN jsonb_typeof(opts -> 'relations') = 'array'
                                            THEN ARRAY(SELECT jsonb_array_elements_text(opts -> 'relations')) END,
                                       (opts ->> 'as_of')::timestamptz, opts ->> 'direction') AS x) AS r) AS w;

    lists := kgrag_private.chunk_lists(question_vec, question, k, opts);
    IF opts ->> 'graph_ranking' IN ('pagerank', 'both') THEN
        -- The graph's chunk list by Personalized PageRank mass: the walk restarts at the seeds
        -- (each by its specificity) and at the nearest chunks (ppr_chunk_seed_weight times the
        -- similarity, min-max normalized over the candidates, as HippoRAG 2 weighs its passages).
        SELECT COALESCE(jsonb_agg(jsonb_build_object('chunk_id', p.node_id, 'mass', p.mass) ORDER BY p.rank), '[]')
          INTO ranked
          FROM (SELECT COALESCE(array_agg(v.chunk_id ORDER BY v.rank), '{}') AS ids,
                       COALESCE(array_agg(kgrag.setting('ppr_chunk_seed_weight')::float8
                                          * COALESCE((v.similarity - v.low) / NULLIF(v.high - v.low, 0), 1)
                                          ORDER BY v.rank), '{}') AS weights
                  FROM (SELECT x.chunk_id, x.rank, x.similarity, min(x.similarity) OVER () AS low,
                               max(x.similarity) OVER () AS high
                          FROM kgrag.search_chunks_vector(question_vec, 4 * k) AS x
                         WHERE question_vec IS NOT NULL) AS v) AS c
         CROSS JOIN LATERAL kgrag.personalized_pagerank(seeds, NULL, c.ids, c.weights, NULL, (opts ->> 'hops')::integer,
                                                        (opts ->> 'degree_cap')::integer) AS p
         WHERE p.kind = 'chunk' AND p.mass > 0 AND p.rank <= 4 * k;
        lists := lists || jsonb_build_object('pagerank', (SELECT COALESCE(jsonb_agg(r -> 'chunk_id'), '[]')
                                                            FROM jsonb_array_elements(ranked) AS r));
    END IF;
    IF opts ->> 'graph_ranking' IN ('paths', 'both') THEN
    -- The graph's chunk list: each reached entity's answer chunk in that order, then the other
    -- chunks that cite reached entities (nearest first, those citing more of them first).
    -- A hub cites thousands of chunks: the chunks ranked are each reached entity's first
    -- graph_chunks_per_entity citing chunks (by chunk id, an index range) and the chunks of the
    -- other lists, each with every reached entity it cites counted (its own mentions, read by
    -- chunk: OFFSET 0 keeps the planner from reading every mention of the reached hubs instead,
    -- 34,491 rows for 6 entities at 100k chunks under auto_explain), so the work is bounded by the
    -- walk, not by the corpus. The list stops after the last one that could still be among the k
    -- fused rows: one of its first k, or one another list holds too. A chunk past that and in no
    -- other list scores below each of the k before it, all in this list, so the fused rows are
    -- the same.
    others := ARRAY(SELECT v.id FROM jsonb_each(lists) AS l CROSS JOIN LATERAL jsonb_array_elements_text(l.value) AS v(id));
    lists := lists || jsonb_build_object('graph', (
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
         WHERE z.o <= z.last OR (opts ->> 'graph_weight')::float8 <= 0));  -- weight 0: ties everywhere, no cut
    END IF;

    -- A seed's own page: the chunk that answers for a seed the question names (by a whole name,
    -- as kgrag.route says: not a fuzzy link, not a seed found by vector search) in a document
    -- titled with its name (the page about it: kgrag.is_page_about). A bridge page: for each own page, the page of
    -- one entity that page names (a mention in it, at most the first bridge_candidates by id),
    -- not a seed, the one whose page is nearest the question: the second step of a two-hop
    -- question ("the soap opera Kate Ramsay is from was created by who?"). It follows what the
    -- page names, not the graph's edges, so a walk filtered by relations or as_of gets none.
    -- The own pages come first, in the seeds' order, at most half of the k rows; then the
    -- bridge pages in the same order, the two together at most (k + 1) / 2; RRF fills the rest.
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
    ), bridge AS (
        SELECT b.chunk_id, min(b.o) AS o FROM (
            SELECT DISTINCT ON (w.o) w.o, n.chunk_id
              FROM own AS w
             CROSS JOIN LATERAL (
                   SELECT e.answer_chunk_id AS chunk_id, c.embedding <=> question_vec AS distance
                     FROM (SELECT m.entity_id FROM kgrag.mention AS m
                            WHERE m.tenant_id = t AND m.chunk_id = w.chunk_id AND m.entity_id <> ALL (seeds)
                            ORDER BY m.entity_id LIMIT bridge_candidates) AS m
                     JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = m.entity_id
                     JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = e.answer_chunk_id
                    WHERE c.embedding IS NOT NULL
                      AND kgrag.is_page_about(c.title, e.name)
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
    SELECT lists || jsonb_build_object(
               'own_page', COALESCE((SELECT jsonb_agg(p.chunk_id ORDER BY p.pos) FROM pinned AS p WHERE p.list = 'own_page'), '[]'),
               'bridge_page', COALESCE((SELECT jsonb_agg(p.chunk_id ORDER BY p.pos) FROM pinned AS p WHERE p.list = 'bridge_page'), '[]'))
      INTO lists;

    RETURN QUERY
    SELECT NULL::integer, r.entity_id, 'entity', 'graph', 1.0::float8 / (1 + r.hop), NULL::text, NULL::text,
           jsonb_build_object(
               'name', e.name, 'type', e.type, 'seed', r.seed, 'hop', r.hop, 'path', to_jsonb(r.path),
               'directions', to_jsonb(r.directions),
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
               'relations', COALESCE((
                   SELECT jsonb_agg(jsonb_build_object('src', p.src, 'rel', p.rel, 'dst', p.dst) ORDER BY p.step)
                     FROM kgrag.path_relations(r.path) AS p), '[]'))
      FROM jsonb_to_recordset(reached)
           AS r(entity_id text, hop integer, path text[], directions text[], seed text, position integer)
      JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = r.entity_id
     WHERE r.position <= (opts ->> 'entities')::integer
     ORDER BY r.position;
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
'Private. The local route: entities within hops of the seeds (degree cap, relation, as_of and direction filters; payload.directions says how each step was walked), nearest first, with their answers, paths and evidence; then the seeds'' own pages (the answer chunk of a seed in named, the seeds the question names by a whole name, in a document about it, see kgrag.is_page_about: in seed order, at most k / 2, list own_page); then for each own page a bridge page (the page of the entity it names, among its first 50 by id and not a seed, whose page is nearest question_vec; none without question_vec or with the options relations or as_of: list bridge_page), the pinned chunks at most (k + 1) / 2; then chunks fused by RRF from vector search, lexical search and the graph (option graph_ranking): paths, the list graph, the answer chunks of the reached entities then the chunks citing them, nearest first; pagerank, the list pagerank, the chunks by Personalized PageRank mass from the seeds and the nearest chunks (payload.ppr_mass); both, the two lists.';

CREATE OR REPLACE FUNCTION kgrag_private.global_rows(
    question_vec vector, question text, whole_collection boolean, k integer, opts jsonb)
RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n integer := (opts ->> 'reports')::integer;
    lvl integer := (opts ->> 'level')::integer;
    maps jsonb;  -- the chosen reports, held in the function (no temporary table: it runs on a standby)
BEGIN
    IF whole_collection THEN
        -- the shape of the collection: every report of the level, by weight (distinct documents)
        SELECT COALESCE(jsonb_agg(jsonb_build_object('community_id', x.community_id, 'score', x.weight,
                                                     'position', x.position) ORDER BY x.position), '[]')
          INTO maps
          FROM (SELECT r.community_id, r.weight,
                       row_number() OVER (ORDER BY r.weight DESC, r.community_id COLLATE "C") AS position
                  FROM kgrag.community_report AS r
                  JOIN kgrag.community AS c ON c.tenant_id = t AND c.community_id = r.community_id AND c.level = lvl
                 WHERE r.tenant_id = t AND NOT r.stale
                 ORDER BY r.weight DESC, r.community_id COLLATE "C" LIMIT n) AS x;
    ELSIF question_vec IS NOT NULL THEN
        SELECT COALESCE(jsonb_agg(jsonb_build_object('community_id', x.community_id, 'score', x.similarity,
                                                     'position', x.rank) ORDER BY x.rank), '[]')
          INTO maps
          FROM kgrag.search_reports_vector(question_vec, n, lvl) AS x
         WHERE x.similarity >= (opts ->> 'report_min_similarity')::float8
           AND NOT EXISTS (SELECT 1 FROM kgrag.community_report AS r  -- a stale report is not served
                            WHERE r.tenant_id = t AND r.community_id = x.community_id AND r.stale);
    ELSE
        -- the question as text only: reports ranked by its words
        SELECT COALESCE(jsonb_agg(jsonb_build_object('community_id', x.community_id, 'score', x.score,
                                                     'position', x.rank) ORDER BY x.rank), '[]')
          INTO maps
          FROM kgrag.search_reports_lexical(question, n, lvl, (opts ->> 'lexical_min_coverage')::float8) AS x
         WHERE NOT EXISTS (SELECT 1 FROM kgrag.community_report AS r
                            WHERE r.tenant_id = t AND r.community_id = x.community_id AND r.stale);
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
      FROM jsonb_to_recordset(maps) AS m(community_id text, score float8, position integer)
      JOIN kgrag.community_report AS r ON r.tenant_id = t AND r.community_id = m.community_id
      JOIN kgrag.community AS c ON c.tenant_id = t AND c.community_id = m.community_id
     ORDER BY m.position;
    RETURN QUERY
    SELECT NULL::integer, x.chunk_id, 'chunk', 'community', x.score, NULL::text, NULL::text,
           jsonb_build_object('via', x.community_id, 'evidence_refs', jsonb_build_array(x.chunk_id),
                              'doc_id', ch.doc_id, 'title', ch.title)
      FROM (SELECT DISTINCT ON (e.id) e.id AS chunk_id, m.community_id, m.score, m.position, e.o
              FROM jsonb_to_recordset(maps) AS m(community_id text, score float8, position integer)
              JOIN kgrag.community_report AS r ON r.tenant_id = t AND r.community_id = m.community_id
             CROSS JOIN LATERAL unnest(r.evidence_chunk_ids) WITH ORDINALITY AS e(id, o)
             ORDER BY e.id, m.position, e.o) AS x
      JOIN kgrag.chunk AS ch ON ch.tenant_id = t AND ch.chunk_id = x.chunk_id
     ORDER BY x.position, x.o
     LIMIT global_rows.k;
END
$$;
COMMENT ON FUNCTION kgrag_private.global_rows(vector, text, boolean, integer, jsonb) IS
'Private. The global route: community reports of the chosen level (option level) ranked against the question above the report floor (by its vector, or by its words when the vector is NULL), or, for a question about the whole collection (whole_collection), every report by weight; each report as the map (kind community), then up to k chunks they cite as evidence (kind chunk, payload.via = the community).';

CREATE OR REPLACE FUNCTION kgrag_private.with_neighbours(given_rows kgrag.search_row[]) RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN QUERY
    -- After each chunk row, the chunk before and the chunk after it in its document, once each
    -- (a chunk already found, or already added as a neighbour of a better one, is not repeated).
    WITH given AS (
        SELECT x.rank, x.ref_id, x.kind, x.source, x.score, x.route, x.reason, x.payload, x.o
          FROM unnest(given_rows) WITH ORDINALITY AS x(rank, ref_id, kind, source, score, route, reason, payload, o)
    ), near AS (
        SELECT DISTINCT ON (n.chunk_id) n.chunk_id, n.doc_id, n.title, g.ref_id AS neighbour_of, g.score, g.o,
               side.name AS side, side.o AS side_o
          FROM given AS g
          JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = g.ref_id
         CROSS JOIN LATERAL (VALUES (1, 'before', -1), (2, 'after', 1)) AS side(o, name, step)
          JOIN kgrag.chunk AS n ON n.tenant_id = c.tenant_id AND n.doc_id = c.doc_id AND n.ordinal = c.ordinal + side.step
         WHERE g.kind = 'chunk'
           AND NOT EXISTS (SELECT 1 FROM given AS f WHERE f.kind = 'chunk' AND f.ref_id = n.chunk_id)
         ORDER BY n.chunk_id, g.o, side.o
    )
    SELECT u.rank, u.ref_id, u.kind, u.source, u.score, u.route, u.reason, u.payload
      FROM (SELECT g.rank, g.ref_id, g.kind, g.source, g.score, g.route, g.reason, g.payload, g.o, 0 AS side_o
              FROM given AS g
            UNION ALL
            SELECT NULL, n.chunk_id, 'chunk', 'neighbour', n.score, NULL, NULL,
                   jsonb_build_object('neighbour_of', n.neighbour_of, 'side', n.side,
                                      'evidence_refs', jsonb_build_array(n.chunk_id), 'doc_id', n.doc_id,
                                      'title', n.title),
                   n.o, n.side_o
              FROM near AS n) AS u
     ORDER BY u.o, u.side_o;
END
$$;
COMMENT ON FUNCTION kgrag_private.with_neighbours(kgrag.search_row[]) IS
'Private. Returns the search rows given with, after each chunk row, the chunk before and the chunk after it in the same document (search option neighbours): kind chunk, source neighbour, the score of the chunk they stand beside, payload.neighbour_of and payload.side (before | after). A chunk already among the rows, or beside a better ranked one, comes once. At most two rows more per chunk row.';

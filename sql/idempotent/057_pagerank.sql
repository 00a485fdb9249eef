-- Personalized PageRank over the tenant's graph of entities and chunks (HippoRAG's retrieval):
-- a chunk is linked to the entities it cites (weight 1), an entity to the entities it shares an
-- edge with (the edge's weight times its confidence, every relation type, either way). Power iteration on the part of
-- the graph within hops of the seeds: bounded work, the same answer every run.

CREATE OR REPLACE FUNCTION kgrag_private.check_pagerank_args(
    damping double precision, hops integer, degree_cap integer, seeds text[], seed_weights double precision[],
    seed_chunks text[], chunk_weights double precision[])
RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF damping IS NULL OR damping <= 0 OR damping >= 1 THEN
        RAISE EXCEPTION 'damping must be between 0 and 1 (exclusive), got %', COALESCE(damping::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF hops IS NULL OR hops NOT BETWEEN 0 AND kgrag.setting('max_hops')::integer THEN
        RAISE EXCEPTION 'hops must be between 0 and % (setting max_hops), got %', kgrag.setting('max_hops'),
            COALESCE(hops::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF degree_cap IS NOT NULL AND degree_cap NOT BETWEEN 1 AND kgrag.edge_rank_depth() THEN
        RAISE EXCEPTION 'degree_cap must be between 1 and % (setting edge_rank_depth), or NULL for no cap, got %',
            kgrag.edge_rank_depth(), degree_cap USING ERRCODE = '22023';
    END IF;
    IF cardinality(seed_chunks) > 1000 THEN
        RAISE EXCEPTION 'at most 1000 seed chunks, got %', cardinality(seed_chunks) USING ERRCODE = '22023';
    END IF;
    IF seed_weights IS NOT NULL AND cardinality(seed_weights) IS DISTINCT FROM cardinality(seeds)
       OR chunk_weights IS NOT NULL AND cardinality(chunk_weights) IS DISTINCT FROM cardinality(seed_chunks) THEN
        RAISE EXCEPTION 'give one weight per seed (seed_weights) and per seed chunk (chunk_weights)' USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(COALESCE(seed_weights, '{}') || COALESCE(chunk_weights, '{}')) AS w
                WHERE w IS NULL OR w < 0 OR w = 'Infinity' OR w = 'NaN') THEN
        RAISE EXCEPTION 'seed weights must be finite numbers >= 0' USING ERRCODE = '22023';
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.check_pagerank_args(double precision, integer, integer, text[], double precision[], text[], double precision[]) IS
'Private. Returns nothing; raises SQLSTATE 22023 for arguments kgrag.personalized_pagerank cannot take: damping outside (0, 1), hops outside 0..max_hops, a degree cap outside 1..edge_rank_depth, more than 1,000 seed chunks, weights that do not pair with their seeds, a weight that is not a finite number >= 0.';

CREATE OR REPLACE FUNCTION kgrag_private.pagerank_entities(
    ents text[], hops integer, degree_cap integer, max_entities integer, deadline timestamptz, budget_ms integer,
    at timestamptz, min_conf double precision, guarded boolean)
RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    t text := kgrag.current_tenant();
    frontier text[] := ents;
    reached_now text[];
BEGIN
    FOR i IN 1..hops LOOP
        EXIT WHEN cardinality(frontier) = 0;
        -- each node's strongest edges (the degree cap, as the walk counts it), either way
        reached_now := ARRAY(SELECT DISTINCT x.id FROM (
                           SELECT g.dst AS id FROM unnest(frontier) AS f(id)
                            CROSS JOIN LATERAL (SELECT y.src, y.dst, y.rel, y.valid_from, y.valid_to, y.confidence
                                                  FROM kgrag.edge AS y  -- the strongest first, of those that hold
                                                 WHERE y.tenant_id = t AND y.src = f.id
                                                   AND y.confidence >= min_conf  -- kgrag_private.walk_filter
                                                   AND (at IS NULL OR ((y.valid_from IS NULL OR y.valid_from <= at)
                                                                       AND (y.valid_to IS NULL OR y.valid_to > at)))
                                                   AND (NOT guarded OR y.rel <> 'CO_OCCURS' OR kgrag_private.pair_walkable(t, y.src, y.dst, at, min_conf))
                                                 ORDER BY y.weight DESC, y.dst COLLATE "C", y.rel COLLATE "C"
                                                 LIMIT degree_cap) AS g
                           UNION ALL
                           SELECT g.src FROM kgrag.edge AS g JOIN unnest(frontier) AS f(id) ON g.dst = f.id
                            WHERE g.tenant_id = t AND g.rel <> 'CO_OCCURS' AND (degree_cap IS NULL OR kgrag_private.among_strongest(t, g.src, g.dst, g.rel, degree_cap))
                              AND g.confidence >= min_conf
                              AND (at IS NULL OR ((g.valid_from IS NULL OR g.valid_from <= at) AND (g.valid_to IS NULL OR g.valid_to > at)))) AS x
                        WHERE x.id <> ALL (ents)
                        ORDER BY x.id);
        ents := ents || reached_now;
        frontier := reached_now;
        IF cardinality(ents) > max_entities THEN  -- a hub without a degree cap: the nearest max_entities
            RETURN ents[1:max_entities];
        END IF;
        IF clock_timestamp() >= deadline THEN
            PERFORM kgrag_private.traversal_timeout(budget_ms);
        END IF;
    END LOOP;
    RETURN ents;
END
$$;
COMMENT ON FUNCTION kgrag_private.pagerank_entities(text[], integer, integer, integer, timestamptz, integer, timestamptz, double precision, boolean) IS
'Private. Returns the entities of Personalized PageRank''s subgraph: those given (the seeds), then those within hops edges of them, hop by hop, each hop by id (degree_cap: each node''s strongest edges; typed edges either way; the edges that hold at at with a confidence of at least min_conf, see kgrag_private.walk_filter), at most max_entities, the nearest first. Cancelled with SQLSTATE 57014 past the deadline.';

CREATE OR REPLACE FUNCTION kgrag_private.pagerank_subgraph(
    ents text[], seed_chunks text[], seeds text[], seed_weights double precision[], given_chunks text[],
    chunk_weights double precision[], max_edges integer, at timestamptz, min_conf double precision, guarded boolean)
RETURNS TABLE (nodes text[], reset double precision[], esrc integer[], edst integer[], eprob double precision[])
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    -- The subgraph: nodes numbered once (entities in the order found, then chunks by id), its
    -- edges both ways with the probability of each step, and the reset distribution.
    WITH ent AS (
        SELECT e.id, e.o FROM unnest(ents) WITH ORDINALITY AS e(id, o)
    ), cites AS (  -- the mentions of the subgraph's entities, nearest entities first, at most max_edges
        SELECT m.entity_id, m.chunk_id
          FROM kgrag.mention AS m JOIN ent ON m.entity_id = ent.id
         WHERE m.tenant_id = t
         ORDER BY ent.o, m.chunk_id COLLATE "C"
         LIMIT max_edges
    ), node AS (
        SELECT x.key, row_number() OVER (ORDER BY x.tier, x.o, x.key COLLATE "C")::integer AS i
          FROM (SELECT 'e' || ent.id AS key, 0 AS tier, ent.o FROM ent
                UNION
                SELECT 'c' || c.chunk_id, 1, 0 FROM (SELECT ci.chunk_id FROM cites AS ci
                                                     UNION SELECT s.id FROM unnest(seed_chunks) AS s(id)) AS c) AS x
    ), pair AS (  -- one weight per pair of entities: every relation type, a co-occurrence counted once
        SELECT y.a, y.b, sum(y.w) AS w
          FROM (SELECT LEAST(g.src, g.dst) AS a, GREATEST(g.src, g.dst) AS b, g.rel,
                       max(g.weight * g.confidence) AS w  -- a stated relation counts as much as it is sure
                  FROM kgrag.edge AS g
                  JOIN ent AS s ON s.id = g.src
                  JOIN ent AS r ON r.id = g.dst
                 WHERE g.tenant_id = t
                   AND g.confidence >= min_conf  -- as pagerank_entities
                   AND (at IS NULL OR ((g.valid_from IS NULL OR g.valid_from <= at) AND (g.valid_to IS NULL OR g.valid_to > at)))
                   AND (NOT guarded OR g.rel <> 'CO_OCCURS' OR kgrag_private.pair_walkable(t, g.src, g.dst, at, min_conf))
                 GROUP BY 1, 2, 3) AS y
         GROUP BY y.a, y.b
         ORDER BY sum(y.w) DESC, y.a COLLATE "C", y.b COLLATE "C"
         LIMIT max_edges  -- the strongest links, at most as many as the entity-chunk links
    ), step AS (
        SELECT 'e' || pr.a AS src, 'e' || pr.b AS dst, pr.w FROM pair AS pr
        UNION ALL SELECT 'e' || pr.b, 'e' || pr.a, pr.w FROM pair AS pr
        UNION ALL SELECT 'e' || ci.entity_id, 'c' || ci.chunk_id, 1.0 FROM cites AS ci
        UNION ALL SELECT 'c' || ci.chunk_id, 'e' || ci.entity_id, 1.0 FROM cites AS ci
        UNION ALL  -- a seed chunk's own mentions, whatever max_edges kept
        SELECT 'c' || m.chunk_id, 'e' || m.entity_id, 1.0 FROM kgrag.mention AS m
         WHERE m.tenant_id = t AND m.chunk_id = ANY (seed_chunks)
           AND NOT EXISTS (SELECT 1 FROM cites AS ci WHERE ci.entity_id = m.entity_id AND ci.chunk_id = m.chunk_id)
        UNION ALL
        SELECT 'e' || m.entity_id, 'c' || m.chunk_id, 1.0 FROM kgrag.mention AS m
         WHERE m.tenant_id = t AND m.chunk_id = ANY (seed_chunks)
           AND NOT EXISTS (SELECT 1 FROM cites AS ci WHERE ci.entity_id = m.entity_id AND ci.chunk_id = m.chunk_id)
    ), numbered AS (
        SELECT a.i AS src, b.i AS dst, st.w / sum(st.w) OVER (PARTITION BY a.i) AS prob
          FROM step AS st JOIN node AS a ON a.key = st.src JOIN node AS b ON b.key = st.dst
    ), weighted AS (  -- entity seeds: the weight given, else 1 / the chunks citing it (its specificity)
        SELECT 'e' || s.id AS key,
               sum(COALESCE(s.w, 1.0 / GREATEST(1, (SELECT count(*) FROM kgrag.mention AS m
                                                     WHERE m.tenant_id = t AND m.entity_id = s.id)))) AS w
          FROM (SELECT x.id, u.w  -- (a name's twins in the audiences the session sees weigh as it does)
                  FROM unnest(seeds, seed_weights) AS u(name, w)
                 CROSS JOIN LATERAL unnest(kgrag_private.with_twins(kgrag.resolve_entities(ARRAY[u.name]))) AS x(id)) AS s
         GROUP BY s.id
        UNION ALL
        SELECT 'c' || s.id, sum(COALESCE(s.w, 1.0)) FROM unnest(given_chunks, chunk_weights) AS s(id, w)
         WHERE s.id = ANY (seed_chunks) GROUP BY s.id
    )
    SELECT (SELECT array_agg(nd.key ORDER BY nd.i) FROM node AS nd),
           (SELECT array_agg(COALESCE(wt.w, 0) ORDER BY nd.i) FROM node AS nd LEFT JOIN weighted AS wt ON wt.key = nd.key),
           (SELECT array_agg(nb.src ORDER BY nb.src, nb.dst) FROM numbered AS nb),
           (SELECT array_agg(nb.dst ORDER BY nb.src, nb.dst) FROM numbered AS nb),
           (SELECT array_agg(nb.prob ORDER BY nb.src, nb.dst) FROM numbered AS nb)
      INTO nodes, reset, esrc, edst, eprob;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.pagerank_subgraph(text[], text[], text[], double precision[], text[], double precision[], integer, timestamptz, double precision, boolean) IS
'Private. Returns Personalized PageRank''s subgraph as arrays: the nodes (''e'' || entity_id in the order given, then ''c'' || chunk_id by id: the chunks citing the entities, at most max_edges mentions, nearest entities first, and the seed chunks), the reset weight of each (an entity seed: its weight, else 1 / the chunks citing it; a seed chunk: its weight, else 1), and the steps (source, destination, probability: an entity-chunk link weighs 1, an entity-entity link the edge''s weight times its confidence summed over relation types, at most max_edges pairs, the strongest first).';

CREATE OR REPLACE FUNCTION kgrag_private.power_iteration(
    reset double precision[], esrc integer[], edst integer[], eprob double precision[], damping double precision,
    deadline timestamptz, budget_ms integer)
RETURNS double precision[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    given jsonb := kgrag_private.settings_of(ARRAY['ppr_max_iterations', 'ppr_tolerance']);  -- (one statement)
    max_iterations integer := (given -> 'ppr_max_iterations')::integer;
    tolerance double precision := (given -> 'ppr_tolerance')::float8;
    n integer := cardinality(reset);
    dangling integer[];
    p double precision[];
    q double precision[];
    lost double precision;
    change double precision;
BEGIN
    reset := ARRAY(SELECT r / (SELECT sum(x) FROM unnest(reset) AS x) FROM unnest(reset) WITH ORDINALITY AS u(r, o) ORDER BY u.o);
    dangling := ARRAY(SELECT g.i FROM generate_series(1, n) AS g(i) WHERE g.i <> ALL (COALESCE(esrc, '{}')));
    p := reset;
    -- p <- (1 - d) reset + d (P^T p + the mass of dangling nodes, sent back to the reset)
    FOR i IN 1..max_iterations LOOP
        lost := COALESCE((SELECT sum(p[x]) FROM unnest(dangling) AS x), 0);
        q := ARRAY(SELECT (1 - damping) * reset[g.i] + damping * (COALESCE(y.v, 0) + lost * reset[g.i])
                     FROM generate_series(1, n) AS g(i)
                     LEFT JOIN (SELECT e.dst, sum(p[e.src] * e.prob) AS v
                                  FROM unnest(esrc, edst, eprob) AS e(src, dst, prob) GROUP BY e.dst) AS y ON y.dst = g.i
                    ORDER BY g.i);
        change := (SELECT sum(abs(a - b)) FROM unnest(p, q) AS z(a, b));
        p := q;
        EXIT WHEN change < tolerance;
        IF clock_timestamp() >= deadline THEN
            PERFORM kgrag_private.traversal_timeout(budget_ms);
        END IF;
    END LOOP;
    RETURN p;
END
$$;
COMMENT ON FUNCTION kgrag_private.power_iteration(double precision[], integer[], integer[], double precision[], double precision, timestamptz, integer) IS
'Private. Returns the stationary mass of each node of a walk that follows a step (source, destination, probability) with chance damping and restarts at the reset distribution (normalized) otherwise, a dangling node''s mass going back to the reset: power iteration until the L1 change is below ppr_tolerance or ppr_max_iterations rounds. Cancelled with SQLSTATE 57014 past the deadline.';

CREATE OR REPLACE FUNCTION kgrag.personalized_pagerank(
    seeds text[], seed_weights double precision[] DEFAULT NULL,
    seed_chunks text[] DEFAULT NULL, chunk_weights double precision[] DEFAULT NULL,
    damping double precision DEFAULT NULL, hops integer DEFAULT NULL, degree_cap integer DEFAULT NULL,
    as_of timestamptz DEFAULT NULL, history boolean DEFAULT false, min_confidence double precision DEFAULT NULL)
RETURNS TABLE (kind text, node_id text, mass double precision, rank integer)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    t text := kgrag.current_tenant();
    -- one statement for the four (on a Citus worker each statement costs a plan of its own)
    given jsonb := kgrag_private.settings_of(ARRAY['ppr_damping', 'ppr_hops', 'ppr_max_edges', 'khop_timeout_ms']);
    d double precision := COALESCE(damping, (given -> 'ppr_damping')::float8);
    h integer := COALESCE(hops, (given -> 'ppr_hops')::integer);
    max_edges integer := (given -> 'ppr_max_edges')::integer;
    budget_ms integer := (given -> 'khop_timeout_ms')::integer;
    search_deadline text := current_setting('kgrag.search_deadline', true);
    deadline timestamptz;
    seed_ids text[] := kgrag_private.with_twins(kgrag.resolve_entities(COALESCE(seeds, '{}')));
    given_chunks text[] := seed_chunks;  -- paired with chunk_weights
    graph record;
    walked record;  -- the relations followed: kgrag_private.walk_filter
    mass double precision[];
BEGIN
    PERFORM kgrag_private.check_pagerank_args(d, h, degree_cap, seeds, seed_weights, seed_chunks, chunk_weights);
    SELECT * INTO walked FROM kgrag_private.walk_filter(as_of, history, min_confidence);
    deadline := clock_timestamp() + budget_ms * interval '1 millisecond';
    IF search_deadline <> '' AND search_deadline::timestamptz < deadline THEN
        deadline := search_deadline::timestamptz;  -- inside kgrag_search: one budget for the whole search
    END IF;

    -- The seed chunks that exist, and the entities they cite, join the seeds at hop 0.
    seed_chunks := ARRAY(SELECT DISTINCT ON (c.chunk_id) c.chunk_id
                           FROM unnest(seed_chunks) WITH ORDINALITY AS s(id, o)
                           JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = s.id
                          ORDER BY c.chunk_id, s.o);
    SELECT * INTO graph FROM kgrag_private.pagerank_subgraph(
        kgrag_private.pagerank_entities(
            seed_ids || ARRAY(SELECT DISTINCT m.entity_id FROM kgrag.mention AS m
                               WHERE m.tenant_id = t AND m.chunk_id = ANY (seed_chunks)
                                 AND m.entity_id <> ALL (seed_ids)
                               ORDER BY m.entity_id),
            h, degree_cap, max_edges, deadline, budget_ms, walked.at, walked.min_conf, walked.guarded),
        seed_chunks, seeds, seed_weights, given_chunks, chunk_weights, max_edges, walked.at, walked.min_conf, walked.guarded);
    IF COALESCE(cardinality(graph.nodes), 0) = 0 OR (SELECT sum(r) FROM unnest(graph.reset) AS r) <= 0 THEN
        RETURN;
    END IF;
    -- computed apart: inside unnest() the planner would run it once more to estimate the rows
    mass := kgrag_private.power_iteration(graph.reset, graph.esrc, graph.edst, graph.eprob, d, deadline, budget_ms);
    RETURN QUERY
    SELECT CASE WHEN left(z.key, 1) = 'e' THEN 'entity' ELSE 'chunk' END, substr(z.key, 2), z.m,
           (row_number() OVER (PARTITION BY left(z.key, 1) ORDER BY z.m DESC, substr(z.key, 2) COLLATE "C"))::integer
      FROM unnest(graph.nodes, mass) AS z(key, m)
     ORDER BY left(z.key, 1) DESC, z.m DESC, substr(z.key, 2) COLLATE "C";
END
$$;
COMMENT ON FUNCTION kgrag.personalized_pagerank(text[], double precision[], text[], double precision[], double precision, integer, integer, timestamptz, boolean, double precision) IS
'Returns the Personalized PageRank mass of the entities and chunks around the seeds: (kind entity or chunk, node_id, mass, rank within its kind), entities first, each kind by mass. The graph: entities (seeds given by id, name or alias, see kgrag.resolve_entities, with their twins in the audiences the session sees, kgrag_private.with_twins, each weighing as its name; and the entities the seed chunks cite) and those within hops edges of them (degree_cap: each node''s strongest edges; typed edges either way), the chunks citing them (at most the setting ppr_max_edges mentions, nearest entities first; at most ppr_max_edges entities and entity-entity links, nearest and strongest first) and the seed chunks; an entity-chunk link weighs 1, an entity-entity link the edge''s weight times its confidence (summed over relation types; a co-occurrence is sure, 1); the edges are the current facts above min_confidence, as kgrag.k_hop follows them (as_of, history, min_confidence). The walk restarts at the seeds: seed_weights (default: 1 / the number of chunks citing the entity) and chunk_weights (default 1), normalized. damping (default setting ppr_damping, 0.5) is the chance to follow a link, hops defaults to ppr_hops. Power iteration until the L1 change is below ppr_tolerance or ppr_max_iterations rounds; a dangling node''s mass returns to the seeds. Cancelled with SQLSTATE 57014 after khop_timeout_ms (inside kgrag_search, its search_timeout_ms).';

-- Traversal: the k-hop walk (WITH RECURSIVE with a string-path cycle guard), fan-out
-- accounting, and the relations along a path.

CREATE OR REPLACE FUNCTION kgrag._traversal_timeout(budget_ms integer) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    RAISE EXCEPTION 'graph traversal cancelled after % ms (setting khop_timeout_ms, or the search''s search_timeout_ms)', budget_ms
        USING ERRCODE = '57014',
              HINT = 'Walk fewer hops, pass a degree cap, or filter relations: a hub multiplies every hop.';
END
$$;
COMMENT ON FUNCTION kgrag._traversal_timeout(integer) IS
'Private. Never returns: raises SQLSTATE 57014 (query_canceled) when a traversal exceeds its time budget.';

CREATE OR REPLACE FUNCTION kgrag._walk(
    seeds text[], hops integer, degree_cap integer, relations text[], as_of timestamptz)
RETURNS TABLE (entity_id text, hop integer, trail text, seed text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    t text := kgrag.current_tenant();
    max_hops integer := kgrag.setting('max_hops')::integer;
    budget_ms integer := kgrag.setting('khop_timeout_ms')::integer;
    max_paths integer := kgrag.setting('max_paths_walked')::integer;
    search_deadline text := current_setting('kgrag.search_deadline', true);
    deadline timestamptz;
    walked integer;
BEGIN
    IF hops IS NULL OR hops < 0 THEN
        RAISE EXCEPTION 'hops must be >= 0, got %', COALESCE(hops::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF hops > max_hops THEN
        RAISE EXCEPTION 'hops = % is above the maximum of % (setting max_hops)', hops, max_hops
            USING ERRCODE = '22023',
                  HINT = 'Each hop multiplies the work by the mean degree; raise max_hops for a tenant only if you measured it.';
    END IF;
    IF degree_cap IS NOT NULL AND degree_cap < 1 THEN
        RAISE EXCEPTION 'degree_cap must be >= 1 (or NULL for no cap), got %', degree_cap USING ERRCODE = '22023';
    END IF;
    deadline := clock_timestamp() + budget_ms * interval '1 millisecond';
    IF search_deadline <> '' AND search_deadline::timestamptz < deadline THEN
        -- inside kgrag_search, whose whole time has one budget (setting search_timeout_ms)
        deadline := search_deadline::timestamptz;
        budget_ms := greatest(0, (extract(epoch FROM deadline - clock_timestamp()) * 1000)::integer);
    END IF;
    RETURN QUERY
    WITH RECURSIVE walk(entity_id, hop, trail, seed) AS (
        SELECT e.entity_id, 0, '|' || e.entity_id || '|', e.entity_id
          FROM kgrag.entity AS e
         WHERE e.tenant_id = t AND e.entity_id = ANY (seeds)
        UNION ALL
        SELECT g.dst, w.hop + 1, w.trail || g.dst || '|', w.seed
          FROM walk AS w
          JOIN kgrag.edge AS g ON g.tenant_id = t AND g.src = w.entity_id
         WHERE w.hop < hops
           AND strpos(w.trail, '|' || g.dst || '|') = 0          -- cycle guard: never revisit
           AND (degree_cap IS NULL OR g.rank <= degree_cap)      -- per-node degree cap
           AND (relations IS NULL OR g.rel = ANY (relations))
           AND (as_of IS NULL OR ((g.valid_from IS NULL OR g.valid_from <= as_of)
                                  AND (g.valid_to IS NULL OR g.valid_to > as_of)))
           AND (clock_timestamp() < deadline OR kgrag._traversal_timeout(budget_ms))
    )
    SELECT w.entity_id, w.hop, w.trail, w.seed FROM walk AS w LIMIT max_paths + 1;
    GET DIAGNOSTICS walked = ROW_COUNT;
    IF walked > max_paths THEN  -- what follows (the shortest path per node) sorts every path walked
        RAISE EXCEPTION 'graph traversal stopped after % paths (setting max_paths_walked)', max_paths
            USING ERRCODE = '57014',
                  HINT = 'Walk fewer hops, pass a degree cap, or filter relations: a hub multiplies every hop.';
    END IF;
    PERFORM set_config('kgrag.paths_walked', walked::text, true);  -- read back by kgrag_search's log
END
$$;
COMMENT ON FUNCTION kgrag._walk(text[], integer, integer, text[], timestamptz) IS
'Private. Returns every simple path walked from the seeds, one row per path end: (entity_id, hop, trail = ''|a|b|c|'', seed), and leaves the number of paths in the setting kgrag.paths_walked. The recursive CTE behind kgrag.k_hop and kgrag.fanout. Bounded: cancelled (57014) past khop_timeout_ms (or the end of the kgrag_search that runs it) and past max_paths_walked paths.';

CREATE OR REPLACE FUNCTION kgrag.k_hop(
    seeds text[], hops integer DEFAULT 2, degree_cap integer DEFAULT NULL, relations text[] DEFAULT NULL,
    as_of timestamptz DEFAULT NULL)
RETURNS TABLE (entity_id text, hop integer, path text[], seed text)
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT x.entity_id, x.hop, string_to_array(btrim(x.trail, '|'), '|'), x.seed
      FROM (SELECT w.*, row_number() OVER (PARTITION BY w.entity_id
                                           ORDER BY w.hop, w.trail COLLATE "C") AS shortest
              FROM kgrag._walk(seeds, hops, degree_cap, relations, as_of) AS w) AS x
     WHERE x.shortest = 1
     ORDER BY x.hop, x.entity_id COLLATE "C"
$$;
COMMENT ON FUNCTION kgrag.k_hop(text[], integer, integer, text[], timestamptz) IS
'Returns the entities within hops edges of the seeds, one row each at its shortest hop: (entity_id, hop, path from the seed, seed); the seeds themselves come back at hop 0. Edges are followed from src to dst; degree_cap keeps edges with rank <= degree_cap (each node''s strongest edges, counted over every relation type), relations keeps those rel types, as_of keeps edges valid at that time. Ties between equally short paths go to the lexicographically first path. Refuses hops above the setting max_hops; cancelled after khop_timeout_ms.';

CREATE OR REPLACE FUNCTION kgrag.fanout(seed text, hops integer, degree_cap integer DEFAULT NULL)
RETURNS TABLE (hop integer, nodes bigint, new_nodes bigint, paths bigint)
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    WITH w AS MATERIALIZED (
        SELECT p.entity_id, p.hop FROM kgrag._walk(ARRAY[seed], hops, degree_cap, NULL, NULL) AS p
    ), first_seen AS (
        SELECT f.entity_id, min(f.hop) AS hop FROM w AS f GROUP BY f.entity_id
    )
    SELECT w.hop, count(DISTINCT w.entity_id), COALESCE(max(n.new_nodes), 0), count(*)
      FROM w
      LEFT JOIN (SELECT s.hop, count(*) AS new_nodes FROM first_seen AS s GROUP BY s.hop) AS n ON n.hop = w.hop
     GROUP BY w.hop
     ORDER BY w.hop
$$;
COMMENT ON FUNCTION kgrag.fanout(text, integer, integer) IS
'Returns, per hop from one seed: nodes (distinct entities at the end of some path of that length), new_nodes (entities reached for the first time at that hop) and paths (simple paths walked). paths growing much faster than nodes is a hub blowing up the query; compare with and without degree_cap.';

CREATE OR REPLACE FUNCTION kgrag._path_length(path text[]) RETURNS integer
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    longest integer := kgrag.setting('max_hops')::integer + 1;
BEGIN
    IF cardinality(path) > longest THEN
        RAISE EXCEPTION 'a path of % entities is longer than any walk (at most % entities: setting max_hops)',
            cardinality(path), longest USING ERRCODE = '22023';
    END IF;
    RETURN COALESCE(cardinality(path), 0);
END
$$;
COMMENT ON FUNCTION kgrag._path_length(text[]) IS
'Private. Returns the number of entities in a path; raises SQLSTATE 22023 for a path longer than a walk can be (setting max_hops + 1), which bounds kgrag.path_relations.';

CREATE OR REPLACE FUNCTION kgrag.path_relations(path text[])
RETURNS TABLE (step integer, src text, rel text, dst text)
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT i, g.src, g.rel, g.dst
      FROM generate_series(1, kgrag._path_length(path) - 1) AS i
     CROSS JOIN LATERAL (
           SELECT x.src, x.rel, x.dst FROM kgrag.edge AS x
            WHERE x.tenant_id = kgrag.current_tenant()
              AND ((x.src = path[i] AND x.dst = path[i + 1])
                   OR (x.src = path[i + 1] AND x.dst = path[i] AND x.rel <> 'CO_OCCURS'))
            ORDER BY (x.rel = 'CO_OCCURS'), x.weight DESC, x.rel, x.src
            LIMIT 1) AS g
     ORDER BY i
$$;
COMMENT ON FUNCTION kgrag.path_relations(text[]) IS
'Returns, for each step of a path of entity ids (as kgrag.k_hop gives it), the relation that links the two entities: the strongest stated relation in its own direction, else their co-occurrence: (step, src, rel, dst).';

CREATE OR REPLACE FUNCTION kgrag.neighbourhood(
    seeds text[], hops integer DEFAULT 2, degree_cap integer DEFAULT NULL, relations text[] DEFAULT NULL,
    as_of timestamptz DEFAULT NULL)
RETURNS TABLE (entity_id text, name text, type text, hop integer, path text[], seed text, src text, rel text, dst text)
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT k.entity_id, e.name, e.type, k.hop, k.path, k.seed, s.src, s.rel, s.dst
      FROM kgrag.k_hop(seeds, hops, degree_cap, relations, as_of) AS k
      JOIN kgrag.entity AS e ON e.tenant_id = kgrag.current_tenant() AND e.entity_id = k.entity_id
      LEFT JOIN LATERAL kgrag.path_relations(k.path[k.hop:k.hop + 1]) AS s ON k.hop > 0
     ORDER BY k.hop, k.entity_id COLLATE "C"
$$;
COMMENT ON FUNCTION kgrag.neighbourhood(text[], integer, integer, text[], timestamptz) IS
'Returns kgrag.k_hop''s answer with each entity''s name and type and the last step of its shortest path, the edge that reached it: (entity_id, name, type, hop, path, seed, src, rel, dst; the step is NULL for the seeds). What a picture of the neighbourhood draws, in one call.';

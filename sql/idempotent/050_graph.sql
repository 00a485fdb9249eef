-- The graph: k-hop traversal (WITH RECURSIVE with a string-path cycle guard), fan-out
-- accounting, and the maintenance of per-source edge ranks and entity degrees.

CREATE OR REPLACE FUNCTION kgrag._traversal_timeout(budget_ms integer) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    RAISE EXCEPTION 'graph traversal cancelled after % ms (setting khop_timeout_ms)', budget_ms
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
    SELECT w.entity_id, w.hop, w.trail, w.seed FROM walk AS w;
    GET DIAGNOSTICS walked = ROW_COUNT;
    PERFORM set_config('kgrag.paths_walked', walked::text, true);  -- read back by kgrag_search's log
END
$$;
COMMENT ON FUNCTION kgrag._walk(text[], integer, integer, text[], timestamptz) IS
'Private. Returns every simple path walked from the seeds, one row per path end: (entity_id, hop, trail = ''|a|b|c|'', seed), and leaves the number of paths in the setting kgrag.paths_walked. The recursive CTE behind kgrag.k_hop and kgrag.fanout.';

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

CREATE OR REPLACE FUNCTION kgrag._edge_scratch() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- pg_temp.kgrag_edge_want: new values for some edge keys (weight 0: the edge must go).
    -- pg_temp.kgrag_changed: sources whose edges are rewritten by kgrag._rewrite_edges().
    CREATE TEMP TABLE IF NOT EXISTS kgrag_edge_want (
        src text NOT NULL, dst text NOT NULL, rel text NOT NULL, weight double precision NOT NULL,
        confidence double precision NOT NULL DEFAULT 1, evidence_chunk_id text, evidence_quote text,
        extractor text NOT NULL DEFAULT 'cooccurrence', valid_from timestamptz, valid_to timestamptz
    ) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_changed (src text PRIMARY KEY) ON COMMIT DROP;
END
$$;
COMMENT ON FUNCTION kgrag._edge_scratch() IS
'Private. Returns nothing; creates the temporary tables kgrag._rewrite_edges() reads.';

CREATE OR REPLACE FUNCTION kgrag._rewrite_edges() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    written integer;
BEGIN
    -- The sources whose edge list changes: named in kgrag_changed, or with a wanted value that
    -- differs from the stored one.
    ANALYZE pg_temp.kgrag_edge_want;
    INSERT INTO pg_temp.kgrag_changed (src)
    SELECT DISTINCT w.src FROM pg_temp.kgrag_edge_want AS w
      LEFT JOIN kgrag.edge AS g ON g.tenant_id = t AND g.src = w.src AND g.dst = w.dst AND g.rel = w.rel
     WHERE CASE WHEN g.src IS NULL THEN w.weight > 0
                WHEN w.weight = 0 THEN true
                ELSE (g.weight, g.confidence, g.evidence_chunk_id, g.evidence_quote, g.extractor, g.valid_from,
                      g.valid_to)
                     IS DISTINCT FROM (w.weight, w.confidence, w.evidence_chunk_id, w.evidence_quote, w.extractor,
                                       w.valid_from, w.valid_to) END
    ON CONFLICT DO NOTHING;
    ANALYZE pg_temp.kgrag_changed;

    -- Their complete edge lists after the change, ranked: rank = position among the source's
    -- edges by weight desc, ties by dst then rel (the one place this order is defined).
    CREATE TEMP TABLE kgrag_final ON COMMIT DROP AS
    WITH stored AS MATERIALIZED (  -- planned on its own: the changed sources' edges, not the tenant's
        SELECT g.src, g.dst, g.rel, g.weight, g.confidence, g.evidence_chunk_id, g.evidence_quote, g.extractor,
               g.valid_from, g.valid_to
          FROM pg_temp.kgrag_changed AS c JOIN kgrag.edge AS g ON g.tenant_id = t AND g.src = c.src
    ), merged AS (
        SELECT w.src, w.dst, w.rel, w.weight, w.confidence, w.evidence_chunk_id, w.evidence_quote, w.extractor,
               w.valid_from, w.valid_to
          FROM pg_temp.kgrag_edge_want AS w JOIN pg_temp.kgrag_changed AS c USING (src)
         WHERE w.weight > 0
        UNION ALL
        SELECT g.* FROM stored AS g
         WHERE NOT EXISTS (SELECT 1 FROM pg_temp.kgrag_edge_want AS w
                            WHERE w.src = g.src AND w.dst = g.dst AND w.rel = g.rel)
    )
    SELECT m.*, (row_number() OVER (PARTITION BY m.src
                                    ORDER BY m.weight DESC, m.dst COLLATE "C", m.rel COLLATE "C"))::integer AS rank
      FROM merged AS m;
    ANALYZE pg_temp.kgrag_final;

    DELETE FROM kgrag.edge AS g USING pg_temp.kgrag_changed AS c
     WHERE g.tenant_id = t AND g.src = c.src
       AND NOT EXISTS (SELECT 1 FROM pg_temp.kgrag_final AS f WHERE f.src = g.src AND f.dst = g.dst AND f.rel = g.rel);
    INSERT INTO kgrag.edge AS g (tenant_id, src, dst, rel, weight, rank, confidence, evidence_chunk_id, evidence_quote,
                                 extractor, valid_from, valid_to)
    SELECT t, f.src, f.dst, f.rel, f.weight, f.rank, f.confidence, f.evidence_chunk_id, f.evidence_quote, f.extractor,
           f.valid_from, f.valid_to
      FROM pg_temp.kgrag_final AS f
     ORDER BY f.src COLLATE "C", f.dst COLLATE "C", f.rel COLLATE "C"
    ON CONFLICT (tenant_id, src, dst, rel) DO UPDATE
       SET weight = excluded.weight, rank = excluded.rank, confidence = excluded.confidence,
           evidence_chunk_id = excluded.evidence_chunk_id, evidence_quote = excluded.evidence_quote,
           extractor = excluded.extractor, valid_from = excluded.valid_from, valid_to = excluded.valid_to
     WHERE (g.weight, g.rank, g.confidence, g.evidence_chunk_id, g.evidence_quote, g.extractor, g.valid_from,
            g.valid_to)
           IS DISTINCT FROM (excluded.weight, excluded.rank, excluded.confidence, excluded.evidence_chunk_id,
                             excluded.evidence_quote, excluded.extractor, excluded.valid_from, excluded.valid_to);
    GET DIAGNOSTICS written = ROW_COUNT;

    -- degree = distinct neighbours
    UPDATE kgrag.entity AS e SET degree = d.degree
      FROM (SELECT c.src, count(DISTINCT f.dst)::integer AS degree
              FROM pg_temp.kgrag_changed AS c LEFT JOIN pg_temp.kgrag_final AS f USING (src)
             GROUP BY c.src) AS d
     WHERE e.tenant_id = t AND e.entity_id = d.src AND e.degree <> d.degree;
    DROP TABLE pg_temp.kgrag_final;
    TRUNCATE pg_temp.kgrag_edge_want, pg_temp.kgrag_changed;
    RETURN written;
END
$$;
COMMENT ON FUNCTION kgrag._rewrite_edges() IS
'Private. Applies pg_temp.kgrag_edge_want (new edge values, weight 0 = remove) and re-ranks every source named there or in pg_temp.kgrag_changed, writing each changed edge once, then updates those sources'' degrees. Returns the number of edges inserted or updated.';

CREATE OR REPLACE FUNCTION kgrag.refresh_edge_ranks(entity_ids text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    PERFORM kgrag._edge_scratch();
    INSERT INTO pg_temp.kgrag_changed (src) SELECT DISTINCT u.id FROM unnest(entity_ids) AS u(id) ON CONFLICT DO NOTHING;
    RETURN kgrag._rewrite_edges();
END
$$;
COMMENT ON FUNCTION kgrag.refresh_edge_ranks(text[]) IS
'Recomputes, for the given source entities only, each edge''s rank (position among its src''s edges by weight desc, ties by dst then rel) and each entity''s degree (distinct neighbours). Returns the number of edges whose rank changed. Ingestion maintains ranks itself for the sources a batch changes; this is for repairs and hand-made graphs.';

CREATE OR REPLACE FUNCTION kgrag.path_relations(path text[])
RETURNS TABLE (step integer, src text, rel text, dst text)
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT i, g.src, g.rel, g.dst
      FROM generate_series(1, cardinality(path) - 1) AS i
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

-- Writing edges and keeping every entity's degree, touching only the edges a batch changes.
-- No rank is stored (revision 0028): a walk takes a node's strongest edges from
-- edge_src_weight_idx (kgrag_private.among_strongest), so an edge added to a hub rewrites that
-- edge alone, not the ranks of the edges below it.

CREATE OR REPLACE FUNCTION kgrag.edge_rank_depth() RETURNS integer
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
     WHERE s.tenant_id = '*' AND s.key = 'edge_rank_depth'
$$;
COMMENT ON FUNCTION kgrag.edge_rank_depth() IS
'Returns the largest degree cap a walk may use (setting edge_rank_depth of tenant ''*''): a capped walk reads at most that many of a node''s strongest edges. (Named for the ranks stored before revision 0028; none are now.)';

CREATE OR REPLACE FUNCTION kgrag_private.among_strongest(
    tenant text, src text, dst text, rel text, degree_cap integer) RETURNS boolean
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- The strength order: weight desc, ties by dst then rel in byte order, as edge_src_weight_idx
    -- holds it. The walks' top-N reads going out (kgrag_private.walk, frontier, the PageRank
    -- subgraph) write the same ORDER BY inline, in their own plans.
    SELECT degree_cap IS NULL
        OR EXISTS (SELECT 1 FROM (SELECT y.dst, y.rel FROM kgrag.edge AS y
                                   WHERE y.tenant_id = tenant AND y.src = among_strongest.src
                                   ORDER BY y.weight DESC, y.dst COLLATE "C", y.rel COLLATE "C"
                                   LIMIT degree_cap) AS top
                    WHERE top.dst = among_strongest.dst AND top.rel = among_strongest.rel)
$$;
COMMENT ON FUNCTION kgrag_private.among_strongest(text, text, text, text, integer) IS
'Private. Returns whether the edge (src, dst, rel) of the tenant is among the degree_cap strongest edges of its source (weight desc, ties by dst then rel in byte order; true for a NULL cap): how a walk caps the edges it follows against their direction. Reads at most degree_cap index entries.';

CREATE OR REPLACE FUNCTION kgrag_private.edge_scratch() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- pg_temp.kgrag_edge_want: new values for some edge keys (weight 0: the edge must go), read
    -- by kgrag_private.rewrite_edges().
    CREATE TEMP TABLE IF NOT EXISTS kgrag_edge_want (
        src text NOT NULL, dst text NOT NULL, rel text NOT NULL, weight double precision NOT NULL,
        confidence double precision NOT NULL DEFAULT 1, evidence_chunk_id text, evidence_quote text,
        extractor text NOT NULL DEFAULT 'cooccurrence', valid_from timestamptz, valid_to timestamptz
    ) ON COMMIT DROP;
END
$$;
COMMENT ON FUNCTION kgrag_private.edge_scratch() IS
'Private. Returns nothing; creates the temporary table kgrag_private.rewrite_edges() reads.';

CREATE OR REPLACE FUNCTION kgrag_private.rewrite_edges() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    written integer;
    gone record;
BEGIN
    ANALYZE pg_temp.kgrag_edge_want;
    -- What each wanted key does to the stored edge (a key lookup each, whatever the estimates):
    -- insert, update, delete, or nothing when the stored values are the wanted ones.
    CREATE TEMP TABLE kgrag_edge_write ON COMMIT DROP AS
    SELECT x.* FROM (
        SELECT w.*, CASE WHEN g.src IS NULL THEN CASE WHEN w.weight > 0 THEN 'insert' END
                         WHEN w.weight = 0 THEN 'delete'
                         WHEN (g.weight, g.confidence, g.evidence_chunk_id, g.evidence_quote, g.extractor, g.valid_from,
                               g.valid_to)
                              IS DISTINCT FROM (w.weight, w.confidence, w.evidence_chunk_id, w.evidence_quote,
                                                w.extractor, w.valid_from, w.valid_to) THEN 'update' END AS action
          FROM pg_temp.kgrag_edge_want AS w
          LEFT JOIN LATERAL (SELECT e.* FROM kgrag.edge AS e
                              WHERE e.tenant_id = t AND e.src = w.src AND e.dst = w.dst AND e.rel = w.rel
                             OFFSET 0) AS g ON true) AS x
     WHERE x.action IS NOT NULL;
    ANALYZE pg_temp.kgrag_edge_write;

    -- degree = distinct neighbours. Only a pair (src, dst) that gains its first edge or loses its
    -- last one moves it: each such pair is read (its few relation types, a primary-key range)
    -- before anything is written, so a batch never counts a hub's edges. In a CTE: Citus joins a
    -- distributed table with a temporary one only through a CTE or subquery.
    WITH pairs AS MATERIALIZED (
        SELECT w.src, w.dst, bool_or(w.action = 'insert') AS adds,
               array_agg(w.rel) FILTER (WHERE w.action = 'delete') AS dropped
          FROM pg_temp.kgrag_edge_write AS w
         WHERE w.action IN ('insert', 'delete')
         GROUP BY w.src, w.dst
    ), moved AS MATERIALIZED (
        SELECT p.src, sum((p.adds OR s.kept)::integer - s.had::integer)::integer AS delta
          FROM pairs AS p
         CROSS JOIN LATERAL (SELECT count(*) > 0 AS had,
                                    COALESCE(bool_or(e.rel <> ALL (COALESCE(p.dropped, '{}'))), false) AS kept
                               FROM kgrag.edge AS e
                              WHERE e.tenant_id = t AND e.src = p.src AND e.dst = p.dst) AS s
         GROUP BY p.src
    )
    UPDATE kgrag.entity AS e SET degree = e.degree + m.delta
      FROM moved AS m
     WHERE e.tenant_id = t AND e.entity_id = m.src AND m.delta <> 0;

    -- One key at a time, each a primary-key lookup: as one statement the planner, told by
    -- statistics that a tenant new to a large table has no edges, scanned the wanted rows once
    -- per edge of the tenant (5 s for a batch deleting nothing). The rows to delete are the edges
    -- that lost their last citing chunk: few per batch.
    FOR gone IN SELECT w.src, w.dst, w.rel FROM pg_temp.kgrag_edge_write AS w WHERE w.action = 'delete'
                 ORDER BY w.src COLLATE "C", w.dst COLLATE "C", w.rel COLLATE "C" LOOP
        DELETE FROM kgrag.edge AS g
         WHERE g.tenant_id = t AND g.src = gone.src AND g.dst = gone.dst AND g.rel = gone.rel;
    END LOOP;
    INSERT INTO kgrag.edge AS g (tenant_id, src, dst, rel, weight, confidence, evidence_chunk_id, evidence_quote,
                                 extractor, valid_from, valid_to)
    SELECT t, w.src, w.dst, w.rel, w.weight, w.confidence, w.evidence_chunk_id, w.evidence_quote, w.extractor,
           w.valid_from, w.valid_to
      FROM pg_temp.kgrag_edge_write AS w
     WHERE w.action IN ('insert', 'update')
     ORDER BY w.src COLLATE "C", w.dst COLLATE "C", w.rel COLLATE "C"
    ON CONFLICT (tenant_id, src, dst, rel) DO UPDATE
       SET weight = excluded.weight, confidence = excluded.confidence,
           evidence_chunk_id = excluded.evidence_chunk_id, evidence_quote = excluded.evidence_quote,
           extractor = excluded.extractor, valid_from = excluded.valid_from, valid_to = excluded.valid_to;
    GET DIAGNOSTICS written = ROW_COUNT;
    DROP TABLE pg_temp.kgrag_edge_write;
    TRUNCATE pg_temp.kgrag_edge_want;
    RETURN written;
END
$$;
COMMENT ON FUNCTION kgrag_private.rewrite_edges() IS
'Private. Applies pg_temp.kgrag_edge_want (new edge values, weight 0 = remove), writing only the edges whose values change, and moves the degree of each source that gains its first edge to a neighbour or loses its last one. Returns the number of edges inserted or updated.';

CREATE OR REPLACE FUNCTION kgrag.refresh_edge_ranks(entity_ids text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    changed integer;
BEGIN
    IF cardinality(entity_ids) > 1000000 THEN
        RAISE EXCEPTION 'at most 1,000,000 entities at a time, got %', cardinality(entity_ids) USING ERRCODE = '22023';
    END IF;
    -- in a CTE, as rewrite_edges: Citus joins a distributed table with an array only so
    WITH d AS MATERIALIZED (
        SELECT u.id, (SELECT count(DISTINCT g.dst) FROM kgrag.edge AS g
                       WHERE g.tenant_id = t AND g.src = u.id)::integer AS degree
          FROM (SELECT DISTINCT x.id FROM unnest(entity_ids) AS x(id)) AS u
    )
    UPDATE kgrag.entity AS e SET degree = d.degree
      FROM d
     WHERE e.tenant_id = t AND e.entity_id = d.id AND e.degree <> d.degree;
    GET DIAGNOSTICS changed = ROW_COUNT;
    RETURN changed;
END
$$;
COMMENT ON FUNCTION kgrag.refresh_edge_ranks(text[]) IS
'Recounts the degree (distinct neighbours) of the given entities (at most 1,000,000 ids) from their edges, after edges were written by hand (COPY into kgrag.edge); ingestion keeps degrees itself. Returns the number of entities whose degree changed. (Named for the edge ranks it also recomputed before revision 0028; no rank is stored now: a walk reads a node''s strongest edges from edge_src_weight_idx.)';

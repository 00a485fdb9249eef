-- Edge ranks and degrees: every edge's position among its source's edges (by weight, ties
-- broken deterministically) up to edge_rank_depth, and every entity's degree, maintained for the
-- sources that change.

CREATE OR REPLACE FUNCTION kgrag.edge_rank_depth() RETURNS integer
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
     WHERE s.tenant_id = '*' AND s.key = 'edge_rank_depth'
$$;
COMMENT ON FUNCTION kgrag.edge_rank_depth() IS
'Returns how many of each entity''s strongest edges have a rank (setting edge_rank_depth of tenant ''*'', set at install): the others rank edge_rank_depth + 1, and a walk''s degree cap may not exceed it.';

CREATE OR REPLACE FUNCTION kgrag_private.edge_scratch() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- pg_temp.kgrag_edge_want: new values for some edge keys (weight 0: the edge must go).
    -- pg_temp.kgrag_changed: sources whose edges are rewritten by kgrag_private.rewrite_edges().
    CREATE TEMP TABLE IF NOT EXISTS kgrag_edge_want (
        src text NOT NULL, dst text NOT NULL, rel text NOT NULL, weight double precision NOT NULL,
        confidence double precision NOT NULL DEFAULT 1, evidence_chunk_id text, evidence_quote text,
        extractor text NOT NULL DEFAULT 'cooccurrence', valid_from timestamptz, valid_to timestamptz
    ) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_changed (src text PRIMARY KEY) ON COMMIT DROP;
END
$$;
COMMENT ON FUNCTION kgrag_private.edge_scratch() IS
'Private. Returns nothing; creates the temporary tables kgrag_private.rewrite_edges() reads.';

CREATE OR REPLACE FUNCTION kgrag_private.rewrite_edges() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    depth integer := kgrag.edge_rank_depth();
    written integer;
    gone record;
BEGIN
    -- The sources whose edge list changes: named in kgrag_changed, or with a wanted value that
    -- differs from the stored one.
    ANALYZE pg_temp.kgrag_edge_want;
    INSERT INTO pg_temp.kgrag_changed (src)
    SELECT DISTINCT w.src FROM pg_temp.kgrag_edge_want AS w
      LEFT JOIN LATERAL (SELECT e.* FROM kgrag.edge AS e  -- a key lookup, whatever the estimates
                          WHERE e.tenant_id = t AND e.src = w.src AND e.dst = w.dst AND e.rel = w.rel
                         OFFSET 0) AS g ON true
     WHERE CASE WHEN g.src IS NULL THEN w.weight > 0
                WHEN w.weight = 0 THEN true
                ELSE (g.weight, g.confidence, g.evidence_chunk_id, g.evidence_quote, g.extractor, g.valid_from,
                      g.valid_to)
                     IS DISTINCT FROM (w.weight, w.confidence, w.evidence_chunk_id, w.evidence_quote, w.extractor,
                                       w.valid_from, w.valid_to) END
    ON CONFLICT DO NOTHING;
    ANALYZE pg_temp.kgrag_changed;

    -- Their edges after the change, ranked: rank = position among the source's edges by weight
    -- desc, ties by dst then rel (the one place this order is defined; edge_src_weight_idx holds
    -- it), kept for the strongest depth edges only (depth + 1 for the others). Only candidates
    -- are read: a source's strongest depth + (its wanted rows) edges by that order, which hold
    -- every edge ranked within depth now, and the wanted keys. An edge outside them had rank
    -- depth + 1 and at most that many edges above it changed, so it stays beyond depth: a batch
    -- rewrites what it changes and at most depth rows per source, whatever the source's degree.
    CREATE TEMP TABLE kgrag_final ON COMMIT DROP AS
    WITH wanted AS MATERIALIZED (
        SELECT w.src, count(*) AS n FROM pg_temp.kgrag_edge_want AS w GROUP BY w.src
    ), stored AS MATERIALIZED (  -- planned on its own: the candidates, not the tenant's edges
        SELECT DISTINCT ON (x.src, x.dst, x.rel) x.*
          FROM (SELECT g.src, g.dst, g.rel, g.weight, g.confidence, g.evidence_chunk_id, g.evidence_quote,
                       g.extractor, g.valid_from, g.valid_to, g.rank AS old_rank
                  FROM pg_temp.kgrag_changed AS c
                  LEFT JOIN wanted AS n ON n.src = c.src
                 CROSS JOIN LATERAL (
                       SELECT e.* FROM kgrag.edge AS e
                        WHERE e.tenant_id = t AND e.src = c.src
                        ORDER BY e.weight DESC, e.dst COLLATE "C", e.rel COLLATE "C"
                        LIMIT depth + COALESCE(n.n, 0)) AS g
                UNION ALL
                SELECT g.src, g.dst, g.rel, g.weight, g.confidence, g.evidence_chunk_id, g.evidence_quote,
                       g.extractor, g.valid_from, g.valid_to, g.rank
                  FROM pg_temp.kgrag_edge_want AS w JOIN pg_temp.kgrag_changed AS c USING (src)
                 CROSS JOIN LATERAL (SELECT e.* FROM kgrag.edge AS e
                                      WHERE e.tenant_id = t AND e.src = w.src AND e.dst = w.dst AND e.rel = w.rel
                                     OFFSET 0) AS g) AS x
         ORDER BY x.src, x.dst, x.rel
    ), merged AS (
        SELECT w.src, w.dst, w.rel, w.weight, w.confidence, w.evidence_chunk_id, w.evidence_quote, w.extractor,
               w.valid_from, w.valid_to
          FROM pg_temp.kgrag_edge_want AS w JOIN pg_temp.kgrag_changed AS c USING (src)
         WHERE w.weight > 0
        UNION ALL
        SELECT g.src, g.dst, g.rel, g.weight, g.confidence, g.evidence_chunk_id, g.evidence_quote, g.extractor,
               g.valid_from, g.valid_to
          FROM stored AS g
         WHERE NOT EXISTS (SELECT 1 FROM pg_temp.kgrag_edge_want AS w
                            WHERE w.src = g.src AND w.dst = g.dst AND w.rel = g.rel)
    )
    SELECT m.*, LEAST(row_number() OVER (PARTITION BY m.src
                                         ORDER BY m.weight DESC, m.dst COLLATE "C", m.rel COLLATE "C"),
                      depth + 1)::integer AS rank
      FROM merged AS m;
    ANALYZE pg_temp.kgrag_final;

    -- One key at a time, each a primary-key lookup: as one statement the planner, told by
    -- statistics that a tenant new to a large table has no edges, scanned the wanted rows once
    -- per edge of the tenant (5 s for a batch deleting nothing). The rows to delete are the edges
    -- that lost their last citing chunk: few per batch.
    FOR gone IN SELECT w.src, w.dst, w.rel FROM pg_temp.kgrag_edge_want AS w WHERE w.weight = 0
                 ORDER BY w.src COLLATE "C", w.dst COLLATE "C", w.rel COLLATE "C" LOOP
        DELETE FROM kgrag.edge AS g
         WHERE g.tenant_id = t AND g.src = gone.src AND g.dst = gone.dst AND g.rel = gone.rel;
    END LOOP;
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

    -- degree = distinct neighbours (an index-only count over the source's edges); counted in a
    -- CTE, as Citus joins a distributed table with a temporary one only through a CTE or subquery
    WITH d AS MATERIALIZED (
        SELECT c.src, count(DISTINCT g.dst)::integer AS degree
          FROM pg_temp.kgrag_changed AS c
          LEFT JOIN kgrag.edge AS g ON g.tenant_id = t AND g.src = c.src
         GROUP BY c.src
    )
    UPDATE kgrag.entity AS e SET degree = d.degree
      FROM d
     WHERE e.tenant_id = t AND e.entity_id = d.src AND e.degree <> d.degree;
    DROP TABLE pg_temp.kgrag_final;
    TRUNCATE pg_temp.kgrag_edge_want, pg_temp.kgrag_changed;
    RETURN written;
END
$$;
COMMENT ON FUNCTION kgrag_private.rewrite_edges() IS
'Private. Applies pg_temp.kgrag_edge_want (new edge values, weight 0 = remove) and re-ranks every source named there or in pg_temp.kgrag_changed (ranks up to kgrag.edge_rank_depth(), reading only each source''s strongest edges and the changed ones), writing each changed edge once, then updates those sources'' degrees. Returns the number of edges inserted or updated.';

CREATE OR REPLACE FUNCTION kgrag.refresh_edge_ranks(entity_ids text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    PERFORM kgrag_private.edge_scratch();
    INSERT INTO pg_temp.kgrag_changed (src) SELECT DISTINCT u.id FROM unnest(entity_ids) AS u(id) ON CONFLICT DO NOTHING;
    RETURN kgrag_private.rewrite_edges();
END
$$;
COMMENT ON FUNCTION kgrag.refresh_edge_ranks(text[]) IS
'Recomputes, for the given source entities only, each edge''s rank (position among its src''s edges by weight desc, ties by dst then rel, up to kgrag.edge_rank_depth(); the others rank one more) and each entity''s degree (distinct neighbours). Returns the number of edges whose rank changed. Ingestion maintains ranks itself for the sources a batch changes; this is for repairs and hand-made graphs.';

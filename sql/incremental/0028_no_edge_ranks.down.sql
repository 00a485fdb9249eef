-- 0028_no_edge_ranks down: the rank column again, filled for every edge of every tenant as
-- revision 0017 defined it (position among the source's edges by weight desc, ties by dst then
-- rel in byte order, up to edge_rank_depth; edge_rank_depth + 1 for the others).

-- (each statement through EXECUTE, for Citus: see 0021_edge_rank_index.sql; the depth is read
-- first, as Citus plans no subquery of a local table inside a distributed one)
DO $$
DECLARE
    depth integer;
BEGIN
    EXECUTE $c$SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
                WHERE s.tenant_id = '*' AND s.key = 'edge_rank_depth'$c$ INTO depth;
    EXECUTE 'ALTER TABLE kgrag.edge ADD COLUMN rank integer NOT NULL DEFAULT 0';
    EXECUTE 'ALTER TABLE kgrag.edge NO FORCE ROW LEVEL SECURITY';  -- the owner ranks every tenant's edges
    EXECUTE pg_catalog.format(
        $c$UPDATE kgrag.edge AS g SET rank = r.rank
             FROM (SELECT e.tenant_id, e.src, e.dst, e.rel,
                          LEAST(row_number() OVER (PARTITION BY e.tenant_id, e.src
                                                   ORDER BY e.weight DESC, e.dst COLLATE "C", e.rel COLLATE "C"),
                                %s)::integer AS rank
                     FROM kgrag.edge AS e) AS r
            WHERE g.tenant_id = r.tenant_id AND g.src = r.src AND g.dst = r.dst AND g.rel = r.rel$c$, depth + 1);
    EXECUTE 'ALTER TABLE kgrag.edge FORCE ROW LEVEL SECURITY';
    EXECUTE $c$COMMENT ON TABLE kgrag.edge IS 'Graph edges. rel = ''CO_OCCURS'' for co-occurrence (weight = chunks citing both, stored in both directions); other rel values are typed relations aggregated from kgrag.relation_evidence. rank = position among the src''s edges by weight desc, ties by dst then rel, for the strongest edge_rank_depth edges; edge_rank_depth + 1 for the others.'$c$;
    EXECUTE $c$UPDATE kgrag.settings SET description = 'Edge ranks are kept for each entity''s strongest this many edges (the others rank one more); the largest degree cap a walk may use. Set at install; changing it needs kgrag.refresh_edge_ranks over every entity.' WHERE tenant_id = '*' AND key = 'edge_rank_depth'$c$;
END
$$;

-- 0017_pagerank down.

DELETE FROM kgrag.settings WHERE tenant_id = '*'
   AND key IN ('ppr_damping', 'ppr_hops', 'ppr_max_edges', 'ppr_max_iterations', 'ppr_tolerance',
               'ppr_chunk_seed_weight', 'search_graph_ranking');

-- every rank dense again, as before 0017
ALTER TABLE kgrag.edge NO FORCE ROW LEVEL SECURITY;
UPDATE kgrag.edge AS g SET rank = r.rank
  FROM (SELECT e.tenant_id, e.src, e.dst, e.rel,
               (row_number() OVER (PARTITION BY e.tenant_id, e.src
                                   ORDER BY e.weight DESC, e.dst COLLATE "C", e.rel COLLATE "C"))::integer AS rank
          FROM kgrag.edge AS e) AS r
 WHERE g.tenant_id = r.tenant_id AND g.src = r.src AND g.dst = r.dst AND g.rel = r.rel AND g.rank <> r.rank;
ALTER TABLE kgrag.edge FORCE ROW LEVEL SECURITY;
DROP INDEX kgrag.edge_src_weight_idx;
DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key = 'edge_rank_depth';
COMMENT ON TABLE kgrag.edge IS 'Graph edges. rel = ''CO_OCCURS'' for co-occurrence (weight = chunks citing both, stored in both directions); other rel values are typed relations aggregated from kgrag.relation_evidence. rank = position among the src''s edges by weight desc, ties by dst then rel.';

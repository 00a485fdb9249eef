-- 0017_pagerank down.

DELETE FROM kgrag.settings WHERE tenant_id = '*'
   AND key IN ('ppr_damping', 'ppr_hops', 'ppr_max_edges', 'ppr_max_iterations', 'ppr_tolerance',
               'ppr_chunk_seed_weight', 'search_graph_ranking');

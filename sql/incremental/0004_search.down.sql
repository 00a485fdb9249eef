-- Undo 0004_search.
DROP TABLE kgrag.query_log;
DROP TYPE kgrag.search_row CASCADE;  -- with the search functions built on it (re-created at head)
DELETE FROM kgrag.router_rule WHERE tenant_id = '*' AND rule_id IN
    ('en-themes', 'en-dominate', 'en-overview', 'en-whole', 'pt-temas', 'pt-panorama', 'en-general', 'pt-geral');
DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key IN
    ('query_log', 'search_hops', 'search_degree_cap', 'search_entities', 'search_reports', 'search_seeds',
     'entity_seed_min_similarity', 'chunk_min_similarity', 'report_min_similarity', 'lexical_min_coverage',
     'router_flat_gap', 'rrf_k', 'rrf_graph_weight');

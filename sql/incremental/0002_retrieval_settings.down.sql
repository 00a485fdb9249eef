-- Undo 0002_retrieval_settings.
DELETE FROM kgrag.settings
 WHERE tenant_id = '*'
   AND key IN ('vector_overfetch', 'vector_min_candidates', 'hnsw_ef_search', 'hnsw_max_scan_tuples',
               'entity_min_similarity', 'max_hops', 'khop_timeout_ms', 'link_min_ratio', 'link_min_trigram',
               'link_stopwords');

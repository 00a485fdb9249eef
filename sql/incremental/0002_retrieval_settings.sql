-- 0002_retrieval_settings: defaults (tenant '*') read by the retrieval functions of sql/idempotent.
-- A tenant overrides one with a row of its own; kgrag.setting(key) reads the effective value.

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'vector_overfetch', '30',
     'Vector search fetches k * vector_overfetch candidates by Hamming distance on the binary-quantized index, then re-ranks them by exact cosine.'),
    ('*', 'vector_min_candidates', '100',
     'Lower bound of the candidate count of a vector search, whatever k is.'),
    ('*', 'hnsw_ef_search', '100',
     'hnsw.ef_search for vector searches; raised to the candidate count when that is larger.'),
    ('*', 'hnsw_max_scan_tuples', '20000',
     'hnsw.max_scan_tuples: how far an iterative index scan may go to find enough rows of the tenant.'),
    ('*', 'entity_min_similarity', '0.5',
     'Cosine similarity floor of kgrag.search_entities_vector (unless a caller passes its own).'),
    ('*', 'max_hops', '4',
     'kgrag.k_hop and kgrag.fanout refuse more hops than this.'),
    ('*', 'khop_timeout_ms', '5000',
     'A traversal that runs longer than this is cancelled (SQLSTATE 57014) with a message saying how to narrow it.'),
    ('*', 'link_min_ratio', '0.5',
     'Entity linking, containment tier: minimum length ratio between the contained and the containing squashed name.'),
    ('*', 'link_min_trigram', '0.5',
     'Entity linking, typo tier: minimum trigram similarity (Jaccard) between a squashed question span and a squashed alias.'),
    ('*', 'link_stopwords',
     '["a","an","and","as","at","by","de","da","das","do","dos","e","em","for","from","in","is","na","nas","no","nos","o","os","of","on","or","para","por","the","to","with","um","uma"]',
     'Words that entity linking drops when it joins the tokens of a question span ("servico de autenticacao" -> "servicoautenticacao").');

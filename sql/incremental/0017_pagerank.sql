-- 0017_pagerank: the settings of kgrag.personalized_pagerank and of the local route's graph ranking.

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'ppr_damping', '0.5', 'Personalized PageRank: the chance to follow a link rather than restart at the seeds (HippoRAG uses 0.5).'),
    ('*', 'ppr_hops', '2', 'Personalized PageRank: the subgraph holds the entities within this many edges of the seeds.'),
    ('*', 'ppr_max_edges', '20000', 'Personalized PageRank: at most this many entity-chunk links in the subgraph (nearest entities first): bounds the work of a query.'),
    ('*', 'ppr_max_iterations', '50', 'Personalized PageRank: at most this many rounds of power iteration.'),
    ('*', 'ppr_tolerance', '1e-6', 'Personalized PageRank: stop once a round changes the masses by less than this (L1).'),
    ('*', 'ppr_chunk_seed_weight', '0.05', 'Personalized PageRank in a search: each vector-search chunk joins the seeds with this weight times its normalized similarity (HippoRAG 2 uses 0.05).'),
    ('*', 'search_graph_ranking', '"paths"', 'How the local route ranks the graph''s chunks (search option graph_ranking): paths (the chunks of the entities the k-hop walk reached, nearest first), pagerank (Personalized PageRank mass) or both (the two lists fused).');

-- 0017_pagerank: the settings of kgrag.personalized_pagerank and of the local route's graph ranking,
-- and edge ranks bounded to each source's strongest edges.

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'ppr_damping', '0.5', 'Personalized PageRank: the chance to follow a link rather than restart at the seeds (HippoRAG uses 0.5).'),
    ('*', 'ppr_hops', '2', 'Personalized PageRank: the subgraph holds the entities within this many edges of the seeds.'),
    ('*', 'ppr_max_edges', '20000', 'Personalized PageRank: at most this many entity-chunk links in the subgraph (nearest entities first): bounds the work of a query.'),
    ('*', 'ppr_max_iterations', '50', 'Personalized PageRank: at most this many rounds of power iteration.'),
    ('*', 'ppr_tolerance', '1e-6', 'Personalized PageRank: stop once a round changes the masses by less than this (L1).'),
    ('*', 'ppr_chunk_seed_weight', '0.05', 'Personalized PageRank in a search: each vector-search chunk joins the seeds with this weight times its normalized similarity (HippoRAG 2 uses 0.05).'),
    ('*', 'search_graph_ranking', '"paths"', 'How the local route ranks the graph''s chunks (search option graph_ranking): paths (the chunks of the entities the k-hop walk reached, nearest first), pagerank (Personalized PageRank mass) or both (the two lists fused).');

-- Edge ranks are kept for each source's strongest edge_rank_depth edges only (the rest have rank
-- edge_rank_depth + 1): adding an edge to a hub then rewrites at most that many rows instead of
-- every edge below it, so a batch no longer pays for the hubs' degrees. The walk's degree cap is
-- bounded by it. The index gives a source's strongest edges in rank order without reading them all.
INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'edge_rank_depth', '100', 'Edge ranks are kept for each entity''s strongest this many edges (the others rank one more); the largest degree cap a walk may use. Set at install; changing it needs kgrag.refresh_edge_ranks over every entity.');
CREATE INDEX edge_src_weight_idx ON kgrag.edge (tenant_id, src, weight DESC, dst COLLATE "C", rel COLLATE "C");
ALTER TABLE kgrag.edge NO FORCE ROW LEVEL SECURITY;  -- the owner bounds every tenant's ranks once
UPDATE kgrag.edge SET rank = 101 WHERE rank > 101;
ALTER TABLE kgrag.edge FORCE ROW LEVEL SECURITY;
COMMENT ON TABLE kgrag.edge IS 'Graph edges. rel = ''CO_OCCURS'' for co-occurrence (weight = chunks citing both, stored in both directions); other rel values are typed relations aggregated from kgrag.relation_evidence. rank = position among the src''s edges by weight desc, ties by dst then rel, for the strongest edge_rank_depth edges; edge_rank_depth + 1 for the others.';

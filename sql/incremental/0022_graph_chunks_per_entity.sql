-- 0022_graph_chunks_per_entity: the local route's graph list reads a bounded number of chunks.
--
-- The list ranks the chunks citing the entities a walk reached. Walks reach hubs (the strongest
-- edges lead to them), and a hub is cited by thousands of chunks: at 100k chunks a local search
-- aggregated, sorted and fused 20,000 of them (120 ms of its 170 ms). The list now ranks each
-- reached entity's first graph_chunks_per_entity citing chunks (by chunk id) and the chunks the
-- other lists hold, each with every reached entity it cites counted.

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'graph_chunks_per_entity', '100',
     'Local route: the graph list ranks at most this many chunks citing each reached entity (the first by chunk id), besides the chunks the vector and lexical lists hold. Bounds the work of a walk that reaches a hub.');

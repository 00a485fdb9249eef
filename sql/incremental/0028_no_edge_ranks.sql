-- 0028_no_edge_ranks: kgrag.edge stores no rank; degrees move with the neighbours gained and lost.
--
-- An edge's rank (its position among its source's edges by weight, kept up to edge_rank_depth)
-- moved whenever an edge above it changed: a batch that added or re-weighted edges of a hub
-- rewrote up to edge_rank_depth rows of that hub, and recounted the distinct neighbours of every
-- source it touched. benchmarks/batch_profile.py --batches 34, run before and after this
-- revision: in the 34th batch (191k chunks) the edge upsert sent 197,321 rows, updated 115,640 of
-- them and left 66,108 as they were, to insert 15,573 edges; after, it sends the 37,838 that
-- change. kgrag_private.rewrite_edges took 7.4 s in that batch before, 2.1 s after (1.2 and 1.5 s
-- in the first; under auto_explain, which slows both), the batch ran at 279 and 425 chunks/s, and
-- the 34 batches updated 3,012,905 and 592,838 edge rows. The walks never read rank going out
-- (they take a node's strongest edges from edge_src_weight_idx, weight desc, dst, rel: the order
-- ranks were defined by); against an edge's direction they now ask that index whether the edge
-- is among its source's strongest (kgrag_private.among_strongest), which reads at most the
-- degree cap's entries. A batch writes only the edges whose values change.
--
-- edge_rank_depth stays the largest degree cap a walk may use.
-- One statement (a DO block), each statement through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'ALTER TABLE kgrag.edge DROP COLUMN rank';
    EXECUTE $c$COMMENT ON TABLE kgrag.edge IS 'Graph edges. rel = ''CO_OCCURS'' for co-occurrence (weight = chunks citing both, stored in both directions); other rel values are typed relations aggregated from kgrag.relation_evidence. A source''s edges by strength (weight desc, ties by dst then rel in byte order) are read from edge_src_weight_idx.'$c$;
    EXECUTE $c$UPDATE kgrag.settings SET description = 'The largest degree cap a walk may use: a capped walk reads at most this many of a node''s strongest edges.' WHERE tenant_id = '*' AND key = 'edge_rank_depth'$c$;
END
$$;

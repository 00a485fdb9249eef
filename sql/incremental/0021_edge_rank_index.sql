-- 0021_edge_rank_index: an edge's stored rank without an index of its own.
--
-- A batch that adds edges to a source shifts the ranks of the edges below them (up to
-- edge_rank_depth per source): at 40k chunks a 2,000-document batch updated 71,932 edge rows to
-- insert 20,124 (benchmarks/batch_profile.py). With rank in an index, each such update wrote a
-- new entry in every index of kgrag.edge. The walks now take a node's strongest edges from
-- edge_src_weight_idx (weight desc, dst, rel: the order ranks are defined by), so rank needs no
-- index, and with room on each page (fillfactor) a rank shift is a heap-only update.

--
-- Each statement through EXECUTE: on a distributed kgrag.edge Citus sends the text of the query
-- to the workers, and the installer runs this file as one query of several statements, which
-- the workers refuse ("cannot insert multiple commands into a prepared statement").
DO $$
BEGIN
    EXECUTE 'DROP INDEX kgrag.edge_src_rank_idx';
    EXECUTE 'ALTER TABLE kgrag.edge SET (fillfactor = 80)';
END
$$;

-- 0021_edge_rank_index down: the rank index and the default fill factor again.

-- (each statement through EXECUTE, for Citus: see 0021_edge_rank_index.sql)
DO $$
BEGIN
    EXECUTE 'ALTER TABLE kgrag.edge RESET (fillfactor)';
    EXECUTE 'CREATE INDEX edge_src_rank_idx ON kgrag.edge (tenant_id, src, rank)';
END
$$;

-- 0026_gin_pending_lists down: the GIN indexes gather new entries in a pending list again.
--
-- One statement (a DO block), each statement through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'ALTER INDEX kgrag.chunk_tsv_idx RESET (fastupdate)';
    EXECUTE 'ALTER INDEX kgrag.alias_trigrams_idx RESET (fastupdate)';
END
$$;

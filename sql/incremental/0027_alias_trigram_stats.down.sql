-- 0027_alias_trigram_stats down: linking reads the planner's statistics again.
--
-- One statement (a DO block), each statement through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'DROP TABLE kgrag.alias_trigram_stats';
END
$$;

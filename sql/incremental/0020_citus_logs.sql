-- 0020_citus_logs: on a Citus cluster, the two logs in a co-location group of their own.
--
-- kgrag.query_log and kgrag.answer_log are written by SECURITY DEFINER functions owned by
-- kgrag_logger, so Citus writes them over a connection of that role. Co-located with
-- kgrag.document, the placements of the tenant's whole shard group then count as modified by
-- another user, and the rest of the transaction may not read them: a second kgrag_search in one
-- transaction failed. The logs are never joined with the graph, so they leave its group (still
-- distributed by tenant_id: each statement still runs on one shard). Nothing changes on a
-- database without Citus, or where the logs are not distributed yet (kgrag.distribute() places
-- them apart from now on).

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RETURN;  -- (and pg_dist_partition does not exist: the test below would not plan)
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition AS p
                WHERE p.logicalrelid = 'kgrag.answer_log'::pg_catalog.regclass
                  AND p.colocationid = (SELECT d.colocationid FROM pg_catalog.pg_dist_partition AS d
                                         WHERE d.logicalrelid = 'kgrag.document'::pg_catalog.regclass)) THEN
        PERFORM pg_catalog.update_distributed_table_colocation('kgrag.answer_log'::pg_catalog.regclass,
                                                               colocate_with => 'none');
        PERFORM pg_catalog.update_distributed_table_colocation('kgrag.query_log'::pg_catalog.regclass,
                                                               colocate_with => 'kgrag.answer_log');
    END IF;
END
$$;

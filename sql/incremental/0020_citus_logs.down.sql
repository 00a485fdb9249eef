-- 0020_citus_logs down: the logs co-located with kgrag.document again, as revision 0019's
-- kgrag.distribute() placed them (where Citus distributes them).

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RETURN;  -- (and pg_dist_partition does not exist: the test below would not plan)
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition AS p
                WHERE p.logicalrelid = 'kgrag.answer_log'::pg_catalog.regclass
                  AND p.colocationid <> (SELECT d.colocationid FROM pg_catalog.pg_dist_partition AS d
                                         WHERE d.logicalrelid = 'kgrag.document'::pg_catalog.regclass)) THEN
        PERFORM pg_catalog.update_distributed_table_colocation('kgrag.answer_log'::pg_catalog.regclass,
                                                               colocate_with => 'kgrag.document');
        PERFORM pg_catalog.update_distributed_table_colocation('kgrag.query_log'::pg_catalog.regclass,
                                                               colocate_with => 'kgrag.document');
    END IF;
END
$$;

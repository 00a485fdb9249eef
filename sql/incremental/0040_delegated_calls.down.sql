-- 0040_delegated_calls down: the logs in a co-location group of their own again, as revision 0020
-- placed them (where Citus distributes them): answer_log first, the other three with it.

DO $$
DECLARE
    log_table text;
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
        FOREACH log_table IN ARRAY ARRAY['kgrag.query_log', 'kgrag.log_overflow', 'kgrag.llm_call'] LOOP
            IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition AS p
                        WHERE p.logicalrelid = log_table::pg_catalog.regclass) THEN
                PERFORM pg_catalog.update_distributed_table_colocation(log_table::pg_catalog.regclass,
                                                                       colocate_with => 'kgrag.answer_log');
            END IF;
        END LOOP;
    END IF;
END
$$;

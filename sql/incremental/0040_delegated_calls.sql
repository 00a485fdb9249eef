-- 0040_delegated_calls: on a Citus cluster, the logs in the graph's co-location group again.
--
-- From this release a tenant's search runs on the worker holding its shards, in one call
-- (kgrag_private.delegate_calls makes each function whose first argument is the tenant a function
-- Citus delegates). Citus runs a delegated call inside a transaction only where every statement
-- of it names the same tenant in the same co-location group, and the search writes its log row
-- there: the four logs join kgrag.document's group. The reason 0020 moved them out no longer holds:
-- the log writers run on the worker, as kgrag_logger, inside the caller's own delegated call, so the
-- coordinator never writes the tenant's placements over a connection of another role. Nothing
-- changes on a database without Citus, or where the logs are not distributed yet
-- (kgrag.distribute() places them in the group from now on).

DO $$
DECLARE
    log_table text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RETURN;  -- (and pg_dist_partition does not exist: the test below would not plan)
    END IF;
    FOREACH log_table IN ARRAY ARRAY['kgrag.answer_log', 'kgrag.query_log', 'kgrag.log_overflow', 'kgrag.llm_call'] LOOP
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition AS p
                    WHERE p.logicalrelid = log_table::pg_catalog.regclass
                      AND p.colocationid <> (SELECT d.colocationid FROM pg_catalog.pg_dist_partition AS d
                                              WHERE d.logicalrelid = 'kgrag.document'::pg_catalog.regclass)) THEN
            PERFORM pg_catalog.update_distributed_table_colocation(log_table::pg_catalog.regclass,
                                                                   colocate_with => 'kgrag.document');
        END IF;
    END LOOP;
END
$$;

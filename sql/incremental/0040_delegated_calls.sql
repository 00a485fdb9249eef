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
            -- metadata only: each log shard must already sit where kgrag.document's shard of the
            -- same hash range does (as kgrag.distribute() placed them, unless shards were moved)
            IF (SELECT count(*) FROM pg_catalog.pg_dist_shard AS a WHERE a.logicalrelid = log_table::pg_catalog.regclass)
               <> (SELECT count(*) FROM pg_catalog.pg_dist_shard AS d WHERE d.logicalrelid = 'kgrag.document'::pg_catalog.regclass)
               OR EXISTS (SELECT 1
                            FROM pg_catalog.pg_dist_shard AS a
                            JOIN pg_catalog.pg_dist_placement AS ap ON ap.shardid = a.shardid
                            JOIN pg_catalog.pg_dist_shard AS d ON d.logicalrelid = 'kgrag.document'::pg_catalog.regclass
                                                              AND d.shardminvalue = a.shardminvalue
                            JOIN pg_catalog.pg_dist_placement AS dp ON dp.shardid = d.shardid
                           WHERE a.logicalrelid = log_table::pg_catalog.regclass AND ap.groupid <> dp.groupid) THEN
                RAISE EXCEPTION '% cannot join kgrag.document''s co-location group: its shards are not where kgrag.document''s are',
                                log_table
                    USING ERRCODE = '55000',
                          HINT = 'Move its shards next to kgrag.document''s of the same hash range (citus_move_shard_placement), '
                                 'or give it as many shards, then run the upgrade again; docs/upgrading.md, revision 0040.';
            END IF;
            PERFORM pg_catalog.update_distributed_table_colocation(log_table::pg_catalog.regclass,
                                                                   colocate_with => 'kgrag.document');
        END IF;
    END LOOP;
END
$$;

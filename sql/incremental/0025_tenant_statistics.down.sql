-- 0025_tenant_statistics down: the default statistics target for tenant_id again.
--
-- One statement (a DO block), each statement through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    r record;
    distributed text[] := '{}';
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        -- Citus refuses SET STATISTICS on a distributed table (its shards keep the default)
        EXECUTE 'SELECT COALESCE(array_agg(logicalrelid::regclass::text), ''{}'') FROM pg_catalog.pg_dist_partition'
           INTO distributed;
    END IF;
    FOR r IN SELECT c.relname FROM pg_catalog.pg_class AS c
              WHERE c.relnamespace = 'kgrag'::pg_catalog.regnamespace AND c.relkind IN ('r', 'p')
                AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute AS a
                             WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
                AND c.oid::pg_catalog.regclass::text <> ALL (distributed)
              ORDER BY c.relname LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I ALTER COLUMN tenant_id SET STATISTICS -1', r.relname);
    END LOOP;
END
$$;

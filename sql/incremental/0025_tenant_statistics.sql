-- 0025_tenant_statistics: the planner's estimate for a tenant, whichever tenant it is.
--
-- ANALYZE keeps, for tenant_id, the share of each tenant it saw. A tenant that came after it is,
-- to those statistics, a tenant with no rows: every plan for it then starts from an estimate of
-- one row, and one that pairs two of its tables by an index on tenant_id alone reads the tenant
-- once per row of the other (benchmarks/tenants.py, a new tenant beside 3 x 25k chunks of others,
-- at commit 306adc3: 125 chunks/s against 450 alone, falling batch by batch). With a statistics target of
-- 1 the planner keeps the largest tenant's share only and gives every other tenant, known or new,
-- an equal part of the rest: never nothing. The tables are analyzed again at once (a sample of
-- each, not a scan). On a Citus cluster the tables already distributed keep the default (Citus
-- refuses SET STATISTICS on them; docs/scale-out.md).
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
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I ALTER COLUMN tenant_id SET STATISTICS 1', r.relname);
        EXECUTE pg_catalog.format('ANALYZE kgrag.%I', r.relname);
    END LOOP;
END
$$;

-- 0027_alias_trigram_stats: the commonest trigrams of a tenant's names, where its roles can read them.
--
-- Entity linking draws a span's candidates by its rarest trigrams (kgrag_private.probe_trigrams),
-- known until now from the planner's element statistics of kgrag.alias.trigrams (pg_stats). pg_stats
-- hides a table's statistics from every role its row-level security applies to, and the kgrag
-- tables force it on their owner: only a superuser or a BYPASSRLS role ever saw them. For
-- kgrag_reader the probe took the span's inner trigrams in order, and one common in the tenant's
-- names ("ter", in every "Cluster ..." name of the generated corpus) made a span read every name
-- holding it. kgrag.alias_trigram_stats holds, per tenant, its names' commonest trigrams and the share of
-- its names holding each, counted by kgrag.refresh_alias_trigram_stats() (pgkgrag build), under the
-- tenant policy like every table: a tenant's statistics are of its own names only. As
-- kgrag_reader, on one tenant of 25k generated chunks, linking without and with them: p95 36.6 ->
-- 7.2 ms, max 37.7 -> 8.5, p50 4.9 -> 4.8 (benchmarks/linking_stats.py, docs/benchmarks.md). Until
-- a build counts them, linking probes as before.
--
-- One statement (a DO block), each statement through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.alias''::regclass)'
           INTO distributed;
    END IF;
    EXECUTE $q$
CREATE TABLE kgrag.alias_trigram_stats (
    tenant_id text PRIMARY KEY,
    common    text[] NOT NULL,
    frequency real[] NOT NULL,
    CHECK (cardinality(common) = cardinality(frequency))
)$q$;
    IF distributed THEN  -- a new table of the graph goes where kgrag.alias is (kgrag.distribute())
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.alias_trigram_stats', 'tenant_id', colocate_with => 'kgrag.alias')$q$;
    ELSE  -- as 0025 set for every table (Citus refuses it on a distributed one)
        EXECUTE 'ALTER TABLE kgrag.alias_trigram_stats ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    EXECUTE $q$COMMENT ON TABLE kgrag.alias_trigram_stats IS 'Per tenant, the commonest trigrams of its names (kgrag.alias.trigrams), most common first, and the share of its names holding each: written by kgrag.refresh_alias_trigram_stats (pgkgrag build), read by kgrag.link_entities to probe the alias index with a span''s rarest trigrams.'$q$;
    EXECUTE 'ALTER TABLE kgrag.alias_trigram_stats ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.alias_trigram_stats FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.alias_trigram_stats
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'GRANT SELECT ON kgrag.alias_trigram_stats TO kgrag_reader';
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.alias_trigram_stats TO kgrag_writer';
END
$$;

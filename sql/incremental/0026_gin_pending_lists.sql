-- 0026_gin_pending_lists: the GIN indexes take new entries at once, not through a pending list.
--
-- With fastupdate (PostgreSQL's default) a GIN index gathers new entries in an unsorted pending
-- list, up to gin_pending_list_limit (4 MB), and every search reads the whole list. Ingestion
-- writes chunks (chunk_tsv_idx) and names (alias_trigrams_idx) all the time, so the lists are
-- rarely empty, and linking probes the trigram index once per span of the question, lexical
-- search the tsvector index once per term. Measured side by side (benchmarks/pending_lists.py: 8
-- batches of 2,000 generated documents into databases differing only in these options), the mean
-- p50 of linking fell from 29.4 to 8.3 ms and of lexical search from 102 to 4.6 ms, while
-- ingestion ran at 699 chunks/s against 680 with the lists (docs/benchmarks.md,
-- "GIN pending lists"). What the lists hold is merged into the indexes now.
--
-- One statement (a DO block), each statement through EXECUTE: see 0021_edge_rank_index.sql (Citus).
-- Citus passes ALTER INDEX ... SET on to the shards' indexes; their lists are left to autovacuum.
DO $$
DECLARE
    distributed text[] := '{}';
    r record;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT COALESCE(array_agg(logicalrelid::regclass::text), ''{}'') FROM pg_catalog.pg_dist_partition'
           INTO distributed;
    END IF;
    FOR r IN SELECT i.index_name, i.table_name
               FROM (VALUES ('chunk_tsv_idx', 'kgrag.chunk'), ('alias_trigrams_idx', 'kgrag.alias'))
                    AS i(index_name, table_name)
              ORDER BY 1 LOOP
        EXECUTE pg_catalog.format('ALTER INDEX kgrag.%I SET (fastupdate = off)', r.index_name);
        IF r.table_name <> ALL (distributed) THEN
            PERFORM pg_catalog.gin_clean_pending_list(pg_catalog.format('kgrag.%I', r.index_name)::pg_catalog.regclass);
        END IF;
    END LOOP;
END
$$;

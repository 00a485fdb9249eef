-- 0039_limits_and_logs: limits a tenant cannot lift, and logs a tenant cannot erase or flood, that
-- forget and that are kept as long as the settings say.
--
-- - Setting setting_limits (tenant '*', which only the schema owner writes): for each setting a
--   tenant may tune, the most it may set ({"max": n}, and {"min": n}) or the values it may take
--   ({"allowed": [...]}). A tenant's row outside them is refused when written, by the policy of
--   kgrag.settings (kgrag_private.setting_allowed and kgrag_private.within_limits, created here:
--   sql/idempotent/004_limits.kept.sql holds their bodies), and one written before, or above a limit the owner lowered since, is read
--   clamped (kgrag.setting). Question text stays out of the log unless the owner allows it, and
--   neither a tenant's setting query_log nor the search option log turns the log off unless the
--   owner allows it.
-- - The logs are the owner's: kgrag_writer no longer inserts, updates or deletes rows of
--   kgrag.query_log and kgrag.answer_log (the SECURITY DEFINER log writers insert them).
-- - Setting log_rate_per_minute: a tenant's searches beyond it in a minute still answer, and are
--   counted in kgrag.log_overflow (one row per tenant and minute) instead of logged one by one.
-- - Settings query_log_days, answer_log_days, ingest_failure_days: how long kgrag.purge() keeps
--   the rows of the logs (and of kgrag.log_overflow) and of kgrag.ingest_failure, per tenant
--   within the owner's limits.
-- - kgrag.llm_call: every LLM call (extraction, community reports, answers): its purpose, the
--   answer's route, model, tokens in and out, cached or not, milliseconds; written by
--   kgrag_private.log_llm_calls (the log writer), summed per day, purpose and route by kgrag.llm_cost.
-- - kgrag.ingest_failure gains source and line: every input an ingestion could not take (a line
--   that is not JSON, a document refused, a relation dropped) is a row, with its file and line
--   (kgrag_private.record_input_failures).
-- - The log writer (kgrag_logger, owner of the SECURITY DEFINER log functions) may read every
--   tenant's settings and rows of the logs, delete those past their tenant's retention
--   (kgrag.purge) and redact what a deleted document named (kgrag_private.forget_in_logs): it
--   alone, through those functions, besides the schema owner.
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    t text;
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.alias''::regclass)'
           INTO distributed;
    END IF;
    INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'setting_limits', $j${
        "max_question_chars": {"max": 20000}, "search_timeout_ms": {"max": 30000},
        "khop_timeout_ms": {"max": 30000}, "max_hops": {"max": 6}, "max_paths_walked": {"max": 2000000},
        "hnsw_ef_search": {"max": 1000}, "hnsw_max_scan_tuples": {"max": 100000},
        "vector_overfetch": {"max": 100}, "vector_min_candidates": {"max": 1000},
        "lexical_candidates": {"max": 10000}, "graph_chunks_per_entity": {"max": 1000},
        "edge_rank_depth": {"max": 1000}, "search_hops": {"max": 6}, "search_degree_cap": {"max": 100},
        "search_seeds": {"max": 100}, "search_entities": {"max": 100}, "search_reports": {"max": 1000},
        "ppr_hops": {"max": 4}, "ppr_max_edges": {"max": 100000}, "ppr_max_iterations": {"max": 200},
        "answer_max_chars": {"max": 50000}, "answer_map_reports": {"max": 20},
        "rerank_candidates": {"max": 200}, "rerank_timeout_ms": {"max": 10000},
        "max_document_mb": {"max": 50}, "max_file_mb": {"max": 2000}, "reader_timeout_s": {"max": 600},
        "reader_memory_mb": {"max": 8192}, "max_alias_chars": {"max": 2000},
        "max_aliases_per_entity": {"max": 1000}, "max_quote_chars": {"max": 10000},
        "max_title_chars": {"max": 10000}, "log_rate_per_minute": {"min": 1, "max": 600},
        "query_log_days": {"min": 7, "max": 365}, "answer_log_days": {"min": 7, "max": 365},
        "ingest_failure_days": {"min": 7, "max": 3650},
        "log_question_text": {"allowed": [false]}, "query_log": {"allowed": [true]}
     }$j$::jsonb,
     'What a tenant may set its own settings to (only the schema owner writes this row): {"setting": {"max": n, "min": n}} for a number, {"setting": {"allowed": [values]}} otherwise. A tenant''s setting outside them is refused when written (kgrag_private.setting_allowed, from the policy of kgrag.settings) and read clamped to them when it was written before (kgrag.setting); kgrag.settings_in_force says which. Raise a limit here to let tenants go further; allowed [true, false] for log_question_text lets them log question text.'),
    ('*', 'log_rate_per_minute', '600',
     'A tenant''s searches logged in kgrag.query_log per minute; beyond it they still answer, and are counted in kgrag.log_overflow instead.'),
    ('*', 'query_log_days', '90', 'kgrag.purge() deletes the rows of kgrag.query_log (and kgrag.log_overflow) older than this many days.'),
    ('*', 'answer_log_days', '90', 'kgrag.purge() deletes the rows of kgrag.answer_log older than this many days.'),
    ('*', 'ingest_failure_days', '365', 'kgrag.purge() deletes the rows of kgrag.ingest_failure older than this many days (a document ingested again clears its row at once).');
    EXECUTE $q$
CREATE FUNCTION kgrag_private.within_limits(setting_key text, value jsonb) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT value $body$
$q$;
    EXECUTE $q$
CREATE FUNCTION kgrag_private.setting_allowed(tenant text, setting_key text, value jsonb) RETURNS boolean
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT true $body$
$q$;
    EXECUTE 'DROP POLICY tenant_write ON kgrag.settings';
    EXECUTE $q$CREATE POLICY tenant_write ON kgrag.settings USING (tenant_id = kgrag.current_tenant())
        WITH CHECK (tenant_id = kgrag.current_tenant() AND kgrag_private.setting_allowed(tenant_id, key, value))$q$;
    EXECUTE 'REVOKE INSERT, UPDATE, DELETE ON kgrag.query_log, kgrag.answer_log FROM kgrag_writer';
    -- the log writer reads the tenants' rates and retention, counts a tenant's last minute of
    -- rows, purges and redacts: past the tenant policy, in those functions only
    EXECUTE 'GRANT SELECT ON kgrag.settings TO kgrag_logger';
    EXECUTE 'GRANT SELECT, DELETE ON kgrag.query_log, kgrag.answer_log, kgrag.ingest_failure TO kgrag_logger';
    EXECUTE 'GRANT UPDATE (seeds, reason, question, chunk_ids) ON kgrag.query_log TO kgrag_logger';
    EXECUTE 'CREATE POLICY logger_read ON kgrag.settings FOR SELECT TO kgrag_logger USING (true)';
    FOREACH t IN ARRAY ARRAY['query_log', 'answer_log', 'ingest_failure'] LOOP
        EXECUTE pg_catalog.format('CREATE POLICY logger_read ON kgrag.%I FOR SELECT TO kgrag_logger USING (true)', t);
        EXECUTE pg_catalog.format('CREATE POLICY logger_purge ON kgrag.%I FOR DELETE TO kgrag_logger USING (true)', t);
    END LOOP;
    EXECUTE 'CREATE POLICY logger_redact ON kgrag.query_log FOR UPDATE TO kgrag_logger USING (true) WITH CHECK (true)';
    EXECUTE $q$
CREATE TABLE kgrag.log_overflow (
    tenant_id text NOT NULL,
    minute    timestamptz NOT NULL,
    searches  integer NOT NULL CHECK (searches > 0),
    PRIMARY KEY (tenant_id, minute)
)$q$;
    EXECUTE $q$COMMENT ON TABLE kgrag.log_overflow IS 'The searches a tenant made beyond its setting log_rate_per_minute, counted per minute instead of logged one by one in kgrag.query_log. Written by kgrag_private.log_search.'$q$;
    IF distributed THEN  -- with the logs (kgrag.distribute())
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.log_overflow', 'tenant_id', colocate_with => 'kgrag.answer_log')$q$;
    ELSE
        EXECUTE 'ALTER TABLE kgrag.log_overflow ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    EXECUTE 'ALTER TABLE kgrag.log_overflow ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.log_overflow FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.log_overflow
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'GRANT SELECT ON kgrag.log_overflow TO kgrag_reader, kgrag_writer, kgrag_curator';
    EXECUTE $q$
CREATE TABLE kgrag.llm_call (
    tenant_id         text NOT NULL,
    call_id           uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid(),
    called_at         timestamptz NOT NULL DEFAULT pg_catalog.now(),
    purpose           text NOT NULL CHECK (purpose IN ('extraction', 'report', 'answer', 'rerank')),
    route             text CHECK (pg_catalog.length(route) <= 32),
    model             text NOT NULL CHECK (pg_catalog.length(model) <= 200),
    prompt_tokens     integer NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens integer NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    cached            boolean NOT NULL DEFAULT false,
    ms                double precision NOT NULL DEFAULT 0 CHECK (ms >= 0),
    PRIMARY KEY (tenant_id, call_id)
)$q$;
    EXECUTE $q$COMMENT ON TABLE kgrag.llm_call IS 'One row per LLM call made for a tenant (extraction, community reports, answers; an extraction answered from the cache is a row with cached true and no tokens): purpose, the answer''s route, model, tokens in and out as the endpoint counted them, milliseconds. Written by kgrag_private.log_llm_calls; kgrag.llm_cost sums it; kgrag.purge keeps it answer_log_days.'$q$;
    EXECUTE 'CREATE INDEX llm_call_time_idx ON kgrag.llm_call (tenant_id, called_at)';
    IF distributed THEN  -- with the logs (kgrag.distribute())
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.llm_call', 'tenant_id', colocate_with => 'kgrag.answer_log')$q$;
    ELSE
        EXECUTE 'ALTER TABLE kgrag.llm_call ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    EXECUTE 'ALTER TABLE kgrag.llm_call ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.llm_call FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.llm_call
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'GRANT SELECT ON kgrag.llm_call TO kgrag_reader, kgrag_writer, kgrag_curator';
    EXECUTE 'GRANT SELECT, INSERT, DELETE ON kgrag.llm_call TO kgrag_logger';
    EXECUTE 'CREATE POLICY logger_read ON kgrag.llm_call FOR SELECT TO kgrag_logger USING (true)';
    EXECUTE 'CREATE POLICY logger_purge ON kgrag.llm_call FOR DELETE TO kgrag_logger USING (true)';
    EXECUTE 'ALTER TABLE kgrag.ingest_failure ADD COLUMN source text';
    EXECUTE 'ALTER TABLE kgrag.ingest_failure ADD COLUMN line integer';
    EXECUTE $q$COMMENT ON TABLE kgrag.ingest_failure IS 'What an ingestion could not take, and why: a document whose extraction failed or that was refused (kept under its doc_id until it is ingested), a file that could not be read, a line that was not a document or a relation that was dropped (kept under ''#'' || source || '':'' || line until its file is read again without it); with the file (source) and line where known. kgrag.purge deletes rows older than the setting ingest_failure_days.'$q$;
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.log_overflow TO kgrag_logger';
    EXECUTE 'CREATE POLICY logger_read ON kgrag.log_overflow FOR SELECT TO kgrag_logger USING (true)';
    EXECUTE 'CREATE POLICY logger_purge ON kgrag.log_overflow FOR DELETE TO kgrag_logger USING (true)';
END
$$;

-- 0041_doors down: the decisions' table writable as revision 0034 left it, the ended decisions,
-- the settings' rules gone, the logs' question hash back (empty for the rows of the meantime).
DO $$
DECLARE
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
    propagation text;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.alias''::regclass)'
           INTO distributed;
    END IF;
    EXECUTE 'DROP TABLE kgrag.curation_ended';
    EXECUTE 'GRANT UPDATE (seeds, reason, question, chunk_ids) ON kgrag.query_log TO kgrag_logger';
    EXECUTE 'CREATE POLICY logger_redact ON kgrag.query_log FOR UPDATE TO kgrag_logger USING (true) WITH CHECK (true)';
    EXECUTE 'ALTER TABLE kgrag.query_log DROP CONSTRAINT query_log_bounded';
    EXECUTE 'ALTER TABLE kgrag.answer_log DROP CONSTRAINT answer_log_bounded';
    EXECUTE $q$ALTER TABLE kgrag.query_log ADD COLUMN question_hash text NOT NULL DEFAULT ''$q$;
    EXECUTE $q$ALTER TABLE kgrag.answer_log ADD COLUMN question_hash text NOT NULL DEFAULT ''$q$;
    EXECUTE 'ALTER TABLE kgrag.query_log ALTER COLUMN question_hash DROP DEFAULT';
    EXECUTE 'ALTER TABLE kgrag.answer_log ALTER COLUMN question_hash DROP DEFAULT';
    EXECUTE $q$ALTER TABLE kgrag.query_log ADD CONSTRAINT query_log_bounded CHECK (
    pg_catalog.length(question_hash) <= 64 AND pg_catalog.length(route) <= 32 AND pg_catalog.length(reason) <= 4000
    AND pg_catalog.cardinality(seeds) <= 100 AND paths_walked >= 0 AND rows_returned >= 0 AND ms >= 0) NOT VALID$q$;
    EXECUTE $q$ALTER TABLE kgrag.answer_log ADD CONSTRAINT answer_log_bounded CHECK (
    pg_catalog.length(question_hash) <= 64 AND pg_catalog.length(route) <= 32 AND calls >= 0 AND prompt_tokens >= 0
    AND completion_tokens >= 0 AND context_chars >= 0 AND citations >= 0 AND dropped >= 0 AND ms >= 0)$q$;
    -- the settings' policy calls what revision 0040 left (the kept bodies of then) before the rules go
    EXECUTE $q$
CREATE OR REPLACE FUNCTION kgrag_private.within_limits(setting_key text, value jsonb) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $body$
    -- a tenant's row written before its limit (or above one the owner lowered since): a number
    -- is clamped, another value outside the allowed ones gives way to the default
    SELECT CASE
        WHEN x.limits IS NULL THEN value
        WHEN x.limits ? 'allowed' AND EXISTS (SELECT 1 FROM jsonb_array_elements(x.limits -> 'allowed') AS a(v)
                                              WHERE a.v = value) THEN value
        WHEN x.limits ? 'allowed' OR jsonb_typeof(value) IS DISTINCT FROM 'number'
        THEN (SELECT d.value FROM kgrag.settings AS d WHERE d.tenant_id = '*' AND d.key = setting_key)
        WHEN value::numeric > (x.limits ->> 'max')::numeric THEN x.limits -> 'max'
        WHEN value::numeric < (x.limits ->> 'min')::numeric THEN x.limits -> 'min'
        ELSE value END
      FROM (SELECT (SELECT s.value -> setting_key FROM kgrag.settings AS s
                     WHERE s.tenant_id = '*' AND s.key = 'setting_limits') AS limits) AS x
$body$
$q$;
    EXECUTE $q$
CREATE OR REPLACE FUNCTION kgrag_private.setting_allowed(tenant text, setting_key text, value jsonb) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$
DECLARE
    limits jsonb := (SELECT s.value -> setting_key FROM kgrag.settings AS s
                      WHERE s.tenant_id = '*' AND s.key = 'setting_limits');
    hint text := 'The schema owner sets what a tenant may set: the setting setting_limits of tenant ''*''.';
BEGIN
    IF tenant = '*' OR limits IS NULL THEN  -- the owner's defaults, and settings with no limit
        RETURN true;
    END IF;
    IF kgrag_private.within_limits(setting_key, value) IS NOT DISTINCT FROM value THEN
        RETURN true;
    END IF;
    IF limits ? 'allowed' THEN
        RAISE EXCEPTION 'a tenant may not set % to %: the schema owner allows % only', setting_key, value,
            limits -> 'allowed' USING ERRCODE = '42501', HINT = hint;
    ELSIF pg_catalog.jsonb_typeof(value) IS DISTINCT FROM 'number' THEN
        RAISE EXCEPTION 'setting % takes a number, got %', setting_key, value USING ERRCODE = '22023';
    ELSIF value::numeric > (limits ->> 'max')::numeric THEN
        RAISE EXCEPTION 'setting % = % is above the ceiling of % the schema owner set', setting_key, value,
            limits ->> 'max' USING ERRCODE = '42501', HINT = hint;
    END IF;
    RAISE EXCEPTION 'setting % = % is below the floor of % the schema owner set', setting_key, value,
        limits ->> 'min' USING ERRCODE = '42501', HINT = hint;
END
$body$
$q$;
    EXECUTE 'DROP POLICY owner_rows_update ON kgrag.settings';
    EXECUTE 'DROP POLICY owner_rows_delete ON kgrag.settings';
    EXECUTE 'DROP FUNCTION kgrag_private.setting_writable(text, text)';
    EXECUTE 'ALTER TABLE kgrag.settings DROP CONSTRAINT settings_value_fits_its_rule';
    EXECUTE 'DROP FUNCTION kgrag_private.setting_rule(text)';
    EXECUTE 'DROP FUNCTION kgrag_private.setting_fault(text, jsonb)';
    EXECUTE 'DROP FUNCTION kgrag_private.one_of(jsonb, jsonb)';
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.curation TO kgrag_writer';
    EXECUTE 'GRANT INSERT (tenant_id, kind, target, value, doc_id, note) ON kgrag.curation TO kgrag_curator';
    IF distributed THEN  -- the shards take who and when from the curator, the coordinator not (0034)
        propagation := pg_catalog.current_setting('citus.enable_ddl_propagation', true);
        EXECUTE 'GRANT INSERT (decided_by, decided_at) ON kgrag.curation TO kgrag_curator';
        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
        EXECUTE 'REVOKE INSERT (decided_by, decided_at) ON kgrag.curation FROM kgrag_curator';
        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', COALESCE(propagation, 'on'), true);
    END IF;
END
$$;

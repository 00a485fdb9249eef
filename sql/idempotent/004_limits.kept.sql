-- What a tenant may set its settings to. Kept (see README.md): the policy tenant_write of
-- kgrag.settings (revision 0039) calls kgrag_private.setting_allowed, which calls
-- kgrag_private.within_limits, so both are replaced in place, never dropped. within_limits is the
-- rule: kgrag.setting reads a tenant's settings through it, and setting_allowed refuses a value
-- it would change, saying why.

CREATE OR REPLACE FUNCTION kgrag_private.within_limits(setting_key text, value jsonb) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
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
$$;
COMMENT ON FUNCTION kgrag_private.within_limits(text, jsonb) IS
'Private. Returns a tenant''s value of a setting within the limits of the setting setting_limits of tenant ''*'': a number above its max is the max, below its min the min; a value outside the allowed ones, or not a number where a number is limited, is the default. kgrag.setting reads every tenant row through it; kgrag_private.setting_allowed refuses such a row when it is written.';

CREATE OR REPLACE FUNCTION kgrag_private.setting_allowed(tenant text, setting_key text, value jsonb) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
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
$$;
COMMENT ON FUNCTION kgrag_private.setting_allowed(text, text, jsonb) IS
'Private. Returns true when a tenant may set setting_key to value: kgrag_private.within_limits leaves it as it is (always for tenant ''*'', the schema owner''s defaults, and for a setting with no limit); else raises SQLSTATE 42501 naming the limit when the setting setting_limits of tenant ''*'' puts it above its max, below its min or outside its allowed values, 22023 for a value that is not a number where a number is limited. The policy tenant_write of kgrag.settings checks every row written with it.';

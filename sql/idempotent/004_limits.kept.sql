-- What a tenant may set its settings to. Kept (see README.md): the policy tenant_write of
-- kgrag.settings (revision 0039) calls kgrag_private.setting_allowed, so it is replaced in place,
-- never dropped. kgrag.setting reads a tenant's settings clamped to the same limits
-- (kgrag_private.within_limits, 010_settings.sql).

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
    IF limits ? 'allowed' THEN
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(limits -> 'allowed') AS a(v) WHERE a.v = value) THEN
            RAISE EXCEPTION 'a tenant may not set % to %: the schema owner allows % only', setting_key, value,
                limits -> 'allowed' USING ERRCODE = '42501', HINT = hint;
        END IF;
        RETURN true;
    END IF;
    IF pg_catalog.jsonb_typeof(value) IS DISTINCT FROM 'number' THEN
        RAISE EXCEPTION 'setting % takes a number, got %', setting_key, value USING ERRCODE = '22023';
    END IF;
    IF limits ? 'max' AND value::numeric > (limits ->> 'max')::numeric THEN
        RAISE EXCEPTION 'setting % = % is above the ceiling of % the schema owner set', setting_key, value,
            limits ->> 'max' USING ERRCODE = '42501', HINT = hint;
    END IF;
    IF limits ? 'min' AND value::numeric < (limits ->> 'min')::numeric THEN
        RAISE EXCEPTION 'setting % = % is below the floor of % the schema owner set', setting_key, value,
            limits ->> 'min' USING ERRCODE = '42501', HINT = hint;
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION kgrag_private.setting_allowed(text, text, jsonb) IS
'Private. Returns true when a tenant may set setting_key to value (always for tenant ''*'', the schema owner''s defaults, and for a setting with no limit); raises SQLSTATE 42501 naming the limit when the setting setting_limits of tenant ''*'' puts it above its max, below its min or outside its allowed values, 22023 for a value that is not a number where a number is limited. The policy tenant_write of kgrag.settings checks every row written with it.';

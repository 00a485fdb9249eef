-- Settings as data: the tenant's own value, else the default (tenant '*').

CREATE OR REPLACE FUNCTION kgrag.setting(setting_key text) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT s.value
      FROM kgrag.settings AS s
     WHERE s.tenant_id IN ('*', kgrag.current_tenant())
       AND s.key = setting_key
     ORDER BY (s.tenant_id = '*')
     LIMIT 1
$$;
COMMENT ON FUNCTION kgrag.setting(text) IS
'Returns the jsonb value of a setting for the current tenant: the tenant''s own row when there is one, else the default row (tenant ''*''); NULL when the key is unknown.';

CREATE OR REPLACE FUNCTION kgrag.dimension() RETURNS integer
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
     WHERE s.tenant_id = '*' AND s.key = 'embedding_dimension'
$$;
COMMENT ON FUNCTION kgrag.dimension() IS
'Returns the embedding dimension chosen at install time (every vector column is vector(dimension)).';

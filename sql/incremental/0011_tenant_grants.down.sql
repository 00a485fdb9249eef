-- 0011_tenant_grants down: tenants are whatever the transaction sets again; readers write the log.
-- The role kgrag_logger and the tenants' roles (kgrag_t_...) stay: roles belong to the cluster, as in 0005.

GRANT INSERT ON kgrag.query_log TO kgrag_reader;
REVOKE INSERT ON kgrag.query_log FROM kgrag_logger;
ALTER TABLE kgrag.query_log DROP CONSTRAINT query_log_bounded;
ALTER TABLE kgrag.query_log DROP CONSTRAINT query_log_pkey;
ALTER TABLE kgrag.query_log DROP COLUMN log_id;
ALTER TABLE kgrag.query_log ADD COLUMN log_id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE kgrag.query_log ADD PRIMARY KEY (tenant_id, log_id);

CREATE OR REPLACE FUNCTION kgrag.current_tenant() RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t text := pg_catalog.current_setting('kgrag.tenant', true);
BEGIN
    IF t IS NULL OR t = '' THEN
        RAISE EXCEPTION 'kgrag.tenant is not set'
            USING ERRCODE = '28000',
                  HINT = 'Set the tenant for this transaction first: SELECT set_config(''kgrag.tenant'', ''my-tenant'', true);';
    END IF;
    RETURN t;
END
$$;
COMMENT ON FUNCTION kgrag.current_tenant() IS
'Returns the tenant of the current transaction (setting kgrag.tenant). Raises SQLSTATE 28000 when it is unset or empty, so every row-level security policy fails closed.';

DROP FUNCTION kgrag.revoke_tenant(text, text);
DROP FUNCTION kgrag.grant_tenant(text, text);
DROP FUNCTION kgrag.use_tenant(text);
DROP FUNCTION kgrag._tenant_seal(text);
DROP FUNCTION kgrag._may_use_tenant(text);
DROP FUNCTION kgrag._tenant_role(text);
REVOKE USAGE ON SCHEMA kgrag FROM kgrag_logger;

-- 0030_tenant_names, down: kgrag.use_tenant and kgrag.grant_tenant as revisions 0019 and 0016
-- left them (they kept the rule themselves), then the function goes.
DO $do$
BEGIN
    EXECUTE $f$
CREATE OR REPLACE FUNCTION kgrag.use_tenant(tenant text) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    previous text := pg_catalog.current_setting('kgrag.tenant', true);
BEGIN
    IF tenant IS NULL OR (tenant <> '*' AND tenant !~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$') THEN
        RAISE EXCEPTION 'invalid tenant %: use 1-128 letters, digits or _.:@- (starting with a letter or digit)',
            COALESCE(pg_catalog.quote_literal(tenant), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF previous IS DISTINCT FROM tenant AND previous <> ''
       AND kgrag_private.sealed(previous, pg_catalog.current_setting('kgrag.tenant_seal', true)) THEN
        RAISE EXCEPTION 'this transaction already acts for tenant %', pg_catalog.quote_literal(previous)
            USING ERRCODE = '25001', HINT = 'A transaction has one tenant: use another transaction for another tenant.';
    END IF;
    IF NOT kgrag_private.may_use_tenant(tenant) THEN
        RAISE EXCEPTION 'role % may not act for tenant %', session_user, pg_catalog.quote_literal(tenant)
            USING ERRCODE = '42501',
                  HINT = CASE WHEN tenant = '*' THEN 'The defaults tenant ''*'' is the schema owner''s alone.'
                              ELSE 'The schema owner grants it: SELECT kgrag.grant_tenant(''role'', ''tenant'');' END;
    END IF;
    -- SET LOCAL, not set_config(): Citus passes SET LOCAL on to the workers of the transaction.
    -- There a function reading a table may run inside a statement Citus sent to a worker: it
    -- reads the same tenant, whose shards are all on that worker (co-located), in the same
    -- transaction, so the nested query Citus refuses by default is a local one.
    IF pg_catalog.to_regprocedure('pg_catalog.citus_backend_gpid()') IS NOT NULL THEN
        PERFORM pg_catalog.set_config('citus.propagate_set_commands', 'local', true);
        SET LOCAL citus.allow_nested_distributed_execution TO on;
        -- A generic plan of an UPDATE or DELETE with a subquery runs on every shard: Citus
        -- prunes shards with the tenant's value in hand, so every statement is planned with it.
        SET LOCAL plan_cache_mode TO force_custom_plan;
    END IF;
    EXECUTE pg_catalog.format('SET LOCAL kgrag.tenant TO %L', tenant);
    EXECUTE pg_catalog.format('SET LOCAL kgrag.tenant_seal TO %L', kgrag_private.tenant_seal(tenant));
    RETURN tenant;
END
$$ $f$;
    EXECUTE $f$
CREATE OR REPLACE FUNCTION kgrag.grant_tenant(role_name text, tenant text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tenant_role text;
BEGIN
    IF pg_catalog.to_regrole(pg_catalog.quote_ident(role_name)) IS NULL THEN
        RAISE EXCEPTION 'role % does not exist', COALESCE(pg_catalog.quote_ident(role_name), 'NULL') USING ERRCODE = '42704';
    END IF;
    IF tenant IS NULL OR (tenant <> '*' AND tenant !~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$') THEN
        RAISE EXCEPTION 'invalid tenant %', COALESCE(pg_catalog.quote_literal(tenant), 'NULL') USING ERRCODE = '22023';
    END IF;
    tenant_role := kgrag_private.tenant_role(tenant);
    IF pg_catalog.to_regrole(tenant_role) IS NULL THEN
        EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', tenant_role);
        EXECUTE pg_catalog.format('COMMENT ON ROLE %I IS %L', tenant_role,
            pg_catalog.format('pgkgrag: may act for tenant %s of database %s', tenant, pg_catalog.current_database()));
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members AS m
                    WHERE m.roleid = pg_catalog.to_regrole(tenant_role)
                      AND m.member = pg_catalog.to_regrole(pg_catalog.quote_ident(role_name))) THEN
        RETURN false;
    END IF;
    EXECUTE pg_catalog.format('GRANT %I TO %I', tenant_role, role_name);
    RETURN true;
END
$$ $f$;
    EXECUTE 'DROP FUNCTION kgrag_private.is_tenant_name(text)';
END
$do$;

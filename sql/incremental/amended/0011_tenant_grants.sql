-- 0011_tenant_grants: a tenant is bound to database roles and lives one transaction; the
-- defaults tenant '*' is the schema owner's; readers no longer write the query log themselves.
--
-- Before this revision any role granted kgrag_reader could read any tenant by setting
-- kgrag.tenant: row-level security guarded against application bugs, not against anyone who can
-- run SQL. Now:
-- - A tenant is a role of the database (kgrag_t_ + a hash of database and tenant; one more for
--   every tenant, '*'): a login role may act for a tenant when it is a member of that role, which
--   the schema owner grants (kgrag.grant_tenant, kgrag.revoke_tenant). Memberships are what
--   PostgreSQL checks fastest, so the check costs role lookups, not a query, in every statement.
--   The schema owner may act for every tenant, the defaults '*' included, which nobody else may.
-- - kgrag.use_tenant(t) is how a transaction names its tenant: it checks the grant and seals the
--   setting to this transaction. kgrag.current_tenant() (every policy calls it) fails closed for
--   a tenant the session's role may not use (through its memberships), and for a kgrag.tenant
--   set any other way: set for the session (SET, set_config(..., false), options=-c) or left
--   from an earlier transaction on a pooled connection. A transaction has one tenant: use_tenant
--   refuses another, so one statement cannot read two tenants.
-- - The query log is written by kgrag._log_search, owned by kgrag_logger (which may only insert
--   into it), with bounded values; log_id is random, so it tells nothing of other tenants' searches.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'kgrag_logger') THEN
        BEGIN
            CREATE ROLE kgrag_logger NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'role kgrag_logger does not exist and this role may not create it'
                USING HINT = 'Ask an administrator to run: CREATE ROLE kgrag_logger NOLOGIN;';
        END;
    END IF;
    -- the installer makes kgrag._log_search kgrag_logger's (ALTER FUNCTION ... OWNER TO needs
    -- membership); an owner that is a member already needs no grant (and may lack ADMIN OPTION)
    IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = CURRENT_USER)
       AND NOT (pg_catalog.pg_has_role(CURRENT_USER, 'kgrag_logger', 'SET')
                AND pg_catalog.pg_has_role(CURRENT_USER, 'kgrag_logger', 'USAGE')) THEN
        EXECUTE pg_catalog.format('GRANT kgrag_logger TO %I', CURRENT_USER);
    END IF;
END
$$;
GRANT USAGE ON SCHEMA kgrag TO kgrag_logger;

-- The helpers every policy check runs are plpgsql: a simple expression there costs about a
-- microsecond, where a SQL function (not inlined, its search_path pinned) costs a query.
CREATE FUNCTION kgrag._tenant_role(tenant text) RETURNS text
LANGUAGE plpgsql STABLE STRICT SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- the schema's oid too: a database dropped and made again under its name does not inherit the grants
    RETURN 'kgrag_t_' || pg_catalog.left(pg_catalog.md5(pg_catalog.current_database() || '/'
                                                        || 'kgrag'::pg_catalog.regnamespace::pg_catalog.oid || '/' || tenant), 24);
END
$$;
COMMENT ON FUNCTION kgrag._tenant_role(text) IS
'Private. Returns the name of the role that stands for a tenant of this database (tenant ''*'': every tenant): kgrag_t_ and 24 hex digits of md5(database/schema oid/tenant), so a schema installed again starts with no grants. kgrag.grant_tenant creates it and makes the grantee a member; a session may act for the tenant when its login role is a member of it.';

CREATE FUNCTION kgrag._may_use_tenant(tenant text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    one oid;
    every oid;
BEGIN
    -- The schema owner (who alone may create in its schema) may act for every tenant, '*' included.
    IF pg_catalog.has_schema_privilege(session_user, 'kgrag', 'CREATE') THEN
        RETURN true;
    END IF;
    IF tenant = '*' THEN
        RETURN false;
    END IF;
    -- Role lookups only, no query: this runs once per statement that reads a kgrag table.
    one := pg_catalog.to_regrole(kgrag._tenant_role(tenant));
    every := pg_catalog.to_regrole(kgrag._tenant_role('*'));
    RETURN (one IS NOT NULL AND pg_catalog.pg_has_role(session_user, one, 'MEMBER'))
        OR (every IS NOT NULL AND pg_catalog.pg_has_role(session_user, every, 'MEMBER'));
END
$$;
COMMENT ON FUNCTION kgrag._may_use_tenant(text) IS
'Private. Returns whether the session''s login role may act for the tenant: it owns the schema (CREATE on it), or it is a member of the tenant''s role or of the every-tenant role (kgrag.grant_tenant).';

CREATE FUNCTION kgrag._tenant_seal(tenant text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pg_catalog.pg_backend_pid() || '/' || EXTRACT(epoch FROM pg_catalog.transaction_timestamp()) || '/' || tenant;
END
$$;
COMMENT ON FUNCTION kgrag._tenant_seal(text) IS
'Private. Returns the seal kgrag.use_tenant leaves beside kgrag.tenant: this backend, this transaction''s start and the tenant. A kgrag.tenant without the seal of the current transaction was not set for it.';

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
                  HINT = 'Name the tenant of this transaction first: SELECT kgrag.use_tenant(''my-tenant'');';
    END IF;
    IF pg_catalog.current_setting('kgrag.tenant_seal', true) IS DISTINCT FROM kgrag._tenant_seal(t) THEN
        RAISE EXCEPTION 'kgrag.tenant was not set for this transaction'
            USING ERRCODE = '28000',
                  HINT = 'A tenant set for the session (SET, set_config(..., false), options=-c) or left from an earlier transaction does not count: call SELECT kgrag.use_tenant(''my-tenant''); in each transaction.';
    END IF;
    IF NOT kgrag._may_use_tenant(t) THEN
        RAISE EXCEPTION 'role % may not act for tenant %', session_user, pg_catalog.quote_literal(t)
            USING ERRCODE = '42501',
                  HINT = CASE WHEN t = '*' THEN 'The defaults tenant ''*'' is the schema owner''s alone.'
                              ELSE 'The schema owner grants it: SELECT kgrag.grant_tenant(''role'', ''tenant'');' END;
    END IF;
    RETURN t;
END
$$;
COMMENT ON FUNCTION kgrag.current_tenant() IS
'Returns the tenant of the current transaction, as kgrag.use_tenant named it. Fails closed, so every row-level security policy does: SQLSTATE 28000 when no tenant is set or it was not set for this transaction (a session-level setting does not count), 42501 when the session''s role may not act for it (kgrag.grant_tenant).';

CREATE FUNCTION kgrag.use_tenant(tenant text) RETURNS text
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
       AND pg_catalog.current_setting('kgrag.tenant_seal', true) = kgrag._tenant_seal(previous) THEN
        RAISE EXCEPTION 'this transaction already acts for tenant %', pg_catalog.quote_literal(previous)
            USING ERRCODE = '25001', HINT = 'A transaction has one tenant: use another transaction for another tenant.';
    END IF;
    IF NOT kgrag._may_use_tenant(tenant) THEN
        RAISE EXCEPTION 'role % may not act for tenant %', session_user, pg_catalog.quote_literal(tenant)
            USING ERRCODE = '42501',
                  HINT = CASE WHEN tenant = '*' THEN 'The defaults tenant ''*'' is the schema owner''s alone.'
                              ELSE 'The schema owner grants it: SELECT kgrag.grant_tenant(''role'', ''tenant'');' END;
    END IF;
    PERFORM pg_catalog.set_config('kgrag.tenant', tenant, true);
    PERFORM pg_catalog.set_config('kgrag.tenant_seal', kgrag._tenant_seal(tenant), true);
    RETURN tenant;
END
$$;
COMMENT ON FUNCTION kgrag.use_tenant(text) IS
'Names the tenant of the current transaction and returns it: SELECT kgrag.use_tenant(''acme''); at the start of every transaction (the setting ends with it). Refuses (42501) a tenant the session''s role may not use, and (25001) a second, different tenant in the same transaction.';

CREATE FUNCTION kgrag.grant_tenant(role_name text, tenant text) RETURNS boolean
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
    tenant_role := kgrag._tenant_role(tenant);
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
$$;
REVOKE EXECUTE ON FUNCTION kgrag.grant_tenant(text, text) FROM PUBLIC;
COMMENT ON FUNCTION kgrag.grant_tenant(text, text) IS
'Lets a role (and every role that is a member of it) act for a tenant of this database: makes it a member of the tenant''s role (kgrag._tenant_role, created on the first grant). Tenant ''*'' means every tenant (a service role), never the defaults tenant, which stays the schema owner''s. Returns true when the grant is new. For the schema owner (it needs CREATEROLE).';

CREATE FUNCTION kgrag.revoke_tenant(role_name text, tenant text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tenant_role text := kgrag._tenant_role(tenant);
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members AS m
                    WHERE m.roleid = pg_catalog.to_regrole(tenant_role)
                      AND m.member = pg_catalog.to_regrole(pg_catalog.quote_ident(role_name))) THEN
        RETURN false;
    END IF;
    EXECUTE pg_catalog.format('REVOKE %I FROM %I', tenant_role, role_name);
    RETURN true;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.revoke_tenant(text, text) FROM PUBLIC;
COMMENT ON FUNCTION kgrag.revoke_tenant(text, text) IS
'Takes back a grant of kgrag.grant_tenant (tenant ''*'': the every-tenant grant). Returns true when there was one. For the schema owner.';

-- The query log: a random id, bounded rows, written by kgrag._log_search (sql/idempotent) only.
ALTER TABLE kgrag.query_log DROP CONSTRAINT query_log_pkey;
ALTER TABLE kgrag.query_log DROP COLUMN log_id;
ALTER TABLE kgrag.query_log ADD COLUMN log_id uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid();
ALTER TABLE kgrag.query_log ADD PRIMARY KEY (tenant_id, log_id);
ALTER TABLE kgrag.query_log ADD CONSTRAINT query_log_bounded CHECK (
    pg_catalog.length(question_hash) <= 64 AND pg_catalog.length(route) <= 32 AND pg_catalog.length(reason) <= 4000
    AND pg_catalog.cardinality(seeds) <= 100 AND paths_walked >= 0 AND rows_returned >= 0 AND ms >= 0) NOT VALID;
REVOKE INSERT ON kgrag.query_log FROM kgrag_reader;
GRANT INSERT ON kgrag.query_log TO kgrag_logger;

-- The installer's own transaction carries on as the defaults tenant, sealed now.
SELECT kgrag.use_tenant(pg_catalog.current_setting('kgrag.tenant'));

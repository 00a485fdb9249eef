-- Tenancy: which tenant a transaction acts for, who may act for it, and the grants. Kept (see
-- README.md): every row-level security policy calls kgrag.current_tenant(), so these are replaced
-- in place and never dropped; a change here takes effect on every policy at the next install.
--
-- A transaction names its tenant with kgrag.use_tenant(tenant): SET LOCAL kgrag.tenant, sealed
-- with this backend and transaction (kgrag_private.tenant_seal) so that a session-level setting
-- or one left from an earlier transaction does not count. kgrag.current_tenant() reads it back,
-- checks the seal and the grant, and fails closed. On a Citus cluster the setting reaches the
-- workers, which check the seal against the global pid of the transaction they serve.
--
-- A role may act for a tenant when it owns the schema or is a member of the tenant's role
-- (kgrag_private.tenant_role), made by kgrag.grant_tenant. The roles are named from the
-- installation's identity, frozen when revision 0019 ran (kgrag_private.installation, created
-- again below with the value it has).

DO $$
BEGIN
    EXECUTE pg_catalog.format($f$
CREATE OR REPLACE FUNCTION kgrag_private.installation() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT %L::text $body$ $f$, kgrag_private.installation());
END
$$;
COMMENT ON FUNCTION kgrag_private.installation() IS
'Private. Returns the identity of this installation of the schema, frozen when revision 0019 ran (the database''s name and the schema''s oid then): the tenant roles are named from it, on every node of a cluster.';

CREATE OR REPLACE FUNCTION kgrag_private.is_tenant_name(tenant text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT tenant = '*' OR tenant ~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$'
$$;
COMMENT ON FUNCTION kgrag_private.is_tenant_name(text) IS
'Private. Returns whether a text may name a tenant: 1-128 letters, digits or _.:@-, starting with a letter or digit, or ''*'' (the defaults tenant); NULL for NULL. kgrag.use_tenant and kgrag.grant_tenant refuse any other name.';

CREATE OR REPLACE FUNCTION kgrag_private.tenant_role(tenant text) RETURNS text
LANGUAGE plpgsql STABLE STRICT SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN 'kgrag_t_' || pg_catalog.left(pg_catalog.md5(kgrag_private.installation() || '/' || tenant), 24);
END
$$;
COMMENT ON FUNCTION kgrag_private.tenant_role(text) IS
'Private. Returns the name of the role that stands for a tenant of this installation (tenant ''*'': every tenant): kgrag_t_ and 24 hex digits of md5(kgrag_private.installation()/tenant), so a schema installed again starts with no grants. kgrag.grant_tenant creates it and makes the grantee a member; a session may act for the tenant when its login role is a member of it.';

CREATE OR REPLACE FUNCTION kgrag_private.tenant_seal(tenant text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    origin bigint := pg_catalog.pg_backend_pid();
BEGIN
    IF pg_catalog.to_regprocedure('pg_catalog.citus_backend_gpid()') IS NOT NULL THEN
        origin := pg_catalog.citus_backend_gpid();
    END IF;
    RETURN origin || '/' || EXTRACT(epoch FROM pg_catalog.transaction_timestamp()) || '/' || tenant;
END
$$;
COMMENT ON FUNCTION kgrag_private.tenant_seal(text) IS
'Private. Returns the seal kgrag.use_tenant leaves beside kgrag.tenant: this backend (its Citus global pid where Citus is installed), this transaction''s start and the tenant. A kgrag.tenant without the seal of the current transaction was not set for it.';

CREATE OR REPLACE FUNCTION kgrag_private.serving_another_node() RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- a Citus backend reports the global pid of the transaction it serves: another backend's
    -- when a coordinator (or another worker) sent it this statement
    IF pg_catalog.to_regprocedure('pg_catalog.citus_backend_gpid()') IS NULL THEN
        RETURN false;  -- (a separate statement: the next one names Citus's functions)
    END IF;
    RETURN pg_catalog.citus_pid_for_gpid(pg_catalog.citus_backend_gpid()) <> pg_catalog.pg_backend_pid();
END
$$;
COMMENT ON FUNCTION kgrag_private.serving_another_node() IS
'Private. Returns whether this backend runs statements a Citus node sent it for a transaction that started on another backend (a worker serving the coordinator); false without Citus.';

CREATE OR REPLACE FUNCTION kgrag_private.sealed(tenant text, seal text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF seal IS NOT DISTINCT FROM kgrag_private.tenant_seal(tenant) THEN
        RETURN true;
    END IF;
    -- A worker serving another node's transaction: the tenant and the seal came with it (SET
    -- LOCAL, for this transaction only), made by the backend the transaction started on.
    IF NOT kgrag_private.serving_another_node() THEN
        RETURN false;
    END IF;
    RETURN pg_catalog.split_part(seal, '/', 1) = pg_catalog.citus_backend_gpid()::text
       AND pg_catalog.split_part(seal, '/', 3) = tenant;
END
$$;
COMMENT ON FUNCTION kgrag_private.sealed(text, text) IS
'Private. Returns whether a seal is the current transaction''s for this tenant: made by kgrag_private.tenant_seal in this backend and transaction, or, on a Citus worker serving another node''s transaction, made by the backend that transaction started on (same global pid and tenant).';

CREATE OR REPLACE FUNCTION kgrag_private.may_use_tenant(tenant text) RETURNS boolean
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
    -- On a Citus worker, inside one of the SECURITY DEFINER helpers (probes, log writers) the
    -- coordinator logs in as their owner: the caller's grant was checked where it called them.
    IF session_user IN ('kgrag_probe', 'kgrag_logger') AND kgrag_private.serving_another_node() THEN
        RETURN true;
    END IF;
    -- Role lookups only, no query: this runs once per statement that reads a kgrag table.
    one := pg_catalog.to_regrole(kgrag_private.tenant_role(tenant));
    every := pg_catalog.to_regrole(kgrag_private.tenant_role('*'));
    IF (one IS NOT NULL AND pg_catalog.pg_has_role(session_user, one, 'MEMBER'))
        OR (every IS NOT NULL AND pg_catalog.pg_has_role(session_user, every, 'MEMBER')) THEN
        RETURN true;
    END IF;
    -- An API key checked for this tenant in this transaction (kgrag.use_key): the service's role
    -- holds no tenant grant of its own.
    RETURN COALESCE(pg_catalog.current_setting('kgrag.key_seal', true), '') <> ''
       AND kgrag_private.key_sealed(tenant, current_user);
END
$$;
COMMENT ON FUNCTION kgrag_private.may_use_tenant(text) IS
'Private. Returns whether the session''s login role may act for the tenant: it owns the schema (CREATE on it), or it is a member of the tenant''s role or of the every-tenant role (kgrag.grant_tenant), or an API key was checked for the tenant in this transaction (kgrag.use_key, kgrag_private.key_sealed); on a Citus worker serving another node, also the owners of the SECURITY DEFINER helpers, as which that node logs in there.';

CREATE OR REPLACE FUNCTION kgrag_private.key_mac(tenant text, seal text, key_role text) RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    -- the secret on both sides of the message: SHA-256 alone would let a message be extended
    SELECT pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(
        k.secret || '/' || tenant || '/' || seal || '/' || key_role || '/'
        || COALESCE(pg_catalog.current_setting('kgrag.key_groups', true), '') || '/' || k.secret, 'UTF8')), 'hex')
      FROM kgrag_private.key_secret AS k
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.key_mac(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION kgrag_private.key_mac(text, text, text) IS
'Private. Returns the seal of an API key checked for a tenant in a transaction (its tenant seal, kgrag_private.tenant_seal) with a role and the groups it carries (the setting kgrag.key_groups, which kgrag.use_key sets first): sha256 of the secret of kgrag_private.key_secret around them. Only the schema owner may call it (through kgrag.use_key and kgrag_private.key_sealed).';

CREATE OR REPLACE FUNCTION kgrag_private.key_sealed(tenant text, acting name) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    seal text := pg_catalog.current_setting('kgrag.tenant_seal', true);
    key_role text := pg_catalog.current_setting('kgrag.key_role', true);
BEGIN
    IF seal IS NULL OR key_role IS NULL OR NOT kgrag_private.sealed(tenant, seal)
       OR pg_catalog.current_setting('kgrag.key_seal', true) IS DISTINCT FROM kgrag_private.key_mac(tenant, seal, key_role) THEN
        RETURN false;
    END IF;
    -- a reader key reads: the role acting may not write (SET ROLE kgrag_reader)
    RETURN key_role = 'writer'
        OR NOT (pg_catalog.pg_has_role(acting, 'kgrag_writer', 'USAGE')
                OR pg_catalog.pg_has_role(acting, 'kgrag_curator', 'USAGE'));
END
$$;
COMMENT ON FUNCTION kgrag_private.key_sealed(text, name) IS
'Private. Returns whether an API key was checked for the tenant in this transaction (kgrag.use_key left kgrag.key_seal and kgrag.key_role, sealed with the secret of kgrag_private.key_secret, which no caller reads) and, for a reader key, the role acting (current_user) may not write. SECURITY DEFINER, owned by the schema owner, because it reads the secret; it returns a boolean and nothing of the secret. kgrag_private.may_use_tenant calls it.';

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
                  HINT = 'Name the tenant of this transaction first, inside it: BEGIN; SELECT kgrag.use_tenant(''my-tenant''); ... COMMIT; (outside BEGIN, each statement is a transaction of its own, and the tenant it named ends with it).';
    END IF;
    IF NOT kgrag_private.sealed(t, pg_catalog.current_setting('kgrag.tenant_seal', true)) THEN
        RAISE EXCEPTION 'kgrag.tenant was not set for this transaction'
            USING ERRCODE = '28000',
                  HINT = 'A tenant set for the session (SET, set_config(..., false), options=-c) or left from an earlier transaction does not count: call SELECT kgrag.use_tenant(''my-tenant''); in each transaction, after BEGIN.';
    END IF;
    IF NOT kgrag_private.may_use_tenant(t) THEN
        RAISE EXCEPTION 'role % may not act for tenant %', session_user, pg_catalog.quote_literal(t)
            USING ERRCODE = '42501',
                  HINT = CASE WHEN t = '*' THEN 'The defaults tenant ''*'' is the schema owner''s alone.'
                              ELSE 'The schema owner grants it: SELECT kgrag.grant_tenant(''role'', ''tenant'');' END;
    END IF;
    RETURN t;
END
$$;
COMMENT ON FUNCTION kgrag.current_tenant() IS
'Returns the tenant of the current transaction, as kgrag.use_tenant named it. Fails closed, so every row-level security policy does: SQLSTATE 28000 when no tenant is set or it was not set for this transaction (a session-level setting does not count), 42501 when the session''s role may not act for it (kgrag.grant_tenant). On a Citus cluster each worker checks the same for its shards.';

CREATE OR REPLACE FUNCTION kgrag.use_tenant(tenant text) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    previous text := pg_catalog.current_setting('kgrag.tenant', true);
BEGIN
    IF tenant IS NULL OR NOT kgrag_private.is_tenant_name(tenant) THEN
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
$$;
COMMENT ON FUNCTION kgrag.use_tenant(text) IS
'Names the tenant of the current transaction and returns it: SELECT kgrag.use_tenant(''acme''); at the start of every transaction (the setting ends with it; on a Citus cluster it reaches the workers too). Refuses (42501) a tenant the session''s role may not use, and (25001) a second, different tenant in the same transaction.';

CREATE OR REPLACE FUNCTION kgrag.grant_tenant(role_name text, tenant text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tenant_role text;
    carrier text;
BEGIN
    IF pg_catalog.to_regrole(pg_catalog.quote_ident(role_name)) IS NULL THEN
        RAISE EXCEPTION 'role % does not exist', COALESCE(pg_catalog.quote_ident(role_name), 'NULL') USING ERRCODE = '42704';
    END IF;
    IF tenant IS NULL OR NOT kgrag_private.is_tenant_name(tenant) THEN
        RAISE EXCEPTION 'invalid tenant %', COALESCE(pg_catalog.quote_literal(tenant), 'NULL') USING ERRCODE = '22023';
    END IF;
    tenant_role := kgrag_private.tenant_role(tenant);
    IF pg_catalog.to_regrole(tenant_role) IS NULL THEN
        EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', tenant_role);
        EXECUTE pg_catalog.format('COMMENT ON ROLE %I IS %L', tenant_role,
            pg_catalog.format('pgkgrag: may act for tenant %s of database %s', tenant, pg_catalog.current_database()));
    END IF;
    -- On a Citus coordinator with workers, a grant reaches them only for a role Citus keeps in step
    -- there (one it created, after CREATE EXTENSION citus). It takes over any other role as what a
    -- role it keeps is a member of: a role made for the purpose and dropped at once carries it (the
    -- role is created, or altered, on every node with its memberships, and from then on every GRANT,
    -- REVOKE and ALTER of it reaches the workers); a role it still does not keep is refused here,
    -- not at its first search. (Nested: pg_dist_node exists only where Citus is installed.)
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node AS n WHERE n.groupid > 0)
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_object AS o
                            WHERE o.classid = 'pg_catalog.pg_authid'::pg_catalog.regclass
                              AND o.objid = pg_catalog.to_regrole(pg_catalog.quote_ident(role_name))) THEN
            -- (PostgreSQL 16 on: making the role a member of another needs ADMIN OPTION on it)
            IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles AS a WHERE a.rolname = current_user AND a.rolsuper)
               AND NOT pg_catalog.pg_has_role(current_user, pg_catalog.to_regrole(pg_catalog.quote_ident(role_name)),
                                              'MEMBER WITH ADMIN OPTION') THEN
                RAISE EXCEPTION 'role % is not known to the Citus workers, and % may not take it there', pg_catalog.quote_ident(role_name),
                                current_user
                    USING ERRCODE = '42501',
                          HINT = pg_catalog.format('Taking it there makes it, for a moment, a member of a role Citus keeps, which '
                                                   'needs ADMIN OPTION on it: GRANT %I TO %I WITH ADMIN OPTION (as its creator or '
                                                   'a superuser), then grant the tenant again.', role_name, current_user);
            END IF;
            carrier := 'kgrag_carrier_' || pg_catalog.left(pg_catalog.md5(pg_catalog.random()::text), 16);
            EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN NOINHERIT', carrier);
            EXECUTE pg_catalog.format('GRANT %I TO %I', role_name, carrier);
            EXECUTE pg_catalog.format('DROP ROLE %I', carrier);
            IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_object AS o
                            WHERE o.classid = 'pg_catalog.pg_authid'::pg_catalog.regclass
                              AND o.objid = pg_catalog.to_regrole(pg_catalog.quote_ident(role_name))) THEN
                RAISE EXCEPTION 'role % is not known to the Citus workers, and Citus did not take it there',
                                pg_catalog.quote_ident(role_name)
                    USING ERRCODE = '42704',
                          HINT = 'Citus takes roles to the workers only with citus.enable_create_role_propagation on: '
                                 'turn it on, then grant again (docs/scale-out.md, "Roles").';
            END IF;
        END IF;
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
'Lets a role (and every role that is a member of it) act for a tenant of this database: makes it a member of the tenant''s role (kgrag_private.tenant_role, created on the first grant). Tenant ''*'' means every tenant (a service role), never the defaults tenant, which stays the schema owner''s. On a Citus coordinator the grant reaches every worker, whenever the role was created: a role Citus does not keep in step yet (made before CREATE EXTENSION citus) is first created or altered on every node with its memberships, and one it cannot take there is refused (42704) here rather than at its first search. Returns true when the grant is new (a repeated grant still takes the role to the workers). For the schema owner (it needs CREATEROLE).';

CREATE OR REPLACE FUNCTION kgrag.revoke_tenant(role_name text, tenant text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tenant_role text := kgrag_private.tenant_role(tenant);
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

-- Audiences (revision 0042): which groups of its tenant a session holds. The tenant policies of
-- kgrag.document, kgrag.chunk and kgrag.query_log call these, so they are kept too.

CREATE OR REPLACE FUNCTION kgrag_private.group_role(tenant text, group_name text) RETURNS text
LANGUAGE sql STABLE STRICT SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'kgrag_g_' || pg_catalog.left(pg_catalog.md5(kgrag_private.installation() || '/' || tenant || '/' || group_name), 24)
$$;
COMMENT ON FUNCTION kgrag_private.group_role(text, text) IS
'Private. Returns the name of the role that stands for a group of a tenant of this installation: kgrag_g_ and 24 hex digits of md5(installation/tenant/group). kgrag.grant_groups creates it and makes the grantee a member.';

CREATE OR REPLACE FUNCTION kgrag_private.groups_for(tenant text) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    held text[];
    narrowed text := pg_catalog.current_setting('kgrag.groups', true);
    key_seal text := pg_catalog.current_setting('kgrag.key_seal', true);
    tenant_seal text := pg_catalog.current_setting('kgrag.tenant_seal', true);
BEGIN
    -- The policies pass the row's tenant, so nothing a statement sets while it runs (kgrag.tenant,
    -- the seals) lends one tenant's groups to another's rows.
    tenant := COALESCE(tenant, '');
    IF COALESCE(key_seal, '') <> '' THEN
        -- an API key decides, for any login role (the schema owner's too: a service may run as it):
        -- the groups it carries, when its seal is this transaction's and this tenant's (a seal
        -- replayed from another transaction, or for other groups, holds nothing)
        IF tenant <> '' AND kgrag_private.sealed(tenant, tenant_seal)
           AND key_seal = kgrag_private.key_mac(tenant, tenant_seal, pg_catalog.current_setting('kgrag.key_role', true)) THEN
            held := pg_catalog.string_to_array(NULLIF(pg_catalog.current_setting('kgrag.key_groups', true), ''), ',');
        END IF;
    ELSIF pg_catalog.has_schema_privilege(session_user, 'kgrag', 'CREATE') THEN
        held := ARRAY['*'];  -- the schema owner: every group
    ELSIF tenant <> '' THEN
        -- a login role: the groups of this tenant whose role it is a member of (kgrag.grant_groups)
        held := ARRAY(SELECT a.group_name FROM kgrag_private.audience AS a
                       WHERE a.tenant_id = tenant AND pg_catalog.to_regrole(a.role_name) IS NOT NULL
                         AND pg_catalog.pg_has_role(session_user, pg_catalog.to_regrole(a.role_name), 'MEMBER')
                       ORDER BY a.group_name COLLATE "C");
    END IF;
    held := COALESCE(held, '{}');
    -- a narrowing (kgrag.use_groups) only narrows: what is not held is dropped, not added
    IF COALESCE(narrowed, '') <> '' THEN
        held := ARRAY(SELECT DISTINCT n.g FROM pg_catalog.unnest(pg_catalog.string_to_array(narrowed, ',')) AS n(g)
                       WHERE n.g <> '' AND (n.g = ANY (held) OR held = ARRAY['*']) ORDER BY 1);
    END IF;
    RETURN held;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.groups_for(text) FROM PUBLIC;
-- the roles the tenant policies that call it run as (a role granted tables otherwise needs it too)
GRANT EXECUTE ON FUNCTION kgrag_private.groups_for(text) TO kgrag_reader, kgrag_writer, kgrag_curator, kgrag_probe, kgrag_logger;
COMMENT ON FUNCTION kgrag_private.groups_for(text) IS
'Private. Returns the groups of a tenant the current transaction holds, which decide what of a document for an audience (kgrag.document.access) it sees: with an API key checked in this transaction (kgrag.use_key), the groups the key carries, when its seal is this transaction''s for this tenant (kgrag_private.sealed, kgrag_private.key_mac: a replayed or altered seal holds nothing), whatever the login role; otherwise the schema owner {*} (every group), and any other login role the groups of the tenant granted to it or a role it belongs to (kgrag.grant_groups); narrowed, when kgrag.use_groups named some, to those of them it holds. The policies of kgrag.document, kgrag.chunk, kgrag.query_log and kgrag.curation_ended call it with the row''s tenant. SECURITY DEFINER, owned by the schema owner, because it reads kgrag_private.audience and checks the key''s seal; it answers for session_user and the transaction''s own settings only.';

CREATE OR REPLACE FUNCTION kgrag.current_groups() RETURNS text[]
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT kgrag_private.groups_for(pg_catalog.current_setting('kgrag.tenant', true))
$$;
COMMENT ON FUNCTION kgrag.current_groups() IS
'Returns the groups of its tenant the current transaction holds (kgrag_private.groups_for), which decide what of a document for an audience it sees: the schema owner {*} (every group); a session with an API key the groups the key carries (kgrag.create_key); any other login role the groups granted to it or a role it belongs to (kgrag.grant_groups); narrowed, when kgrag.use_groups named some, to those of them it holds. {} holds no group (and so does a transaction that named no tenant): only documents for everyone are seen.';

DO $$
BEGIN
    -- the installation's identity written into the body (as kgrag_private.installation() is): the
    -- policies call this for every row for an audience, and a nested call costs more than the rest
    EXECUTE pg_catalog.format($f$
CREATE OR REPLACE FUNCTION kgrag_private.may_see(tenant text, access text[]) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$
DECLARE
    narrowed text := pg_catalog.current_setting('kgrag.groups', true);
    claimed text := pg_catalog.current_setting('kgrag.key_groups', true);
    g text;
    r regrole;
BEGIN
    -- What kgrag_private.groups_for(tenant) answers, for one row's groups, without reading a table
    -- or checking a seal unless the row is one the session may see.
    IF access IS NULL THEN
        RETURN true;
    END IF;
    IF COALESCE(narrowed, '') <> '' THEN  -- (kgrag.use_groups: only narrows)
        access := ARRAY(SELECT x FROM pg_catalog.unnest(access) AS u(x)
                         WHERE x = ANY (pg_catalog.string_to_array(narrowed, ',')));
        IF pg_catalog.cardinality(access) = 0 THEN
            RETURN false;
        END IF;
    END IF;
    IF COALESCE(pg_catalog.current_setting('kgrag.key_seal', true), '') <> '' THEN
        -- an API key: none of the groups it claims, nothing to check; else its seal, once per row seen
        IF NOT access OPERATOR(pg_catalog.&&) pg_catalog.string_to_array(NULLIF(claimed, ''), ',') THEN
            RETURN false;
        END IF;
        RETURN kgrag_private.sees(access, kgrag_private.groups_for(tenant));
    END IF;
    FOREACH g IN ARRAY access LOOP  -- a login role: a member of the group's role (kgrag_private.group_role)
        r := pg_catalog.to_regrole('kgrag_g_' || pg_catalog.left(pg_catalog.md5(%L || '/' || tenant || '/' || g), 24));
        IF r IS NOT NULL AND pg_catalog.pg_has_role(session_user, r, 'MEMBER') THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN pg_catalog.has_schema_privilege(session_user, 'kgrag', 'CREATE');  -- the schema owner: every group
END
$body$ $f$, kgrag_private.installation());
END
$$;
COMMENT ON FUNCTION kgrag_private.may_see(text, text[]) IS
'Private. Returns whether the current transaction sees a row of a tenant for these groups (access; NULL: for everyone): as kgrag_private.groups_for(tenant) decides, narrowed by kgrag.use_groups, but reading the row''s own groups only (the role of each, kgrag_private.group_role, and session_user''s membership), and checking a key''s seal only for a row of a group the key claims. The tenant policies of kgrag.document, kgrag.chunk, kgrag.curation_ended and kgrag.ingest_failure call it for every row for an audience.';

CREATE OR REPLACE FUNCTION kgrag_private.sees(access text[], held text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT access IS NULL OR access OPERATOR(pg_catalog.&&) held OR held = ARRAY['*']
$$;
COMMENT ON FUNCTION kgrag_private.sees(text[], text[]) IS
'Private. Returns whether groups held (kgrag.current_groups) see a row for an audience: the row is for everyone (NULL), or for a group held, or the holder is the schema owner ({*}).';

CREATE OR REPLACE FUNCTION kgrag_private.holds_all(asked text[], held text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT asked IS NULL OR asked OPERATOR(pg_catalog.<@) held OR held = ARRAY['*']
$$;
COMMENT ON FUNCTION kgrag_private.holds_all(text[], text[]) IS
'Private. Returns whether groups held (kgrag.current_groups) include every group another session held when it wrote a log row (NULL: a row of before revision 0042), or the holder is the schema owner ({*}).';

CREATE OR REPLACE FUNCTION kgrag_private.audience_key(access text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.array_to_string(access, ',') $$;
COMMENT ON FUNCTION kgrag_private.audience_key(text[]) IS
'Private. Returns a chunk''s groups as one text, stored in kgrag.chunk.audience (NULL: for everyone), so the index chunk_audience_idx holds them and a count of a session''s chunks reads the index alone (kgrag_private.seen_audiences). Its results are stored: it changes only with a revision that recomputes the column.';

CREATE OR REPLACE FUNCTION kgrag_private.id_access(id text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN pg_catalog.strpos(id, '~') = 0 THEN NULL
                ELSE pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(id, '~', 2), '@', 1), ',') END
$$;
GRANT EXECUTE ON FUNCTION kgrag_private.id_access(text) TO kgrag_reader, kgrag_writer, kgrag_curator, kgrag_probe, kgrag_logger;
COMMENT ON FUNCTION kgrag_private.id_access(text) IS
'Private. Returns the groups an id of the graph is for (an entity''s, or a name key: "person:maria silva~hr@1f3a9c2e" -> {hr}), NULL for an id of the shared graph (no ''~''). The tenant policies of the graph''s tables read the mark as it does, with built-ins (a call per row costs more); kgrag_private.replace_communities marks a community''s id with its result.';

-- 0019_citus down: the checks and constraints as revision 0018 wrote them.

ALTER TABLE kgrag.entity DROP CONSTRAINT entity_tenant_id_answer_chunk_id_fkey,
    ADD CONSTRAINT entity_tenant_id_answer_chunk_id_fkey
        FOREIGN KEY (tenant_id, answer_chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id) ON DELETE SET NULL (answer_chunk_id);
ALTER TABLE kgrag.edge DROP CONSTRAINT edge_tenant_id_evidence_chunk_id_fkey,
    ADD CONSTRAINT edge_tenant_id_evidence_chunk_id_fkey
        FOREIGN KEY (tenant_id, evidence_chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id) ON DELETE SET NULL (evidence_chunk_id);

DO $$
DECLARE
    p record;
    direct constant text := 'kgrag.current_tenant()';
    sub constant text := '(SELECT kgrag.current_tenant())';
BEGIN
    FOR p IN
        SELECT y.polrelid::pg_catalog.regclass::text AS rel, y.polname,
               pg_catalog.pg_get_expr(y.polqual, y.polrelid) AS qual,
               pg_catalog.pg_get_expr(y.polwithcheck, y.polrelid) AS checks
          FROM pg_catalog.pg_policy AS y
          JOIN pg_catalog.pg_class AS c ON c.oid = y.polrelid
         WHERE c.relnamespace = 'kgrag'::pg_catalog.regnamespace
         ORDER BY 1, 2
    LOOP
        IF pg_catalog.strpos(p.qual, direct) > 0 THEN
            EXECUTE pg_catalog.format('ALTER POLICY %I ON %s USING (%s)', p.polname, p.rel, pg_catalog.replace(p.qual, direct, sub));
        END IF;
        IF pg_catalog.strpos(p.checks, direct) > 0 THEN
            EXECUTE pg_catalog.format('ALTER POLICY %I ON %s WITH CHECK (%s)', p.polname, p.rel, pg_catalog.replace(p.checks, direct, sub));
        END IF;
    END LOOP;
END
$$;

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
       AND pg_catalog.current_setting('kgrag.tenant_seal', true) = kgrag_private.tenant_seal(previous) THEN
        RAISE EXCEPTION 'this transaction already acts for tenant %', pg_catalog.quote_literal(previous)
            USING ERRCODE = '25001', HINT = 'A transaction has one tenant: use another transaction for another tenant.';
    END IF;
    IF NOT kgrag_private.may_use_tenant(tenant) THEN
        RAISE EXCEPTION 'role % may not act for tenant %', session_user, pg_catalog.quote_literal(tenant)
            USING ERRCODE = '42501',
                  HINT = CASE WHEN tenant = '*' THEN 'The defaults tenant ''*'' is the schema owner''s alone.'
                              ELSE 'The schema owner grants it: SELECT kgrag.grant_tenant(''role'', ''tenant'');' END;
    END IF;
    PERFORM pg_catalog.set_config('kgrag.tenant', tenant, true);
    PERFORM pg_catalog.set_config('kgrag.tenant_seal', kgrag_private.tenant_seal(tenant), true);
    RETURN tenant;
END
$$;
COMMENT ON FUNCTION kgrag.use_tenant(text) IS
'Names the tenant of the current transaction and returns it: SELECT kgrag.use_tenant(''acme''); at the start of every transaction (the setting ends with it). Refuses (42501) a tenant the session''s role may not use, and (25001) a second, different tenant in the same transaction.';

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
    IF pg_catalog.current_setting('kgrag.tenant_seal', true) IS DISTINCT FROM kgrag_private.tenant_seal(t) THEN
        RAISE EXCEPTION 'kgrag.tenant was not set for this transaction'
            USING ERRCODE = '28000',
                  HINT = 'A tenant set for the session (SET, set_config(..., false), options=-c) or left from an earlier transaction does not count: call SELECT kgrag.use_tenant(''my-tenant''); in each transaction.';
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
'Returns the tenant of the current transaction, as kgrag.use_tenant named it. Fails closed, so every row-level security policy does: SQLSTATE 28000 when no tenant is set or it was not set for this transaction (a session-level setting does not count), 42501 when the session''s role may not act for it (kgrag.grant_tenant).';

DROP FUNCTION kgrag_private.sealed(text, text);

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
    -- Role lookups only, no query: this runs once per statement that reads a kgrag table.
    one := pg_catalog.to_regrole(kgrag_private.tenant_role(tenant));
    every := pg_catalog.to_regrole(kgrag_private.tenant_role('*'));
    RETURN (one IS NOT NULL AND pg_catalog.pg_has_role(session_user, one, 'MEMBER'))
        OR (every IS NOT NULL AND pg_catalog.pg_has_role(session_user, every, 'MEMBER'));
END
$$;
COMMENT ON FUNCTION kgrag_private.may_use_tenant(text) IS
'Private. Returns whether the session''s login role may act for the tenant: it owns the schema (CREATE on it), or it is a member of the tenant''s role or of the every-tenant role (kgrag.grant_tenant).';
DROP FUNCTION kgrag_private.serving_another_node();

CREATE OR REPLACE FUNCTION kgrag_private.tenant_seal(tenant text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pg_catalog.pg_backend_pid() || '/' || EXTRACT(epoch FROM pg_catalog.transaction_timestamp()) || '/' || tenant;
END
$$;
COMMENT ON FUNCTION kgrag_private.tenant_seal(text) IS
'Private. Returns the seal kgrag.use_tenant leaves beside kgrag.tenant: this backend, this transaction''s start and the tenant. A kgrag.tenant without the seal of the current transaction was not set for it.';

CREATE OR REPLACE FUNCTION kgrag_private.tenant_role(tenant text) RETURNS text
LANGUAGE plpgsql STABLE STRICT SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- the schema's oid too: a database dropped and made again under its name does not inherit the grants
    RETURN 'kgrag_t_' || pg_catalog.left(pg_catalog.md5(pg_catalog.current_database() || '/'
                                                        || 'kgrag'::pg_catalog.regnamespace::pg_catalog.oid || '/' || tenant), 24);
END
$$;
COMMENT ON FUNCTION kgrag_private.tenant_role(text) IS
'Private. Returns the name of the role that stands for a tenant of this database (tenant ''*'': every tenant): kgrag_t_ and 24 hex digits of md5(database/schema oid/tenant), so a schema installed again starts with no grants. kgrag.grant_tenant creates it and makes the grantee a member; a session may act for the tenant when its login role is a member of it.';

DROP FUNCTION kgrag_private.installation();

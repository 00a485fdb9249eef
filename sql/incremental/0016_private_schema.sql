-- 0016_private_schema: the private helpers leave schema kgrag, so `\df+ kgrag.*` is the public API.
--
-- Schema kgrag_private holds what the public functions call and no caller should: the walk, the
-- probes, the log writers, the tenant checks. Nobody but its owner may create in it. USAGE is
-- PUBLIC's, as schema kgrag's functions were callable by whoever could use kgrag: every policy
-- calls kgrag.current_tenant(), which calls a helper, so a role granted USAGE on kgrag directly
-- (not through kgrag_reader) keeps working; the helpers run with the caller's rights, and the
-- SECURITY DEFINER ones keep EXECUTE for the kgrag roles only. The helpers of
-- sql/idempotent are created there by the installer; the three tenant helpers of 0011 move here,
-- and the 0011 functions that call them are created again with the new names (their text is the
-- catalog's, so nothing else of them changes).

CREATE SCHEMA kgrag_private;
COMMENT ON SCHEMA kgrag_private IS
'pgkgrag''s private helpers: called by the functions of schema kgrag, never meant to be called directly. Their names and arguments change between revisions without notice.';
GRANT USAGE ON SCHEMA kgrag_private TO PUBLIC;

ALTER FUNCTION kgrag._tenant_role(text) SET SCHEMA kgrag_private;
ALTER FUNCTION kgrag_private._tenant_role(text) RENAME TO tenant_role;
ALTER FUNCTION kgrag._may_use_tenant(text) SET SCHEMA kgrag_private;
ALTER FUNCTION kgrag_private._may_use_tenant(text) RENAME TO may_use_tenant;
ALTER FUNCTION kgrag._tenant_seal(text) SET SCHEMA kgrag_private;
ALTER FUNCTION kgrag_private._tenant_seal(text) RENAME TO tenant_seal;

DO $$
DECLARE
    f pg_catalog.regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY['kgrag_private.may_use_tenant(text)', 'kgrag.current_tenant()', 'kgrag.use_tenant(text)',
                             'kgrag.grant_tenant(text,text)', 'kgrag.revoke_tenant(text,text)']::pg_catalog.regprocedure[] LOOP
        EXECUTE pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.pg_get_functiondef(f),
            'kgrag._tenant_role(', 'kgrag_private.tenant_role('),
            'kgrag._may_use_tenant(', 'kgrag_private.may_use_tenant('),
            'kgrag._tenant_seal(', 'kgrag_private.tenant_seal(');
    END LOOP;
END
$$;
COMMENT ON FUNCTION kgrag.grant_tenant(text, text) IS
'Lets a role (and every role that is a member of it) act for a tenant of this database: makes it a member of the tenant''s role (kgrag_private.tenant_role, created on the first grant). Tenant ''*'' means every tenant (a service role), never the defaults tenant, which stays the schema owner''s. Returns true when the grant is new. For the schema owner (it needs CREATEROLE).';

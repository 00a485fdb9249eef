-- 0016_private_schema down: the tenant helpers go back to schema kgrag under their 0011 names.

ALTER FUNCTION kgrag_private.tenant_role(text) RENAME TO _tenant_role;
ALTER FUNCTION kgrag_private._tenant_role(text) SET SCHEMA kgrag;
ALTER FUNCTION kgrag_private.may_use_tenant(text) RENAME TO _may_use_tenant;
ALTER FUNCTION kgrag_private._may_use_tenant(text) SET SCHEMA kgrag;
ALTER FUNCTION kgrag_private.tenant_seal(text) RENAME TO _tenant_seal;
ALTER FUNCTION kgrag_private._tenant_seal(text) SET SCHEMA kgrag;

DO $$
DECLARE
    f pg_catalog.regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY['kgrag._may_use_tenant(text)', 'kgrag.current_tenant()', 'kgrag.use_tenant(text)',
                             'kgrag.grant_tenant(text,text)', 'kgrag.revoke_tenant(text,text)']::pg_catalog.regprocedure[] LOOP
        EXECUTE pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.pg_get_functiondef(f),
            'kgrag_private.tenant_role(', 'kgrag._tenant_role('),
            'kgrag_private.may_use_tenant(', 'kgrag._may_use_tenant('),
            'kgrag_private.tenant_seal(', 'kgrag._tenant_seal(');
    END LOOP;
END
$$;
COMMENT ON FUNCTION kgrag.grant_tenant(text, text) IS
'Lets a role (and every role that is a member of it) act for a tenant of this database: makes it a member of the tenant''s role (kgrag._tenant_role, created on the first grant). Tenant ''*'' means every tenant (a service role), never the defaults tenant, which stays the schema owner''s. Returns true when the grant is new. For the schema owner (it needs CREATEROLE).';

DROP SCHEMA kgrag_private;

-- 0030_tenant_names: what a tenant's name may be, said once. kgrag_private.is_tenant_name is the
-- rule (1-128 letters, digits or _.:@-, starting with a letter or digit; '*' names the defaults);
-- kgrag.use_tenant and kgrag.grant_tenant call it (their definitions are kept in
-- sql/idempotent/002_tenancy.kept.sql, where this function's is too), and the Python driver no
-- longer holds a copy: a bad name is refused by the database, for every client.
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $do$
BEGIN
    EXECUTE $f$
CREATE FUNCTION kgrag_private.is_tenant_name(tenant text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT tenant = '*' OR tenant ~ '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$'
$$ $f$;
    EXECUTE $f$
COMMENT ON FUNCTION kgrag_private.is_tenant_name(text) IS
'Private. Returns whether a text may name a tenant: 1-128 letters, digits or _.:@-, starting with a letter or digit, or ''*'' (the defaults tenant); NULL for NULL. kgrag.use_tenant and kgrag.grant_tenant refuse any other name.' $f$;
END
$do$;

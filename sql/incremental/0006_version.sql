-- 0006_version: the schema revision, readable from SQL by any role and without a tenant.
--
-- The revision is kept in the function's own setting kgrag.schema_revision (a SET clause, not a
-- table: it needs no tenant and no row-level security). The installer brings it up to date at the
-- end of every migration run (ALTER FUNCTION ... SET), upgrade or downgrade.

CREATE FUNCTION kgrag.version() RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
SET kgrag.schema_revision = '0006'
AS $$
    SELECT pg_catalog.current_setting('kgrag.schema_revision')
$$;
COMMENT ON FUNCTION kgrag.version() IS
'Returns the Alembic revision the kgrag schema is at (e.g. ''0006''), as recorded by the installer. The pgkgrag driver refuses to run against a schema older than the revision it ships with.';

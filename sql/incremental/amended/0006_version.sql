-- Amended 0006_version (replaces sql/incremental/0006_version.sql for databases installed from now
-- on; the released file stays as it ran). The released file kept the revision in a custom setting
-- of the function (SET kgrag.schema_revision), which only a superuser may attach (PostgreSQL 15 on:
-- "permission denied to set parameter"). Here the revision is the function's result, and the
-- installer re-creates the function with the revision it reached at the end of every migration run
-- (pgkgrag/queries.sql, installer_record_revision), which also drops the setting from a database
-- that ran the released file.

CREATE FUNCTION kgrag.version() RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT '0006'::text
$$;
COMMENT ON FUNCTION kgrag.version() IS
'Returns the Alembic revision the kgrag schema is at (e.g. ''0006''), as recorded by the installer. The pgkgrag driver refuses to run against a schema older than the revision it ships with.';

-- kgrag.version(): the revision the schema is at, for any role, with no tenant, no table and no
-- custom setting to read. The installer runs these files at the end of the run that reached head
-- and names that revision in kgrag.install_revision, for the transaction; it becomes the result.
-- Below head the installer drops it with the rest of this layer (`pgkgrag db status` then reads
-- Alembic's version table), except below revision 0049, where it runs this file alone: the
-- drivers of those revisions expect kgrag.version() at every revision.
DO $$
DECLARE
    reached text := pg_catalog.current_setting('kgrag.install_revision', true);
BEGIN
    IF reached IS NULL OR reached !~ '^[0-9]{4}$' THEN
        RAISE EXCEPTION 'kgrag.install_revision is %: the installer names the revision its run reached',
            COALESCE(pg_catalog.quote_literal(reached), 'not set') USING ERRCODE = '22023';
    END IF;
    EXECUTE pg_catalog.format($fn$
CREATE FUNCTION kgrag.version() RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT %L::text $body$
$fn$, reached);
END
$$;
COMMENT ON FUNCTION kgrag.version() IS
'Returns the Alembic revision the kgrag schema is at (e.g. ''0049''): any role may call it, with no tenant. Defined at head only, with the rest of the functions. The pgkgrag driver refuses to run against a schema older than the revision it ships with.';

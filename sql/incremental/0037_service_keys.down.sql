-- 0037_service_keys, down: the keys, their secret and the query log's new columns go;
-- kgrag_private.may_use_tenant takes its body of 0036 back (it then checks no key seal).
DO $$
BEGIN
    EXECUTE $q$
CREATE OR REPLACE FUNCTION kgrag_private.may_use_tenant(tenant text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$
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
    RETURN (one IS NOT NULL AND pg_catalog.pg_has_role(session_user, one, 'MEMBER'))
        OR (every IS NOT NULL AND pg_catalog.pg_has_role(session_user, every, 'MEMBER'));
END
$body$
$q$;
    EXECUTE 'DROP FUNCTION kgrag_private.key_sealed(text, name)';
    EXECUTE 'DROP FUNCTION kgrag_private.key_mac(text, text, text)';
    EXECUTE 'DROP TABLE kgrag_private.api_key';
    EXECUTE 'DROP TABLE kgrag_private.key_secret';
    EXECUTE 'ALTER TABLE kgrag.query_log DROP COLUMN chunk_ids';
    EXECUTE 'ALTER TABLE kgrag.query_log DROP COLUMN embedder';
    EXECUTE 'ALTER TABLE kgrag.query_log DROP COLUMN schema_revision';
END
$$

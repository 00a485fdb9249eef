-- 0037_service_keys: the API keys of `pgkgrag serve`, checked by the database itself, and a query
-- log that can explain a past answer.
--
-- - kgrag_private.api_key: one row per key (its name, the sha256 of the key, never the key; the
--   tenants it may act for; its role, reader or writer; when it was made and revoked). Only the
--   schema owner reads it (kgrag.create_key, kgrag.list_keys, kgrag.revoke_key).
-- - kgrag_private.key_secret: one random secret, with which kgrag.use_key seals the tenant a key
--   was checked for, so that a session holding no tenant grant (the service's login role) acts
--   for that tenant in that transaction only: kgrag_private.key_sealed, created here, checks the
--   seal wherever kgrag.current_tenant() runs (a reference table on a Citus cluster, so the
--   workers check it too).
-- - kgrag.query_log gains chunk_ids (the chunks a search returned), embedder (the tenant's) and
--   schema_revision (kgrag.version()).
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.alias''::regclass)'
           INTO distributed;
    END IF;
    EXECUTE $q$
CREATE TABLE kgrag_private.api_key (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    key_hash   text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    tenants    text[] NOT NULL CHECK (pg_catalog.cardinality(tenants) BETWEEN 1 AND 100),
    role       text NOT NULL CHECK (role IN ('reader', 'writer')),
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    revoked_at timestamptz
)$q$;
    EXECUTE $q$COMMENT ON TABLE kgrag_private.api_key IS 'The API keys of pgkgrag serve (kgrag.create_key): the sha256 of each key, never the key, the tenants it may act for and its role. The schema owner''s alone.'$q$;
    EXECUTE $q$
CREATE TABLE kgrag_private.key_secret (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    secret text NOT NULL CHECK (pg_catalog.length(secret) >= 64)
)$q$;
    EXECUTE $q$COMMENT ON TABLE kgrag_private.key_secret IS 'The secret with which kgrag.use_key seals the tenant a key was checked for (kgrag_private.key_sealed). The schema owner''s alone.'$q$;
    EXECUTE $q$INSERT INTO kgrag_private.key_secret (secret)
        VALUES (pg_catalog.replace(pg_catalog.gen_random_uuid()::text || pg_catalog.gen_random_uuid()::text
                                   || pg_catalog.gen_random_uuid()::text, '-', ''))$q$;
    EXECUTE 'REVOKE ALL ON kgrag_private.api_key, kgrag_private.key_secret FROM PUBLIC';
    IF distributed THEN  -- the workers check seals too
        EXECUTE $q$SELECT pg_catalog.create_reference_table('kgrag_private.key_secret')$q$;
    END IF;
    -- first created here (sql/idempotent/002_tenancy.kept.sql holds their bodies): the policies call them
    EXECUTE $q$
CREATE FUNCTION kgrag_private.key_mac(tenant text, seal text, key_role text) RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT NULL::text $body$
$q$;
    EXECUTE 'REVOKE EXECUTE ON FUNCTION kgrag_private.key_mac(text, text, text) FROM PUBLIC';
    EXECUTE $q$
CREATE FUNCTION kgrag_private.key_sealed(tenant text, acting name) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT false $body$
$q$;
    EXECUTE 'REVOKE EXECUTE ON FUNCTION kgrag_private.key_sealed(text, name) FROM PUBLIC';
    EXECUTE 'GRANT EXECUTE ON FUNCTION kgrag_private.key_sealed(text, name) TO kgrag_reader, kgrag_writer, kgrag_curator, kgrag_probe, kgrag_logger';
    EXECUTE $q$ALTER TABLE kgrag.query_log ADD COLUMN chunk_ids text[] NOT NULL DEFAULT '{}'$q$;
    EXECUTE 'ALTER TABLE kgrag.query_log ADD COLUMN embedder text';
    EXECUTE 'ALTER TABLE kgrag.query_log ADD COLUMN schema_revision text';
END
$$

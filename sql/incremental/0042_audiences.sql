-- 0042_audiences: audiences inside a tenant.
--
-- - kgrag.document.access, kgrag.chunk.access: the groups a document is for (NULL: everyone of
--   the tenant). A restrictive policy on both hides a restricted row from a session that holds
--   none of its groups (kgrag.current_groups, kgrag_private.sees), and refuses to write one for
--   an audience the session does not hold.
-- - kgrag.ingest_failure.access: a file or line that could not be taken, from a run for groups, is
--   named to their holders alone.
-- - kgrag.document.extraction: what was extracted from the document (entities, relations, what was
--   set aside), kept so kgrag.set_access can move a document in or out of the shared graph without
--   extracting it again. A document for an audience contributes nothing to the graph.
-- - kgrag_private.audience: the groups of a tenant and the role that stands for each (granted by
--   kgrag.grant_groups); kgrag_private.api_key.groups: the groups an API key carries.
-- - kgrag.query_log.groups: the groups the asker held; a row is read only by a session holding them
--   all (its question, seeds and chunks may be a restricted document's).
-- - kgrag.settings: the owner's rows of a tenant are checked by the policy tenant_write, no longer
--   by the restrictive policies of revision 0041 (Citus makes a shard's policies permissive).
-- - kgrag.llm_cache.response: read through kgrag_private.llm_cache_get only (a caller names the
--   chunk texts it holds), never selected whole by a tenant's role.
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
    t text;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.alias''::regclass)'
           INTO distributed;
    END IF;
    -- first created here: the policies below call them (bodies: sql/idempotent/002_tenancy.kept.sql)
    EXECUTE $q$
CREATE FUNCTION kgrag.current_groups() RETURNS text[]
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT '{}'::text[] $body$
$q$;
    EXECUTE $q$
CREATE FUNCTION kgrag_private.groups_for(tenant text) RETURNS text[]
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT '{}'::text[] $body$
$q$;
    EXECUTE $q$
CREATE FUNCTION kgrag_private.group_role(tenant text, group_name text) RETURNS text
LANGUAGE sql STABLE STRICT SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT NULL::text $body$
$q$;
    EXECUTE $q$
CREATE FUNCTION kgrag_private.may_see(tenant text, access text[]) RETURNS boolean
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT access IS NULL $body$
$q$;
    EXECUTE $q$
CREATE FUNCTION kgrag_private.sees(access text[], held text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT access IS NULL $body$
$q$;
    EXECUTE $q$
CREATE FUNCTION kgrag_private.holds_all(asked text[], held text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT asked IS NULL $body$
$q$;
    EXECUTE $q$
CREATE TABLE kgrag_private.audience (
    tenant_id  text NOT NULL,
    group_name text NOT NULL CHECK (group_name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    role_name  text NOT NULL,
    PRIMARY KEY (tenant_id, group_name)
)$q$;
    EXECUTE $q$COMMENT ON TABLE kgrag_private.audience IS 'Private. The groups of each tenant that kgrag.grant_groups granted, and the role that stands for each (kgrag_private.group_role): a login role holds a group when it is a member of that role. Read by kgrag.current_groups (SECURITY DEFINER); no tenant role reads it.'$q$;
    IF distributed THEN  -- the workers read it where the policies run
        EXECUTE $q$SELECT pg_catalog.create_reference_table('kgrag_private.audience')$q$;
    END IF;
    EXECUTE $q$ALTER TABLE kgrag_private.api_key ADD COLUMN groups text[] NOT NULL DEFAULT '{}'$q$;
    FOREACH t IN ARRAY ARRAY['document', 'chunk', 'ingest_failure'] LOOP
        EXECUTE pg_catalog.format($q$ALTER TABLE kgrag.%I ADD COLUMN access text[]
            CONSTRAINT %I CHECK (access IS NULL OR (pg_catalog.cardinality(access) BETWEEN 1 AND 32
                AND pg_catalog.array_position(access, NULL) IS NULL
                AND pg_catalog.array_to_string(access, ',') ~ '^[a-z0-9][a-z0-9_.-]{0,62}(,[a-z0-9][a-z0-9_.-]{0,62})*$'))$q$,
            t, t || '_access_groups');
        EXECUTE pg_catalog.format($q$COMMENT ON COLUMN kgrag.%I.access IS %L$q$, t,
            'The groups the document is for (any one of them sees it; 1 to 32 names of 1-63 lower-case letters, digits or _.-); NULL: everyone of the tenant. A session sees the row only when it holds one of them (kgrag.current_groups).');
        -- The tenant's policy says it (a restrictive policy of its own would do on one node, but
        -- Citus makes every policy of a shard permissive, which would OR it with the tenant's).
        -- No subquery (Citus refuses them in policies); a row for everyone calls nothing.
        EXECUTE pg_catalog.format($q$ALTER POLICY tenant_isolation ON kgrag.%I
            USING (tenant_id = kgrag.current_tenant()
                   AND (access IS NULL OR kgrag_private.may_see(tenant_id, access)))
            WITH CHECK (tenant_id = kgrag.current_tenant()
                        AND (access IS NULL OR kgrag_private.may_see(tenant_id, access)))$q$, t);
    END LOOP;
    EXECUTE 'ALTER TABLE kgrag.document ADD COLUMN extraction jsonb';
    EXECUTE $q$COMMENT ON COLUMN kgrag.document.extraction IS 'What was extracted from the document, as ingestion staged it (entities, relations, set_aside): kgrag.set_access moves the document into or out of the shared graph with it, without extracting again. NULL for a document stored before revision 0042 (ingest it again before moving it).'$q$;
    EXECUTE 'ALTER TABLE kgrag.query_log ADD COLUMN groups text[]';
    EXECUTE $q$COMMENT ON COLUMN kgrag.query_log.groups IS 'The groups the asker held (kgrag.current_groups; {*}: the schema owner): the row is read only by a session that holds them all. NULL for rows written before revision 0042.'$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.query_log
        USING (tenant_id = kgrag.current_tenant()
               AND (groups IS NULL OR kgrag_private.holds_all(groups, kgrag_private.groups_for(tenant_id))))$q$;
    -- The settings' rows of the owner's settings (revision 0041): checked by the tenant's policy too,
    -- not by restrictive policies, which Citus makes permissive on its shards (then any row the
    -- owner wrote for a tenant was the tenant's to change).
    EXECUTE 'DROP POLICY owner_rows_update ON kgrag.settings';
    EXECUTE 'DROP POLICY owner_rows_delete ON kgrag.settings';
    EXECUTE $q$ALTER POLICY tenant_write ON kgrag.settings
        USING (tenant_id = kgrag.current_tenant() AND kgrag_private.setting_writable(tenant_id, key))$q$;
    -- a decision about a document that went into an audience ends, kept for that audience
    EXECUTE 'ALTER TABLE kgrag.curation_ended ADD COLUMN access text[]';
    EXECUTE $q$COMMENT ON COLUMN kgrag.curation_ended.access IS 'The groups of the document the decision was about when it ended because the document went into an audience (kgrag.set_access); NULL when its document was deleted. Read by the sessions holding one of them.'$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.curation_ended
        USING (tenant_id = kgrag.current_tenant()
               AND (access IS NULL OR kgrag_private.may_see(tenant_id, access)))$q$;
    -- the cached extractions: their responses through kgrag_private.llm_cache_get only
    EXECUTE 'REVOKE SELECT ON kgrag.llm_cache FROM kgrag_reader, kgrag_writer, kgrag_curator';
    EXECUTE 'GRANT SELECT (tenant_id, cache_key, model, created_at, content_hash) ON kgrag.llm_cache TO kgrag_writer';
    EXECUTE 'REVOKE UPDATE ON kgrag.llm_cache FROM kgrag_writer';  -- (an entry is put once: no one rewrites it)
END
$$;

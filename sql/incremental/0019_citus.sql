-- 0019_citus: the tenant checks and the constraints in forms a Citus cluster runs, so that
-- kgrag.distribute() works on one (docs/scale-out.md). Nothing changes on a single node but how
-- the checks are written; the tenancy tests hold on both.
--
-- - Policies compare tenant_id with kgrag.current_tenant() itself: Citus refuses subqueries in
--   the policies of a distributed table. The function is STABLE: as an index condition (every
--   kgrag index starts with tenant_id) it runs once per index scan; the subquery made it an init
--   plan, once per statement. Measured the same on the searches (docs/benchmarks.md, policy form).
-- - Each worker checks the policies of its shards again, in a backend of its own: kgrag.use_tenant
--   names the tenant with SET LOCAL, which Citus passes on to the workers of the transaction
--   (citus.propagate_set_commands = local, set for the transaction where Citus is installed, with
--   citus.allow_nested_distributed_execution and plan_cache_mode: see kgrag.use_tenant), and
--   the seal names the backend the transaction started on by its Citus global pid, which the
--   worker's backend reports too (kgrag_private.sealed).
-- - The tenant roles are named from an identity frozen here (kgrag_private.installation), the same
--   on every node: the schema's oid differs from node to node. Its value is what the name was made
--   of before (database name and schema oid), so existing grants keep their roles.
-- - The two foreign keys that set one column to NULL when a chunk goes (an entity's answer, an
--   edge's evidence) become plain ones: Citus refuses ON DELETE SET NULL on a key holding the
--   distribution column. kgrag.delete_documents and ingestion clear those references themselves
--   first (kgrag_private.release_chunks); a DELETE of a cited chunk by hand is refused.

DO $$
BEGIN
    EXECUTE pg_catalog.format($f$
CREATE FUNCTION kgrag_private.installation() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT %L::text $body$ $f$,
        pg_catalog.current_database() || '/' || 'kgrag'::pg_catalog.regnamespace::pg_catalog.oid);
END
$$;
COMMENT ON FUNCTION kgrag_private.installation() IS
'Private. Returns the identity of this installation of the schema, frozen when revision 0019 ran (the database''s name and the schema''s oid then): the tenant roles are named from it, on every node of a cluster.';

CREATE OR REPLACE FUNCTION kgrag_private.tenant_role(tenant text) RETURNS text
LANGUAGE plpgsql STABLE STRICT SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN 'kgrag_t_' || pg_catalog.left(pg_catalog.md5(kgrag_private.installation() || '/' || tenant), 24);
END
$$;
COMMENT ON FUNCTION kgrag_private.tenant_role(text) IS
'Private. Returns the name of the role that stands for a tenant of this installation (tenant ''*'': every tenant): kgrag_t_ and 24 hex digits of md5(kgrag_private.installation()/tenant), so a schema installed again starts with no grants. kgrag.grant_tenant creates it and makes the grantee a member; a session may act for the tenant when its login role is a member of it.';

CREATE OR REPLACE FUNCTION kgrag_private.tenant_seal(tenant text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    origin bigint := pg_catalog.pg_backend_pid();
BEGIN
    IF pg_catalog.to_regprocedure('pg_catalog.citus_backend_gpid()') IS NOT NULL THEN
        origin := pg_catalog.citus_backend_gpid();
    END IF;
    RETURN origin || '/' || EXTRACT(epoch FROM pg_catalog.transaction_timestamp()) || '/' || tenant;
END
$$;
COMMENT ON FUNCTION kgrag_private.tenant_seal(text) IS
'Private. Returns the seal kgrag.use_tenant leaves beside kgrag.tenant: this backend (its Citus global pid where Citus is installed), this transaction''s start and the tenant. A kgrag.tenant without the seal of the current transaction was not set for it.';

CREATE FUNCTION kgrag_private.serving_another_node() RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- a Citus backend reports the global pid of the transaction it serves: another backend's
    -- when a coordinator (or another worker) sent it this statement
    IF pg_catalog.to_regprocedure('pg_catalog.citus_backend_gpid()') IS NULL THEN
        RETURN false;  -- (a separate statement: the next one names Citus's functions)
    END IF;
    RETURN pg_catalog.citus_pid_for_gpid(pg_catalog.citus_backend_gpid()) <> pg_catalog.pg_backend_pid();
END
$$;
COMMENT ON FUNCTION kgrag_private.serving_another_node() IS
'Private. Returns whether this backend runs statements a Citus node sent it for a transaction that started on another backend (a worker serving the coordinator); false without Citus.';

CREATE FUNCTION kgrag_private.sealed(tenant text, seal text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF seal IS NOT DISTINCT FROM kgrag_private.tenant_seal(tenant) THEN
        RETURN true;
    END IF;
    -- A worker serving another node's transaction: the tenant and the seal came with it (SET
    -- LOCAL, for this transaction only), made by the backend the transaction started on.
    IF NOT kgrag_private.serving_another_node() THEN
        RETURN false;
    END IF;
    RETURN pg_catalog.split_part(seal, '/', 1) = pg_catalog.citus_backend_gpid()::text
       AND pg_catalog.split_part(seal, '/', 3) = tenant;
END
$$;
COMMENT ON FUNCTION kgrag_private.sealed(text, text) IS
'Private. Returns whether a seal is the current transaction''s for this tenant: made by kgrag_private.tenant_seal in this backend and transaction, or, on a Citus worker serving another node''s transaction, made by the backend that transaction started on (same global pid and tenant).';

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
$$;
COMMENT ON FUNCTION kgrag_private.may_use_tenant(text) IS
'Private. Returns whether the session''s login role may act for the tenant: it owns the schema (CREATE on it), or it is a member of the tenant''s role or of the every-tenant role (kgrag.grant_tenant); on a Citus worker serving another node, also the owners of the SECURITY DEFINER helpers, as which that node logs in there.';

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
    IF NOT kgrag_private.sealed(t, pg_catalog.current_setting('kgrag.tenant_seal', true)) THEN
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
'Returns the tenant of the current transaction, as kgrag.use_tenant named it. Fails closed, so every row-level security policy does: SQLSTATE 28000 when no tenant is set or it was not set for this transaction (a session-level setting does not count), 42501 when the session''s role may not act for it (kgrag.grant_tenant). On a Citus cluster each worker checks the same for its shards.';

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
       AND kgrag_private.sealed(previous, pg_catalog.current_setting('kgrag.tenant_seal', true)) THEN
        RAISE EXCEPTION 'this transaction already acts for tenant %', pg_catalog.quote_literal(previous)
            USING ERRCODE = '25001', HINT = 'A transaction has one tenant: use another transaction for another tenant.';
    END IF;
    IF NOT kgrag_private.may_use_tenant(tenant) THEN
        RAISE EXCEPTION 'role % may not act for tenant %', session_user, pg_catalog.quote_literal(tenant)
            USING ERRCODE = '42501',
                  HINT = CASE WHEN tenant = '*' THEN 'The defaults tenant ''*'' is the schema owner''s alone.'
                              ELSE 'The schema owner grants it: SELECT kgrag.grant_tenant(''role'', ''tenant'');' END;
    END IF;
    -- SET LOCAL, not set_config(): Citus passes SET LOCAL on to the workers of the transaction.
    -- There a function reading a table may run inside a statement Citus sent to a worker: it
    -- reads the same tenant, whose shards are all on that worker (co-located), in the same
    -- transaction, so the nested query Citus refuses by default is a local one.
    IF pg_catalog.to_regprocedure('pg_catalog.citus_backend_gpid()') IS NOT NULL THEN
        PERFORM pg_catalog.set_config('citus.propagate_set_commands', 'local', true);
        SET LOCAL citus.allow_nested_distributed_execution TO on;
        -- A generic plan of an UPDATE or DELETE with a subquery runs on every shard: Citus
        -- prunes shards with the tenant's value in hand, so every statement is planned with it.
        SET LOCAL plan_cache_mode TO force_custom_plan;
    END IF;
    EXECUTE pg_catalog.format('SET LOCAL kgrag.tenant TO %L', tenant);
    EXECUTE pg_catalog.format('SET LOCAL kgrag.tenant_seal TO %L', kgrag_private.tenant_seal(tenant));
    RETURN tenant;
END
$$;
COMMENT ON FUNCTION kgrag.use_tenant(text) IS
'Names the tenant of the current transaction and returns it: SELECT kgrag.use_tenant(''acme''); at the start of every transaction (the setting ends with it; on a Citus cluster it reaches the workers too). Refuses (42501) a tenant the session''s role may not use, and (25001) a second, different tenant in the same transaction.';

DO $$
DECLARE
    p record;
    direct constant text := 'kgrag.current_tenant()';
    sub constant text := '( SELECT kgrag.current_tenant() AS current_tenant)';
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
        IF pg_catalog.strpos(p.qual, sub) > 0 THEN
            EXECUTE pg_catalog.format('ALTER POLICY %I ON %s USING (%s)', p.polname, p.rel, pg_catalog.replace(p.qual, sub, direct));
        END IF;
        IF pg_catalog.strpos(p.checks, sub) > 0 THEN
            EXECUTE pg_catalog.format('ALTER POLICY %I ON %s WITH CHECK (%s)', p.polname, p.rel, pg_catalog.replace(p.checks, sub, direct));
        END IF;
    END LOOP;
END
$$;

ALTER TABLE kgrag.entity DROP CONSTRAINT entity_tenant_id_answer_chunk_id_fkey,
    ADD CONSTRAINT entity_tenant_id_answer_chunk_id_fkey
        FOREIGN KEY (tenant_id, answer_chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id);
ALTER TABLE kgrag.edge DROP CONSTRAINT edge_tenant_id_evidence_chunk_id_fkey,
    ADD CONSTRAINT edge_tenant_id_evidence_chunk_id_fkey
        FOREIGN KEY (tenant_id, evidence_chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id);

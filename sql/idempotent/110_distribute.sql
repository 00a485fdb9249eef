-- Scale-out with Citus: every tenant's rows on one shard group, co-located by tenant_id, so a
-- per-tenant query (each of which names tenant_id on every table, see docs/scale-out.md) is routed
-- to a single node; the small tables of shared defaults are replicated to every node.

CREATE OR REPLACE FUNCTION kgrag_private.distribution_plan()
RETURNS TABLE (table_name text, kind text, colocate_with text)
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- tables holding the defaults of every tenant (tenant '*'), read by every tenant's queries,
    -- are reference tables; every other table, the logs included, is co-located with kgrag.document
    -- (a tenant's delegated calls, kgrag_private.delegate_calls, write its logs next to its graph).
    -- Referenced tables first: a foreign key may only point at a table distributed before it.
    -- The secret the workers check key seals with (kgrag_private.key_secret) is a reference table too,
    -- and so are the groups of every tenant (kgrag_private.audience), which the policies read there.
    WITH RECURSIVE tables AS (
        SELECT c.oid, c.relnamespace::regnamespace::text || '.' || c.relname AS name
          FROM pg_catalog.pg_class AS c
         WHERE (c.relnamespace = 'kgrag'::regnamespace AND c.relkind IN ('r', 'p'))
            OR c.oid IN (to_regclass('kgrag_private.key_secret'), to_regclass('kgrag_private.audience'))
    ), depth AS (
        SELECT t.oid, 0 AS d FROM tables AS t
        UNION ALL
        SELECT k.conrelid, depth.d + 1
          FROM depth
          JOIN pg_catalog.pg_constraint AS k ON k.confrelid = depth.oid AND k.contype = 'f'
         WHERE k.conrelid <> k.confrelid AND depth.d < 32
    ), kinds AS (
        SELECT t.name, max(depth.d) AS d,
               t.name IN ('kgrag.settings', 'kgrag.router_rule', 'kgrag_private.key_secret', 'kgrag_private.audience')
               AS reference
          FROM tables AS t JOIN depth ON depth.oid = t.oid
         GROUP BY t.name
    )
    SELECT k.name,
           CASE WHEN k.reference THEN 'reference' ELSE 'distributed by tenant_id' END,
           CASE WHEN k.reference OR k.name = 'kgrag.document' THEN NULL ELSE 'kgrag.document' END
      FROM kinds AS k
     -- reference tables first, then kgrag.document (every other table is co-located with it)
     ORDER BY k.reference DESC, k.name = 'kgrag.document' DESC, k.d, k.name
$$;
COMMENT ON FUNCTION kgrag_private.distribution_plan() IS
'Private. Returns how kgrag.distribute() lays out each kgrag table, in the order it must: (table_name, kind, colocate_with). settings and router_rule are reference tables, and so are kgrag_private.key_secret (the workers check key seals with it) and kgrag_private.audience (the groups the audience policies read there); every other table, the logs included (revision 0040), is distributed by tenant_id and co-located with kgrag.document; referenced tables before the tables whose foreign keys point at them.';

CREATE OR REPLACE FUNCTION kgrag_private.delegated_calls() RETURNS SETOF regprocedure
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- the functions a public one calls with the tenant as first argument, each checking it first
    SELECT p.oid::regprocedure
      FROM pg_catalog.pg_proc AS p
     WHERE p.pronamespace = 'kgrag_private'::regnamespace
       AND p.proargnames[1] = 'tenant' AND p.pronargs >= 1 AND p.proargtypes[0] = 'text'::regtype
       AND strpos(p.prosrc, 'kgrag_private.check_delegated_tenant(tenant)') > 0
     ORDER BY p.oid::regprocedure::text
$$;
COMMENT ON FUNCTION kgrag_private.delegated_calls() IS
'Private. Returns the functions a public function calls, in one statement, with the tenant of the transaction as first argument (named tenant, checked first with kgrag_private.check_delegated_tenant): kgrag_private.search_at, context_blocks_at, link_entities_at, route_at, search_chunks_lexical_at, log_answer_at and log_llm_calls_at. On a Citus cluster kgrag_private.delegate_calls makes each a delegated function.';

CREATE OR REPLACE FUNCTION kgrag_private.delegate_calls() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    f regprocedure;
    r record;
    n integer := 0;
    unsynced boolean;  -- an active worker lacks its Citus metadata
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RETURN 0;  -- (and pg_dist_partition does not exist: the test below would not plan)
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition AS p WHERE p.logicalrelid = 'kgrag.document'::regclass) THEN
        RETURN 0;  -- not distributed (yet): kgrag.distribute() calls this again
    END IF;
    -- Citus sends each call to the worker holding the shards of its first argument's tenant, and
    -- inside a transaction too (force_delegation), where every statement of the call must then name
    -- that tenant in kgrag.document's co-location group: one round trip, the walk, the fusion and
    -- the log next to the shards
    -- (Citus delegates only to a worker that has the metadata, and refuses to make a delegated
    -- function while any worker lacks it: say so, and leave the calls as they are until then)
    unsynced := EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node AS n
                         WHERE n.groupid > 0 AND n.isactive AND NOT (n.hasmetadata AND n.metadatasynced));
    IF unsynced THEN
        RAISE WARNING 'a worker has no Citus metadata (yet): no call is made a delegated function now, and the calls of a tenant on that worker fail until its metadata is synced'
            USING HINT = 'SELECT start_metadata_sync_to_node(host, port) for it, then SELECT kgrag_private.delegate_calls(); '
                         'docs/scale-out.md, "One round trip per call".';
    END IF;
    FOR f IN SELECT * FROM kgrag_private.delegated_calls() WHERE NOT unsynced LOOP
        PERFORM pg_catalog.create_distributed_function(f, '$1', colocate_with => 'kgrag.document',
                                                       force_delegation => true);
        n := n + 1;
    END LOOP;
    -- a view becomes a distributed object (created on the workers) when its tables are
    -- distributed, without the grants it had: grant them again, which Citus now passes on
    FOR r IN SELECT c.oid::regclass AS view_name, a.privilege_type,
                    CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END AS grantee
               FROM pg_catalog.pg_class AS c
              CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS a
              WHERE c.relnamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace) AND c.relkind = 'v'
                AND a.grantee <> c.relowner
              ORDER BY 1, 2, 3 LOOP
        EXECUTE pg_catalog.format('GRANT %s ON %s TO %s', r.privilege_type, r.view_name, r.grantee);
    END LOOP;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.delegate_calls() FROM PUBLIC;
COMMENT ON FUNCTION kgrag_private.delegate_calls() IS
'Private. On a Citus coordinator whose tables are distributed: makes each of kgrag_private.delegated_calls() a function Citus delegates, by its first argument (the tenant), co-located with kgrag.document, inside transactions too (force_delegation), so that a public function''s call runs on the worker holding the tenant''s shards in one round trip; and grants on the workers what the views grant on the coordinator (a view distributed with its tables reaches the workers without its grants). kgrag.distribute() calls it, and so does every migration run that creates the functions again (the installer). While an active worker lacks its Citus metadata it delegates nothing (Citus would refuse) and warns: a tenant''s calls on that worker fail until start_metadata_sync_to_node. Elsewhere it does nothing. Returns the functions delegated. For the schema owner.';

CREATE OR REPLACE FUNCTION kgrag.distribute(dry_run boolean DEFAULT false)
RETURNS TABLE (table_name text, kind text, colocate_with text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    r record;
    made text[] := ARRAY[]::text[];
BEGIN
    IF NOT dry_run AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'kgrag.distribute() needs the Citus extension, and it is not installed in this database'
            USING ERRCODE = '0A000',
                  HINT = 'Run it on a Citus coordinator with its workers added (CREATE EXTENSION citus; '
                         'SELECT citus_add_node(...)); see docs/scale-out.md. '
                         'kgrag.distribute(dry_run => true) lists what it would do.';
    END IF;
    IF NOT dry_run THEN
        -- one connection per node for the whole call: Citus creates no (delegated) function in a
        -- transaction that ran commands on shards in parallel
        PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);
    END IF;
    FOR r IN SELECT * FROM kgrag_private.distribution_plan() LOOP
        table_name := r.table_name;
        kind := r.kind;
        colocate_with := r.colocate_with;
        -- (nested: pg_dist_partition exists only where Citus is installed)
        IF NOT dry_run THEN
            IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition AS p
                            WHERE p.logicalrelid = table_name::regclass) THEN
                IF kind = 'reference' THEN
                    PERFORM pg_catalog.create_reference_table(table_name::regclass);
                ELSE
                    PERFORM pg_catalog.create_distributed_table(table_name::regclass, 'tenant_id',
                                                     colocate_with => COALESCE(colocate_with, 'default'));
                END IF;
                made := made || table_name;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF NOT dry_run THEN
        -- a tenant's calls to the worker holding its shards (kgrag_private.delegate_calls)
        PERFORM kgrag_private.delegate_calls();
    END IF;
    -- the rows a table held were copied to its shards: the coordinator's own copy goes (children first)
    FOR i IN REVERSE COALESCE(pg_catalog.array_length(made, 1), 0) .. 1 LOOP
        PERFORM pg_catalog.truncate_local_data_after_distributing_table(made[i]::regclass);
    END LOOP;
    -- Citus reaches the workers as the current role, inside a SECURITY DEFINER function as its
    -- owner: the owners of the probes and log writers must be able to log in there (no password;
    -- docs/scale-out.md says how to let only the coordinator in)
    IF NOT dry_run THEN
        FOR r IN SELECT a.rolname FROM pg_catalog.pg_roles AS a
                  WHERE a.rolname IN ('kgrag_probe', 'kgrag_logger') AND NOT a.rolcanlogin ORDER BY 1 LOOP
            EXECUTE pg_catalog.format('ALTER ROLE %I LOGIN', r.rolname);
        END LOOP;
    END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.distribute(boolean) FROM PUBLIC;
COMMENT ON FUNCTION kgrag.distribute(boolean) IS
'Returns, per kgrag table in foreign-key order, (table_name, kind, colocate_with), and on a Citus coordinator makes it so: settings and router_rule become reference tables (copied to every node), every other table is distributed by tenant_id, co-located with kgrag.document (the logs included). Rows already there are moved to the shards. The functions a public function delegates to get delegated to the tenant''s worker, and the views'' grants reach the workers (kgrag_private.delegate_calls). The owners of the SECURITY DEFINER helpers (kgrag_probe, kgrag_logger) get LOGIN, without a password, as Citus logs in to the workers as them (docs/scale-out.md: allow them from the coordinator only). Tables already distributed are left as they are, so a second call changes nothing. Without Citus it raises SQLSTATE 0A000 saying so; dry_run => true only lists. For the schema owner.';

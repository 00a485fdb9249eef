-- Scale-out with Citus: every tenant's rows on one shard group, co-located by tenant_id, so a
-- per-tenant query (each of which names tenant_id on every table, see docs/scale-out.md) is routed
-- to a single node; the small tables of shared defaults are replicated to every node.

CREATE OR REPLACE FUNCTION kgrag_private.distribution_plan()
RETURNS TABLE (table_name text, kind text, colocate_with text)
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- tables holding the defaults of every tenant (tenant '*'), read by every tenant's queries,
    -- are reference tables; the logs are written as kgrag_logger (SECURITY DEFINER log functions)
    -- and never joined with the graph: a group of their own, or once a search has logged, Citus
    -- refuses the rest of its transaction the tenant's other shards (modified there "by a
    -- different user"). Referenced tables first: a foreign key may only point at a table
    -- distributed before it.
    WITH RECURSIVE tables AS (
        SELECT c.oid, c.relname::text AS name
          FROM pg_catalog.pg_class AS c
         WHERE c.relnamespace = 'kgrag'::regnamespace AND c.relkind IN ('r', 'p')
    ), depth AS (
        SELECT t.oid, 0 AS d FROM tables AS t
        UNION ALL
        SELECT k.conrelid, depth.d + 1
          FROM depth
          JOIN pg_catalog.pg_constraint AS k ON k.confrelid = depth.oid AND k.contype = 'f'
         WHERE k.conrelid <> k.confrelid AND depth.d < 32
    ), kinds AS (
        SELECT t.name, max(depth.d) AS d, t.name IN ('settings', 'router_rule') AS reference,
               CASE WHEN t.name IN ('answer_log', 'query_log', 'log_overflow', 'llm_call') THEN t.name END AS log
          FROM tables AS t JOIN depth ON depth.oid = t.oid
         GROUP BY t.name
    )
    SELECT 'kgrag.' || k.name,
           CASE WHEN k.reference THEN 'reference' ELSE 'distributed by tenant_id' END,
           CASE WHEN k.reference OR k.name = 'document' THEN NULL
                WHEN k.log = 'answer_log' THEN 'none'
                WHEN k.log IS NOT NULL THEN 'kgrag.answer_log'
                ELSE 'kgrag.document' END
      FROM kinds AS k
     -- reference tables first, then kgrag.document (every other table but the logs is co-located
     -- with it), then the first log (the other is co-located with it)
     ORDER BY k.reference DESC, k.name = 'document' DESC, k.name = 'answer_log' DESC, k.d, k.name
$$;
COMMENT ON FUNCTION kgrag_private.distribution_plan() IS
'Private. Returns how kgrag.distribute() lays out each kgrag table, in the order it must: (table_name, kind, colocate_with). settings and router_rule are reference tables; every other table is distributed by tenant_id and co-located with kgrag.document, but for the logs (answer_log, query_log, log_overflow, llm_call), a co-location group of their own; referenced tables before the tables whose foreign keys point at them.';

CREATE OR REPLACE FUNCTION kgrag_private.grant_curation_on_shards() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    propagation text := pg_catalog.current_setting('citus.enable_ddl_propagation', true);
BEGIN
    -- A curator's decision names only what it decides; who and when are the columns' defaults.
    -- Citus evaluates the defaults on the coordinator and writes them to the shard as values, so
    -- the shards must take decided_by and decided_at from the curator, the coordinator not: the
    -- grant goes to the shards (DDL propagation), the revoke stays on the coordinator.
    EXECUTE 'GRANT INSERT (decided_by, decided_at) ON kgrag.curation TO kgrag_curator';
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
    EXECUTE 'REVOKE INSERT (decided_by, decided_at) ON kgrag.curation FROM kgrag_curator';
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', COALESCE(propagation, 'on'), true);
END
$$;
COMMENT ON FUNCTION kgrag_private.grant_curation_on_shards() IS
'Private. On a Citus coordinator, lets the shards of kgrag.curation take the rows a curator''s decision writes (Citus evaluates the defaults decided_by and decided_at on the coordinator and writes them as values) while the coordinator still refuses a curator who names them: granted on the shards, revoked on the coordinator alone. kgrag.distribute() calls it (run it again after moving or splitting shards), and so does revision 0034 on a schema distributed before. Returns nothing.';

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
    -- the curator's one write, as Citus sends it to the shards (kgrag_private.grant_curation_on_shards)
    IF NOT dry_run THEN
        PERFORM kgrag_private.grant_curation_on_shards();
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
'Returns, per kgrag table in foreign-key order, (table_name, kind, colocate_with), and on a Citus coordinator makes it so (and lets the shards of kgrag.curation take a curator''s decisions as Citus writes them; call it again after moving or splitting shards): settings and router_rule become reference tables (copied to every node), every other table is distributed by tenant_id, co-located with kgrag.document, but for the two logs (answer_log, query_log: written as kgrag_logger, they form a co-location group of their own, so that a transaction may search again after a search logged). Rows already there are moved to the shards. The owners of the SECURITY DEFINER helpers (kgrag_probe, kgrag_logger) get LOGIN, without a password, as Citus logs in to the workers as them (docs/scale-out.md: allow them from the coordinator only). Tables already distributed are left as they are, so a second call changes nothing. Without Citus it raises SQLSTATE 0A000 saying so; dry_run => true only lists. For the schema owner.';

-- 0019_citus down, amended: the released file, after bringing a distributed schema back onto the
-- coordinator. Below 0019 the schema cannot run on Citus (its tenant checks are subqueries in the
-- policies, which Citus refuses, and the released file's ALTER TABLE ... DROP CONSTRAINT, ADD
-- CONSTRAINT is one Citus runs on no distributed table): where kgrag.document is distributed,
-- every kgrag table becomes a local table of the coordinator again, its rows with it
-- (undistribute_table, the tables joined by foreign keys at once), and the schema goes down from
-- there as on a single node (every table's rows counted before and after: a difference undoes the
-- run). Nothing else differs from the released file; without Citus, or with the tables not
-- distributed, nothing differs at all.

DO $$
DECLARE
    t regclass;
    name text;
    copy text;
    indexes text[];
    r record;
    forced text[];
    counted jsonb;
    t_rows bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RETURN;  -- (and pg_dist_partition does not exist: the statements below would not plan)
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition AS p
                    WHERE p.logicalrelid = 'kgrag.document'::pg_catalog.regclass) THEN
        RETURN;
    END IF;
    PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);
    -- The rows move by INSERT ... SELECT as the role running the migration, which acts for tenant
    -- '*': under forced row-level security it would read that tenant's rows alone. The owner's
    -- tables are read whole while they move (NO FORCE: a table's owner then bypasses its
    -- policies), forced again after, and every table must hold as many rows after as before.
    forced := ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class AS c
                     WHERE c.relnamespace = 'kgrag'::pg_catalog.regnamespace AND c.relkind = 'r'
                       AND c.relforcerowsecurity ORDER BY 1);
    FOR i IN 1 .. COALESCE(pg_catalog.array_length(forced, 1), 0) LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I NO FORCE ROW LEVEL SECURITY', forced[i]);
    END LOOP;
    counted := '{}';
    FOR r IN SELECT c.relname::text AS rel FROM pg_catalog.pg_class AS c
              WHERE c.relnamespace = 'kgrag'::pg_catalog.regnamespace AND c.relkind = 'r' ORDER BY 1 LOOP
        EXECUTE pg_catalog.format('SELECT pg_catalog.jsonb_set(%L::jsonb, ARRAY[%L], pg_catalog.to_jsonb(count(*))) FROM kgrag.%I',
                                  counted, r.rel, r.rel) INTO counted;
    END LOOP;
    -- Citus undistributes no table that has, or had, an identity column (a dropped one counts:
    -- kgrag.query_log's first log_id, and no foreign key joins it): such a table is copied into a
    -- local one made like it (columns, defaults, checks, comments), with its rows, policies, row
    -- security, grants and owner, the distributed one dropped, its name, keys and indexes given to
    -- the copy
    FOR t IN SELECT DISTINCT p.logicalrelid
               FROM pg_catalog.pg_dist_partition AS p
               JOIN pg_catalog.pg_class AS c ON c.oid = p.logicalrelid
               JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND a.attidentity <> ''
              WHERE c.relnamespace = 'kgrag'::pg_catalog.regnamespace
              ORDER BY 1 LOOP
        name := (SELECT c.relname FROM pg_catalog.pg_class AS c WHERE c.oid = t);
        copy := pg_catalog.format('kgrag.%I', name || '_local');
        EXECUTE pg_catalog.format('CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING COMMENTS'
                                  ' INCLUDING STORAGE INCLUDING GENERATED)', copy, t);
        EXECUTE pg_catalog.format('INSERT INTO %s SELECT * FROM %s', copy, t);
        FOR r IN SELECT y.polname, y.polpermissive, y.polcmd,
                        pg_catalog.pg_get_expr(y.polqual, y.polrelid) AS qual,
                        pg_catalog.pg_get_expr(y.polwithcheck, y.polrelid) AS checks,
                        (SELECT pg_catalog.string_agg(CASE WHEN o = 0 THEN 'PUBLIC' ELSE o::pg_catalog.regrole::text END, ', ')
                           FROM pg_catalog.unnest(y.polroles) AS o) AS roles
                   FROM pg_catalog.pg_policy AS y WHERE y.polrelid = t ORDER BY y.polname LOOP
            EXECUTE pg_catalog.format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s', r.polname, copy,
                CASE WHEN r.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
                CASE r.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE' WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
                r.roles, COALESCE(' USING (' || r.qual || ')', ''), COALESCE(' WITH CHECK (' || r.checks || ')', ''));
        END LOOP;
        FOR r IN SELECT c.relrowsecurity, c.relforcerowsecurity, c.relowner::pg_catalog.regrole::text AS owner,
                        pg_catalog.obj_description(c.oid, 'pg_class') AS comment
                   FROM pg_catalog.pg_class AS c WHERE c.oid = t LOOP
            IF r.relrowsecurity THEN
                EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', copy);
            END IF;
            EXECUTE pg_catalog.format('ALTER TABLE %s OWNER TO %s', copy, r.owner);
            EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', copy, r.comment);
        END LOOP;
        FOR r IN SELECT g.privilege_type, CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::pg_catalog.regrole::text END AS grantee
                   FROM pg_catalog.pg_class AS c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS g
                  WHERE c.oid = t AND g.grantee <> c.relowner ORDER BY 1, 2 LOOP
            EXECUTE pg_catalog.format('GRANT %s ON %s TO %s', r.privilege_type, copy, r.grantee);
        END LOOP;
        FOR r IN SELECT a.attname, g.privilege_type, CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::pg_catalog.regrole::text END AS grantee
                   FROM pg_catalog.pg_attribute AS a CROSS JOIN LATERAL pg_catalog.aclexplode(a.attacl) AS g
                  WHERE a.attrelid = t AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, 2, 3 LOOP
            EXECUTE pg_catalog.format('GRANT %s (%I) ON %s TO %s', r.privilege_type, r.attname, copy, r.grantee);
        END LOOP;
        -- keys and indexes as the dropped table had them, under their names (they name the table)
        indexes := ARRAY(SELECT pg_catalog.format('ALTER TABLE %s ADD CONSTRAINT %I %s', t, k.conname, pg_catalog.pg_get_constraintdef(k.oid))
                           FROM pg_catalog.pg_constraint AS k WHERE k.conrelid = t AND k.contype IN ('p', 'u', 'x') ORDER BY k.conname)
                   || ARRAY(SELECT pg_catalog.pg_get_indexdef(i.indexrelid)
                              FROM pg_catalog.pg_index AS i
                             WHERE i.indrelid = t
                               AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS k WHERE k.conindid = i.indexrelid)
                             ORDER BY i.indexrelid::pg_catalog.regclass::text);
        EXECUTE pg_catalog.format('DROP TABLE %s', t);
        EXECUTE pg_catalog.format('ALTER TABLE %s RENAME TO %I', copy, name);
        FOR i IN 1 .. COALESCE(pg_catalog.array_length(indexes, 1), 0) LOOP
            EXECUTE indexes[i];
        END LOOP;
    END LOOP;
    -- each table left distributed, with every table its foreign keys join it to
    LOOP
        SELECT p.logicalrelid INTO t
          FROM pg_catalog.pg_dist_partition AS p
          JOIN pg_catalog.pg_class AS c ON c.oid = p.logicalrelid
         WHERE c.relnamespace = 'kgrag'::pg_catalog.regnamespace
         ORDER BY c.relname
         LIMIT 1;
        EXIT WHEN t IS NULL;
        PERFORM pg_catalog.undistribute_table(t, cascade_via_foreign_keys => true);
    END LOOP;
    FOR r IN SELECT c.key AS rel, c.value::bigint AS n FROM pg_catalog.jsonb_each_text(counted) AS c ORDER BY 1 LOOP
        EXECUTE pg_catalog.format('SELECT count(*) FROM kgrag.%I', r.rel) INTO t_rows;
        IF t_rows <> r.n THEN
            RAISE EXCEPTION 'kgrag.% held % rows before it left the workers and % after: nothing was changed', r.rel, r.n, t_rows
                USING ERRCODE = 'XX000';
        END IF;
    END LOOP;
    FOR i IN 1 .. COALESCE(pg_catalog.array_length(forced, 1), 0) LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I FORCE ROW LEVEL SECURITY', forced[i]);
    END LOOP;
END
$$;

-- As released: the checks and constraints as revision 0018 wrote them.

ALTER TABLE kgrag.entity DROP CONSTRAINT entity_tenant_id_answer_chunk_id_fkey,
    ADD CONSTRAINT entity_tenant_id_answer_chunk_id_fkey
        FOREIGN KEY (tenant_id, answer_chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id) ON DELETE SET NULL (answer_chunk_id);
ALTER TABLE kgrag.edge DROP CONSTRAINT edge_tenant_id_evidence_chunk_id_fkey,
    ADD CONSTRAINT edge_tenant_id_evidence_chunk_id_fkey
        FOREIGN KEY (tenant_id, evidence_chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id) ON DELETE SET NULL (evidence_chunk_id);

DO $$
DECLARE
    p record;
    direct constant text := 'kgrag.current_tenant()';
    sub constant text := '(SELECT kgrag.current_tenant())';
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
        IF pg_catalog.strpos(p.qual, direct) > 0 THEN
            EXECUTE pg_catalog.format('ALTER POLICY %I ON %s USING (%s)', p.polname, p.rel, pg_catalog.replace(p.qual, direct, sub));
        END IF;
        IF pg_catalog.strpos(p.checks, direct) > 0 THEN
            EXECUTE pg_catalog.format('ALTER POLICY %I ON %s WITH CHECK (%s)', p.polname, p.rel, pg_catalog.replace(p.checks, direct, sub));
        END IF;
    END LOOP;
END
$$;

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
       AND pg_catalog.current_setting('kgrag.tenant_seal', true) = kgrag_private.tenant_seal(previous) THEN
        RAISE EXCEPTION 'this transaction already acts for tenant %', pg_catalog.quote_literal(previous)
            USING ERRCODE = '25001', HINT = 'A transaction has one tenant: use another transaction for another tenant.';
    END IF;
    IF NOT kgrag_private.may_use_tenant(tenant) THEN
        RAISE EXCEPTION 'role % may not act for tenant %', session_user, pg_catalog.quote_literal(tenant)
            USING ERRCODE = '42501',
                  HINT = CASE WHEN tenant = '*' THEN 'The defaults tenant ''*'' is the schema owner''s alone.'
                              ELSE 'The schema owner grants it: SELECT kgrag.grant_tenant(''role'', ''tenant'');' END;
    END IF;
    PERFORM pg_catalog.set_config('kgrag.tenant', tenant, true);
    PERFORM pg_catalog.set_config('kgrag.tenant_seal', kgrag_private.tenant_seal(tenant), true);
    RETURN tenant;
END
$$;
COMMENT ON FUNCTION kgrag.use_tenant(text) IS
'Names the tenant of the current transaction and returns it: SELECT kgrag.use_tenant(''acme''); at the start of every transaction (the setting ends with it). Refuses (42501) a tenant the session''s role may not use, and (25001) a second, different tenant in the same transaction.';

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
    IF pg_catalog.current_setting('kgrag.tenant_seal', true) IS DISTINCT FROM kgrag_private.tenant_seal(t) THEN
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
'Returns the tenant of the current transaction, as kgrag.use_tenant named it. Fails closed, so every row-level security policy does: SQLSTATE 28000 when no tenant is set or it was not set for this transaction (a session-level setting does not count), 42501 when the session''s role may not act for it (kgrag.grant_tenant).';

DROP FUNCTION kgrag_private.sealed(text, text);

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
    -- Role lookups only, no query: this runs once per statement that reads a kgrag table.
    one := pg_catalog.to_regrole(kgrag_private.tenant_role(tenant));
    every := pg_catalog.to_regrole(kgrag_private.tenant_role('*'));
    RETURN (one IS NOT NULL AND pg_catalog.pg_has_role(session_user, one, 'MEMBER'))
        OR (every IS NOT NULL AND pg_catalog.pg_has_role(session_user, every, 'MEMBER'));
END
$$;
COMMENT ON FUNCTION kgrag_private.may_use_tenant(text) IS
'Private. Returns whether the session''s login role may act for the tenant: it owns the schema (CREATE on it), or it is a member of the tenant''s role or of the every-tenant role (kgrag.grant_tenant).';
DROP FUNCTION kgrag_private.serving_another_node();

CREATE OR REPLACE FUNCTION kgrag_private.tenant_seal(tenant text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pg_catalog.pg_backend_pid() || '/' || EXTRACT(epoch FROM pg_catalog.transaction_timestamp()) || '/' || tenant;
END
$$;
COMMENT ON FUNCTION kgrag_private.tenant_seal(text) IS
'Private. Returns the seal kgrag.use_tenant leaves beside kgrag.tenant: this backend, this transaction''s start and the tenant. A kgrag.tenant without the seal of the current transaction was not set for it.';

CREATE OR REPLACE FUNCTION kgrag_private.tenant_role(tenant text) RETURNS text
LANGUAGE plpgsql STABLE STRICT SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- the schema's oid too: a database dropped and made again under its name does not inherit the grants
    RETURN 'kgrag_t_' || pg_catalog.left(pg_catalog.md5(pg_catalog.current_database() || '/'
                                                        || 'kgrag'::pg_catalog.regnamespace::pg_catalog.oid || '/' || tenant), 24);
END
$$;
COMMENT ON FUNCTION kgrag_private.tenant_role(text) IS
'Private. Returns the name of the role that stands for a tenant of this database (tenant ''*'': every tenant): kgrag_t_ and 24 hex digits of md5(database/schema oid/tenant), so a schema installed again starts with no grants. kgrag.grant_tenant creates it and makes the grantee a member; a session may act for the tenant when its login role is a member of it.';

DROP FUNCTION kgrag_private.installation();

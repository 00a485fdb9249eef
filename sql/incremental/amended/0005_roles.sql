-- Amended 0005_roles (replaces sql/incremental/0005_roles.sql for databases installed from now on;
-- the released file stays as it ran). The one change: the owner is granted kgrag_probe only when it
-- cannot already SET ROLE to it, so a second database's owner installs with a membership an
-- administrator granted. The schema it leaves is the released file's.
--
-- 0005_roles: the application roles. kgrag_writer ingests, kgrag_reader searches; neither owns
-- anything, neither is a superuser or may bypass row-level security, neither can log in: grant
-- them to your application's login roles (GRANT kgrag_reader TO app;). The role that runs the
-- migrations owns the schema.
--
-- Roles belong to the whole cluster: they are created when missing (which needs CREATEROLE;
-- without it the installer must create them first) and survive a downgrade.

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['kgrag_reader', 'kgrag_writer'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', r);
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'role % does not exist and this role may not create it', r
                    USING HINT = pg_catalog.format('Ask an administrator to run: CREATE ROLE %I NOLOGIN;', r);
            END;
        END IF;
    END LOOP;
END
$$;

GRANT USAGE ON SCHEMA kgrag TO kgrag_reader, kgrag_writer;
-- search: read everything of the tenant, log the query
GRANT SELECT ON ALL TABLES IN SCHEMA kgrag TO kgrag_reader;
GRANT INSERT ON kgrag.query_log TO kgrag_reader;
-- ingestion: write the graph of the tenant (its own settings rows included)
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA kgrag TO kgrag_writer;

-- kgrag_probe: the owner of the two index probes (kgrag._fts_probe, kgrag._trigram_probe), and
-- nothing else. Row-level security only lets a leakproof condition reach an index, and neither
-- full-text matching (@@) nor array overlap (&&) is leakproof: under the tenant policy the GIN
-- indexes on kgrag.chunk.tsv and kgrag.alias.trigrams would never be used, and every search
-- would read all of the tenant's chunks. The probes run as kgrag_probe, for which a SELECT-only
-- policy on those two tables is true (so the index can be used), and filter on
-- kgrag.current_tenant() themselves, failing closed like the policies. kgrag_probe cannot log in,
-- is granted to nobody, reads two tables and writes none.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'kgrag_probe') THEN
        BEGIN
            CREATE ROLE kgrag_probe NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'role kgrag_probe does not exist and this role may not create it'
                USING HINT = 'Ask an administrator to run: CREATE ROLE kgrag_probe NOLOGIN;';
        END;
    END IF;
    -- the installer makes the probes kgrag_probe's (ALTER FUNCTION ... OWNER TO needs membership);
    -- an owner that is a member already (another database's owner, granted by an administrator)
    -- needs no grant, and could not give one without ADMIN OPTION
    IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = CURRENT_USER)
       AND NOT (pg_catalog.pg_has_role(CURRENT_USER, 'kgrag_probe', 'SET')
                AND pg_catalog.pg_has_role(CURRENT_USER, 'kgrag_probe', 'USAGE')) THEN
        EXECUTE pg_catalog.format('GRANT kgrag_probe TO %I', CURRENT_USER);
    END IF;
END
$$;
GRANT USAGE ON SCHEMA kgrag TO kgrag_probe;
GRANT SELECT ON kgrag.chunk, kgrag.alias TO kgrag_probe;
CREATE POLICY probe_read ON kgrag.chunk FOR SELECT TO kgrag_probe USING (true);
CREATE POLICY probe_read ON kgrag.alias FOR SELECT TO kgrag_probe USING (true);

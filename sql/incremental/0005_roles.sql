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

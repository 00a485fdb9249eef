-- 0042_audiences down: no audiences; every document of a tenant is everyone's again (a document
-- that was for an audience keeps its chunks and stays out of the graph until it is ingested again).
DO $$
DECLARE
    t text;
BEGIN
    EXECUTE 'GRANT SELECT ON kgrag.llm_cache TO kgrag_reader, kgrag_writer, kgrag_curator';
    EXECUTE 'DROP POLICY audience ON kgrag.query_log';
    EXECUTE 'ALTER TABLE kgrag.query_log DROP COLUMN groups';
    FOREACH t IN ARRAY ARRAY['document', 'chunk'] LOOP
        EXECUTE pg_catalog.format('DROP POLICY audience ON kgrag.%I', t);
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I DROP COLUMN access', t);
    END LOOP;
    EXECUTE 'ALTER TABLE kgrag.document DROP COLUMN extraction';
    EXECUTE 'ALTER TABLE kgrag_private.api_key DROP COLUMN groups';
    EXECUTE 'DROP TABLE kgrag_private.audience';
    EXECUTE 'DROP FUNCTION kgrag_private.holds_all(text[], text[])';
    EXECUTE 'DROP FUNCTION kgrag_private.sees(text[], text[])';
    EXECUTE 'DROP FUNCTION kgrag.current_groups()';
END
$$;

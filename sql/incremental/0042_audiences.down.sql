-- 0042_audiences down: no audiences; every document of a tenant is everyone's again (a document
-- that was for an audience keeps its chunks and stays out of the graph until it is ingested again).
DO $$
DECLARE
    t text;
BEGIN
    EXECUTE 'GRANT SELECT ON kgrag.llm_cache TO kgrag_reader, kgrag_writer, kgrag_curator';
    EXECUTE 'GRANT UPDATE ON kgrag.llm_cache TO kgrag_writer';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.curation_ended USING (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.curation_ended DROP COLUMN access';
    EXECUTE $q$ALTER POLICY tenant_write ON kgrag.settings USING (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE $q$CREATE POLICY owner_rows_update ON kgrag.settings AS RESTRICTIVE FOR UPDATE
        USING (kgrag_private.setting_writable(tenant_id, key))$q$;
    EXECUTE $q$CREATE POLICY owner_rows_delete ON kgrag.settings AS RESTRICTIVE FOR DELETE
        USING (kgrag_private.setting_writable(tenant_id, key))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.query_log USING (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.query_log DROP COLUMN groups';
    FOREACH t IN ARRAY ARRAY['document', 'chunk', 'ingest_failure'] LOOP
        EXECUTE pg_catalog.format($q$ALTER POLICY tenant_isolation ON kgrag.%I
            USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$, t);
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I DROP COLUMN access', t);
    END LOOP;
    EXECUTE 'ALTER TABLE kgrag.document DROP COLUMN extraction';
    EXECUTE 'ALTER TABLE kgrag_private.api_key DROP COLUMN groups';
    EXECUTE 'DROP TABLE kgrag_private.audience';
    EXECUTE 'DROP FUNCTION kgrag_private.holds_all(text[], text[])';
    EXECUTE 'DROP FUNCTION kgrag_private.sees(text[], text[])';
    EXECUTE 'DROP FUNCTION kgrag.current_groups()';
    EXECUTE 'DROP FUNCTION kgrag_private.groups_for(text)';
    EXECUTE 'DROP FUNCTION kgrag_private.may_see(text, text[])';
    EXECUTE 'DROP FUNCTION kgrag_private.group_role(text, text)';
END
$$;

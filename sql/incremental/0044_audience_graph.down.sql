-- 0044_audience_graph down: the tenant policies of the graph's tables as before; the rows of the
-- audiences' graphs go (each tenant's, the policies set aside while they are deleted), so nothing
-- an audience said is read by everyone. Their documents keep their extractions.
DO $$
BEGIN
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.entity
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.entity NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.entity DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.entity WHERE pg_catalog.strpos(entity_id, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.entity ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.entity FORCE ROW LEVEL SECURITY';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.alias
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.alias NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.alias DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.alias WHERE pg_catalog.strpos(entity_id, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.alias ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.alias FORCE ROW LEVEL SECURITY';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.alias_source
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.alias_source NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.alias_source DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.alias_source WHERE pg_catalog.strpos(entity_id, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.alias_source ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.alias_source FORCE ROW LEVEL SECURITY';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.entity_source
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.entity_source NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.entity_source DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.entity_source WHERE pg_catalog.strpos(entity_id, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.entity_source ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.entity_source FORCE ROW LEVEL SECURITY';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.mention
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.mention NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.mention DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.mention WHERE pg_catalog.strpos(entity_id, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.mention ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.mention FORCE ROW LEVEL SECURITY';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.edge
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.edge NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.edge DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.edge WHERE pg_catalog.strpos(src, '~') > 0 OR pg_catalog.strpos(dst, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.edge ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.edge FORCE ROW LEVEL SECURITY';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.relation_evidence
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.relation_evidence NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.relation_evidence DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.relation_evidence WHERE pg_catalog.strpos(src, '~') > 0 OR pg_catalog.strpos(dst, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.relation_evidence ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.relation_evidence FORCE ROW LEVEL SECURITY';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.namesake_context
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.namesake_context NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.namesake_context DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.namesake_context WHERE pg_catalog.strpos(name_key, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.namesake_context ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.namesake_context FORCE ROW LEVEL SECURITY';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.community_member
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.community_member NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.community_member DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.community_member WHERE pg_catalog.strpos(entity_id, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.community_member ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.community_member FORCE ROW LEVEL SECURITY';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.community
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.community NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.community DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.community WHERE pg_catalog.strpos(community_id, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.community ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.community FORCE ROW LEVEL SECURITY';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.community_report
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.community_report NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.community_report DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.community_report WHERE pg_catalog.strpos(community_id, '~') > 0$q$;
    EXECUTE 'ALTER TABLE kgrag.community_report ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.community_report FORCE ROW LEVEL SECURITY';
    EXECUTE 'DROP POLICY probe_read ON kgrag.entity';
    EXECUTE 'REVOKE SELECT (tenant_id, entity_id, audience, quantized, embedding) ON kgrag.entity FROM kgrag_probe';
    EXECUTE 'DROP INDEX kgrag.entity_audience_idx';
    EXECUTE 'ALTER TABLE kgrag.entity DROP COLUMN audience';
    EXECUTE 'DROP FUNCTION kgrag_private.id_access(text)';
END
$$;

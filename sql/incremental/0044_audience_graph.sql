-- 0044_audience_graph: what a document for an audience says is a graph for the audience's holders.
--
-- Since 0042 a document for groups (kgrag.document.access) gave the shared graph nothing: its
-- holders found its chunks, never its people, relations or walks. Its entities are now its
-- audience's own: the id of each is the shared one marked with the audience ('~' and the groups,
-- "person:maria silva~hr"; a namesake's mark follows, "person:maria silva~hr@1f3a9c2e"), so a
-- document for an audience never changes a row everyone reads (no name, description, alias,
-- weight, degree, quote or answer of the shared graph says anything it alone says), and every row
-- derived from it (entity, alias, source, mention, edge, evidence, namesake context, membership,
-- and the communities detected on the audience's graph alone, with their reports) carries its
-- audience in its ids. The tenant policy of each of those tables reads it there
-- (kgrag_private.id_access, kept: a policy calls it) and shows a marked row only to a session that
-- sees its audience (kgrag_private.may_see, as for chunks), and lets a marked row be written only
-- by a session holding every group of the mark (as kgrag.lexeme_stats: a writer of hr does not
-- write into the graph of "finance,hr", which finance's holders read); an unmarked row costs one
-- strpos.
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    -- first created here: the policies call it (body: sql/idempotent/002_tenancy.kept.sql)
    EXECUTE $q$
CREATE FUNCTION kgrag_private.id_access(id text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$
    SELECT CASE WHEN pg_catalog.strpos(id, '~') = 0 THEN NULL
                ELSE pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(id, '~', 2), '@', 1), ',') END
$body$
$q$;
    EXECUTE 'GRANT EXECUTE ON FUNCTION kgrag_private.id_access(text) TO kgrag_reader, kgrag_writer, kgrag_curator, kgrag_probe, kgrag_logger';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.entity
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(entity_id))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(entity_id), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.alias
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(entity_id))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(entity_id), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.alias_source
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(entity_id))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(entity_id), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.entity_source
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(entity_id))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(entity_id), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.mention
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(entity_id))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(entity_id), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.edge
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(src, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(src))) AND (pg_catalog.strpos(dst, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(dst))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(src, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(src), kgrag_private.groups_for(tenant_id))) AND (pg_catalog.strpos(dst, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(dst), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.relation_evidence
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(src, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(src))) AND (pg_catalog.strpos(dst, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(dst))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(src, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(src), kgrag_private.groups_for(tenant_id))) AND (pg_catalog.strpos(dst, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(dst), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.namesake_context
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(name_key, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(name_key))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(name_key, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(name_key), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.community_member
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(entity_id))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(entity_id), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.community
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(community_id, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(community_id))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(community_id, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(community_id), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.community_report
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(community_id, '~') = 0 OR kgrag_private.may_see(tenant_id, kgrag_private.id_access(community_id))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(community_id, '~') = 0 OR kgrag_private.holds_all(kgrag_private.id_access(community_id), kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$COMMENT ON FUNCTION kgrag_private.id_access(text) IS
'Private. Returns the groups an id of the graph is for (an entity''s, or a name key: "person:maria silva~hr@1f3a9c2e" -> {hr}), NULL for an id of the shared graph (no ''~''). The tenant policies of the graph''s tables call it for a marked row.'$q$;
END
$$;

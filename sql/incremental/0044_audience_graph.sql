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
-- audience in its ids. The tenant policy of each of those tables reads it there (with built-ins,
-- as kgrag_private.id_access reads it: not a function call per row) and shows a marked row
-- only to a session that sees its audience (kgrag_private.may_see, as for chunks; an edge's ends
-- are of one audience, checked once), and lets it write only such rows (a writer writes the rows
-- of the graphs it sees, as it writes chunks); an unmarked row costs a strpos. kgrag.entity.audience
-- (stored, indexed with the entity's id and quantized vector, as kgrag.chunk.audience) lets a
-- session that sees few entities rank its own without walking the vector index through the others.
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    -- first created here: community ids store its result (body: sql/idempotent/002_tenancy.kept.sql)
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
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.alias
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.alias_source
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.entity_source
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.mention
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.edge
        USING (tenant_id = kgrag.current_tenant() AND ((pg_catalog.strpos(src, '~') = 0 AND pg_catalog.strpos(dst, '~') = 0) OR (kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(NULLIF(pg_catalog.split_part(pg_catalog.split_part(src, '~', 2), '@', 1), ''), ',')) AND (pg_catalog.split_part(pg_catalog.split_part(src, '~', 2), '@', 1) = pg_catalog.split_part(pg_catalog.split_part(dst, '~', 2), '@', 1) OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(NULLIF(pg_catalog.split_part(pg_catalog.split_part(dst, '~', 2), '@', 1), ''), ','))))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND ((pg_catalog.strpos(src, '~') = 0 AND pg_catalog.strpos(dst, '~') = 0) OR (kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(NULLIF(pg_catalog.split_part(pg_catalog.split_part(src, '~', 2), '@', 1), ''), ',')) AND (pg_catalog.split_part(pg_catalog.split_part(src, '~', 2), '@', 1) = pg_catalog.split_part(pg_catalog.split_part(dst, '~', 2), '@', 1) OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(NULLIF(pg_catalog.split_part(pg_catalog.split_part(dst, '~', 2), '@', 1), ''), ','))))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.relation_evidence
        USING (tenant_id = kgrag.current_tenant() AND ((pg_catalog.strpos(src, '~') = 0 AND pg_catalog.strpos(dst, '~') = 0) OR (kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(NULLIF(pg_catalog.split_part(pg_catalog.split_part(src, '~', 2), '@', 1), ''), ',')) AND (pg_catalog.split_part(pg_catalog.split_part(src, '~', 2), '@', 1) = pg_catalog.split_part(pg_catalog.split_part(dst, '~', 2), '@', 1) OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(NULLIF(pg_catalog.split_part(pg_catalog.split_part(dst, '~', 2), '@', 1), ''), ','))))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND ((pg_catalog.strpos(src, '~') = 0 AND pg_catalog.strpos(dst, '~') = 0) OR (kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(NULLIF(pg_catalog.split_part(pg_catalog.split_part(src, '~', 2), '@', 1), ''), ',')) AND (pg_catalog.split_part(pg_catalog.split_part(src, '~', 2), '@', 1) = pg_catalog.split_part(pg_catalog.split_part(dst, '~', 2), '@', 1) OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(NULLIF(pg_catalog.split_part(pg_catalog.split_part(dst, '~', 2), '@', 1), ''), ','))))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.namesake_context
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(name_key, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(name_key, '~', 2), '@', 1), ','))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(name_key, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(name_key, '~', 2), '@', 1), ','))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.community_member
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(entity_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), ','))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.community
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(community_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(community_id, '~', 2), '@', 1), ','))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(community_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(community_id, '~', 2), '@', 1), ','))))$q$;
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.community_report
        USING (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(community_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(community_id, '~', 2), '@', 1), ','))))
        WITH CHECK (tenant_id = kgrag.current_tenant() AND (pg_catalog.strpos(community_id, '~') = 0 OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(pg_catalog.split_part(pg_catalog.split_part(community_id, '~', 2), '@', 1), ','))))$q$;
    -- an entity's audience as one text (NULL: the shared graph's), stored and indexed as a chunk's:
    -- a session that sees few of the entities ranks its own by the index alone
    -- (kgrag_private.audience_nearest), not the vector index through every other audience's
    EXECUTE $q$ALTER TABLE kgrag.entity ADD COLUMN audience text GENERATED ALWAYS AS
        (NULLIF(pg_catalog.split_part(pg_catalog.split_part(entity_id, '~', 2), '@', 1), '')) STORED$q$;
    EXECUTE 'CREATE INDEX entity_audience_idx ON kgrag.entity (tenant_id, audience) INCLUDE (entity_id, quantized)';
    EXECUTE $q$COMMENT ON COLUMN kgrag.entity.audience IS
'The audience whose graph the entity is of, as its id is marked (the groups, as kgrag.chunk.audience writes them; NULL: the shared graph''s): entity_audience_idx lists a tenant''s entities by audience.'$q$;
    -- the probe (kgrag_private.audience_nearest) reads an entity's id, audience and vectors, nothing
    -- of its name or what the documents say of it
    EXECUTE 'GRANT SELECT (tenant_id, entity_id, audience, quantized, embedding) ON kgrag.entity TO kgrag_probe';
    EXECUTE 'CREATE POLICY probe_read ON kgrag.entity FOR SELECT TO kgrag_probe USING (true)';
    EXECUTE $q$COMMENT ON FUNCTION kgrag_private.id_access(text) IS
'Private. Returns the groups an id of the graph is for (an entity''s, or a name key: "person:maria silva~hr@1f3a9c2e" -> {hr}), NULL for an id of the shared graph (no ''~''). The tenant policies of the graph''s tables read the mark as it does, with built-ins (a call per row costs more); kgrag_private.replace_communities marks a community''s id with its result.'$q$;
END
$$;

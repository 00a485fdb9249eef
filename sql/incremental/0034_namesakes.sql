-- 0034_namesakes: two people of one name are two entities unless something joins them.
--
-- - kgrag.entity_source.name_key: for an entity of a type the setting namesake_types lists
--   (Person by default) given without a verified identifier, the key its name alone would give
--   (kgrag.entity_key). Ingestion resolves the documents that share a name key into entities by
--   what they share besides the name (kgrag_private.resolve_namesakes): namesakes stay apart
--   unless a neighbour, or a curator's decision, joins them. The people stored before note theirs
--   here; they are resolved at the next change of a document that gives their name.
-- - kgrag.curation takes three more kinds: merge_entities (two namesakes are one), split_entity
--   (what one document says under a name is its own entity) and correct_relation (a stated
--   relation is of another type).
-- - Settings namesake_types (["Person"]) and namesake_shared_neighbours (1).
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'ALTER TABLE kgrag.entity_source ADD COLUMN name_key text';
    -- the people stored so far note their name key, every tenant's (row-level security lifted for
    -- the owner meanwhile): the next change of a document of a name resolves all of its documents
    EXECUTE 'ALTER TABLE kgrag.entity_source NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.entity NO FORCE ROW LEVEL SECURITY';
    EXECUTE $q$UPDATE kgrag.entity_source AS s SET name_key = s.entity_id
                 FROM kgrag.entity AS e
                WHERE e.tenant_id = s.tenant_id AND e.entity_id = s.entity_id
                  AND kgrag.canonical_name(e.type) = 'person'$q$;
    EXECUTE 'ALTER TABLE kgrag.entity FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.entity_source FORCE ROW LEVEL SECURITY';
    EXECUTE 'CREATE INDEX entity_source_name_key_idx ON kgrag.entity_source (tenant_id, name_key) WHERE name_key IS NOT NULL';
    EXECUTE $q$COMMENT ON COLUMN kgrag.entity_source.name_key IS 'For an entity of a type of the setting namesake_types given without an identifier: the key of its name alone (kgrag.entity_key). The documents of one name key are resolved into entities by what they share besides the name (kgrag_private.resolve_namesakes).'$q$;
    EXECUTE 'ALTER TABLE kgrag.curation DROP CONSTRAINT curation_kind_check';
    EXECUTE $q$ALTER TABLE kgrag.curation ADD CONSTRAINT curation_kind_check
        CHECK (kind IN ('reject_relation', 'rename_entity', 'approve', 'merge_entities', 'split_entity',
                        'correct_relation'))$q$;
    INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
        ('*', 'namesake_types', '["Person"]', 'Entity types never joined across documents on the name alone: the documents that give one name without an identifier are one entity only where they share a neighbour (namesake_shared_neighbours) or a curator merged them (kgrag.merge_entities).'),
        ('*', 'namesake_shared_neighbours', '1', 'How many neighbours (other entities cited in the same chunks) two documents'' namesakes must share to be one entity.');
END
$$;

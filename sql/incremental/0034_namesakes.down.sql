-- 0034_namesakes, down: the name keys, the namesake settings and the decisions of the two new kinds
-- go (entities split apart stay so until their documents are ingested again).
DO $$
BEGIN
    DELETE FROM kgrag.settings WHERE key IN ('namesake_types', 'namesake_shared_neighbours');
    -- every tenant's rows: row-level security lifted for the owner meanwhile
    EXECUTE 'ALTER TABLE kgrag.curation NO FORCE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.curation WHERE kind IN ('merge_entities', 'split_entity', 'correct_relation')$q$;
    EXECUTE 'ALTER TABLE kgrag.curation FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.curation DROP CONSTRAINT curation_kind_check';
    EXECUTE $q$ALTER TABLE kgrag.curation ADD CONSTRAINT curation_kind_check
        CHECK (kind IN ('reject_relation', 'rename_entity', 'approve'))$q$;
    EXECUTE 'DROP INDEX kgrag.entity_source_name_key_idx';
    EXECUTE 'DROP TABLE kgrag.set_aside';
    EXECUTE 'DROP TABLE kgrag.namesake_context';
    EXECUTE 'ALTER TABLE kgrag.entity_source DROP COLUMN name_key';
END
$$;

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
-- - On Citus, the shards of kgrag.curation take a curator's decision as Citus writes it (with who
--   and when as values); the coordinator still refuses a curator who names them.
-- - kgrag.namesake_context: the neighbours each document gives a namesake, kept so that a batch
--   reads the other documents' instead of computing them again.
-- - kgrag.set_aside: what an extractor found in a chunk and did not take (a relation or an entity
--   of a type outside the ontology), for the review queue; it goes with its chunk.
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
    propagation text;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.alias''::regclass)'
           INTO distributed;
    END IF;
    EXECUTE $q$
CREATE TABLE kgrag.set_aside (
    tenant_id text NOT NULL,
    chunk_id  text NOT NULL,
    what      text NOT NULL CHECK (length(what) BETWEEN 1 AND 200),  -- a key: 800 bytes at most
    reason    text NOT NULL,
    quote     text NOT NULL DEFAULT '',
    extractor text NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, chunk_id, what),
    FOREIGN KEY (tenant_id, chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id) ON DELETE CASCADE
)$q$;
    IF distributed THEN  -- a new table of the graph goes where kgrag.alias is (kgrag.distribute())
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.set_aside', 'tenant_id', colocate_with => 'kgrag.alias')$q$;
        -- Citus writes a curator's decision to the shard with decided_by and decided_at as values
        -- (the defaults, evaluated on the coordinator): the shards take them from the curator, the
        -- coordinator still not (as kgrag_private.grant_curation_on_shards does)
        propagation := pg_catalog.current_setting('citus.enable_ddl_propagation', true);
        EXECUTE 'GRANT INSERT (decided_by, decided_at) ON kgrag.curation TO kgrag_curator';
        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
        EXECUTE 'REVOKE INSERT (decided_by, decided_at) ON kgrag.curation FROM kgrag_curator';
        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', COALESCE(propagation, 'on'), true);
    ELSE
        EXECUTE 'ALTER TABLE kgrag.set_aside ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    EXECUTE $q$COMMENT ON TABLE kgrag.set_aside IS 'What an extractor found in a chunk and did not take, for a person to check (kgrag.review_queue, item outside_ontology): a relation or an entity of a type outside the ontology, with why and the quote. Written with the chunk, gone with it.'$q$;
    EXECUTE 'ALTER TABLE kgrag.set_aside ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.set_aside FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.set_aside
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'GRANT SELECT ON kgrag.set_aside TO kgrag_reader, kgrag_curator';
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.set_aside TO kgrag_writer';
    EXECUTE $q$
CREATE TABLE kgrag.namesake_context (
    tenant_id text NOT NULL,
    name_key  text NOT NULL,
    doc_id    text NOT NULL,
    token     text NOT NULL,
    PRIMARY KEY (tenant_id, name_key, doc_id, token),
    FOREIGN KEY (tenant_id, doc_id) REFERENCES kgrag.document (tenant_id, doc_id) ON DELETE CASCADE
)$q$;
    IF distributed THEN
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.namesake_context', 'tenant_id', colocate_with => 'kgrag.alias')$q$;
    ELSE
        EXECUTE 'ALTER TABLE kgrag.namesake_context ALTER COLUMN tenant_id SET STATISTICS 1';
    END IF;
    EXECUTE 'CREATE INDEX namesake_context_doc_idx ON kgrag.namesake_context (tenant_id, doc_id)';
    EXECUTE $q$COMMENT ON TABLE kgrag.namesake_context IS 'What each document gives a namesake besides its name: the neighbours of the name key there (a namesake neighbour by its name key, another by its entity id; '''' alone for none). kgrag_private.resolve_namesakes joins the documents of a name on them; written when the document comes, gone with it.'$q$;
    EXECUTE 'ALTER TABLE kgrag.namesake_context ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.namesake_context FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.namesake_context
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'GRANT SELECT ON kgrag.namesake_context TO kgrag_reader, kgrag_curator';
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.namesake_context TO kgrag_writer';
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

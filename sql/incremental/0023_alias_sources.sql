-- 0023_alias_sources: an entity's names once each; the documents that gave them apart.
--
-- kgrag.alias held a row per name per document that gave it: every document citing an entity
-- gives its name, so a hub's name stood there thousands of times (at 100k chunks, 46,416 rows for
-- 3,379 names in one tenant), each row carrying its canonical, squashed and trigram forms in three
-- indexes and a GIN index. Entity linking read them all (a hub's name: 7,000 index entries), and
-- ingestion wrote them all. Now kgrag.alias holds each name of an entity once (sourced: given by
-- documents, and gone when the last of them goes; not sourced: written by hand, kept until the
-- entity goes), and kgrag.alias_source the documents that gave each name (two btree indexes).
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    distributed boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
                           AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
BEGIN
    IF distributed THEN  -- (nested: the catalog exists only where Citus is installed)
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = ''kgrag.alias''::regclass)'
           INTO distributed;
    END IF;
    EXECUTE $q$
CREATE TABLE kgrag.alias_source (
    tenant_id text NOT NULL,
    entity_id text NOT NULL,
    alias     text NOT NULL,
    doc_id    text NOT NULL CHECK (doc_id <> ''),
    PRIMARY KEY (tenant_id, entity_id, alias, doc_id)
)$q$;
    IF distributed THEN  -- a new table of the graph goes where kgrag.alias is (kgrag.distribute())
        EXECUTE $q$SELECT pg_catalog.create_distributed_table('kgrag.alias_source', 'tenant_id', colocate_with => 'kgrag.alias')$q$;
    END IF;
    EXECUTE 'CREATE INDEX alias_source_doc_idx ON kgrag.alias_source (tenant_id, doc_id)';
    EXECUTE $q$COMMENT ON TABLE kgrag.alias_source IS 'The documents that gave each name of kgrag.alias (sourced): when the last of them goes (kgrag.delete_documents, or a new version that no longer gives it), so does the name.'$q$;
    EXECUTE 'ALTER TABLE kgrag.alias_source ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.alias_source FORCE ROW LEVEL SECURITY';
    EXECUTE $q$CREATE POLICY tenant_isolation ON kgrag.alias_source
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'GRANT SELECT ON kgrag.alias_source TO kgrag_reader';
    EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.alias_source TO kgrag_writer';

    -- the owner moves every tenant's rows once
    EXECUTE 'ALTER TABLE kgrag.alias NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.alias_source NO FORCE ROW LEVEL SECURITY';
    EXECUTE $q$INSERT INTO kgrag.alias_source (tenant_id, entity_id, alias, doc_id)
               SELECT a.tenant_id, a.entity_id, a.alias, a.doc_id FROM kgrag.alias AS a WHERE a.doc_id <> ''$q$;
    EXECUTE 'ALTER TABLE kgrag.alias ADD COLUMN sourced boolean NOT NULL DEFAULT false';
    -- one row per name: the one written by hand ('') where there is one, which stays unsourced
    EXECUTE $q$DELETE FROM kgrag.alias AS a
                WHERE a.doc_id > (SELECT min(b.doc_id) FROM kgrag.alias AS b
                                   WHERE b.tenant_id = a.tenant_id AND b.entity_id = a.entity_id AND b.alias = a.alias)$q$;
    EXECUTE $q$UPDATE kgrag.alias SET sourced = true WHERE doc_id <> ''$q$;
    EXECUTE 'ALTER TABLE kgrag.alias FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.alias_source FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.alias DROP CONSTRAINT alias_pkey';
    EXECUTE 'ALTER TABLE kgrag.alias DROP COLUMN doc_id';  -- and alias_doc_idx with it
    EXECUTE 'ALTER TABLE kgrag.alias ADD PRIMARY KEY (tenant_id, entity_id, alias)';
    EXECUTE $q$ALTER TABLE kgrag.alias_source ADD FOREIGN KEY (tenant_id, entity_id, alias)
               REFERENCES kgrag.alias (tenant_id, entity_id, alias) ON DELETE CASCADE$q$;
    EXECUTE $q$COMMENT ON TABLE kgrag.alias IS 'Names an entity is known by, each once, with their canonical (alias_fold) and squashed (alias_sq) forms and trigrams. sourced: given by documents (kgrag.alias_source lists them; the name goes with the last of them), else written by hand or for the entity itself (kept until the entity goes).'$q$;
    EXECUTE $q$COMMENT ON COLUMN kgrag.alias.sourced IS 'True when documents gave the name (kgrag.alias_source): it goes when the last of them goes. False for a name written by hand, which stays.'$q$;
END
$$;

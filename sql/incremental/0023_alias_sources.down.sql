-- 0023_alias_sources down: a row per name per document again ('' for a name written by hand).
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'ALTER TABLE kgrag.alias_source DROP CONSTRAINT alias_source_tenant_id_entity_id_alias_fkey';
    EXECUTE $q$ALTER TABLE kgrag.alias ADD COLUMN doc_id text NOT NULL DEFAULT ''$q$;
    EXECUTE 'ALTER TABLE kgrag.alias DROP CONSTRAINT alias_pkey';
    EXECUTE 'ALTER TABLE kgrag.alias NO FORCE ROW LEVEL SECURITY';  -- the owner moves every tenant's rows once
    EXECUTE 'ALTER TABLE kgrag.alias_source NO FORCE ROW LEVEL SECURITY';
    EXECUTE $q$INSERT INTO kgrag.alias (tenant_id, entity_id, alias, doc_id, sourced)
               SELECT s.tenant_id, s.entity_id, s.alias, s.doc_id, true FROM kgrag.alias_source AS s$q$;
    EXECUTE $q$DELETE FROM kgrag.alias WHERE doc_id = '' AND sourced$q$;
    EXECUTE 'ALTER TABLE kgrag.alias FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.alias ADD PRIMARY KEY (tenant_id, entity_id, alias, doc_id)';
    EXECUTE $q$CREATE INDEX alias_doc_idx ON kgrag.alias (tenant_id, doc_id) WHERE doc_id <> ''$q$;
    EXECUTE 'ALTER TABLE kgrag.alias DROP COLUMN sourced';
    EXECUTE 'DROP TABLE kgrag.alias_source';
    EXECUTE $q$COMMENT ON TABLE kgrag.alias IS 'Names an entity is known by, with their canonical (alias_fold) and squashed (alias_sq) forms. doc_id is the document that gave the alias ('''' for the entity''s own name and gazetteer entries).'$q$;
END
$$;

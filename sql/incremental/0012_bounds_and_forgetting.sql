-- 0012_bounds_and_forgetting: every caller bounded, and a deleted document forgotten.
--
-- - Limits as settings (tenant '*'): how long a question may be, how many paths a walk may take,
--   the time of a whole search, and what one document may carry (aliases, their length, quotes,
--   titles). Ingestion refuses a document past them, by name, and goes on with the others.
-- - kgrag.entity_source: what each document says of each entity (its spelling, description and
--   answer). An entity's name, description and given answer are derived from what remains, the
--   same way whatever the order the documents came in, and what a deleted document said goes
--   with it (the entity's embedding too, when its text changes).
-- - kgrag.llm_cache remembers the chunk text each extraction was made from, so deleting the last
--   chunk with that text deletes the extraction. Rows cached before this revision cannot be
--   traced to a chunk: they are dropped (they are only a cache; a changed document is extracted again).

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'max_question_chars', '2000',
     'A question longer than this is refused (22023): entity linking, full-text search and the router read every word of it.'),
    ('*', 'max_paths_walked', '500000',
     'A traversal that walks more paths than this is cancelled (57014): the shortest path per node sorts them all.'),
    ('*', 'search_timeout_ms', '10000',
     'A kgrag_search that runs longer than this is cancelled (57014); the walk inside it keeps to the same deadline.'),
    ('*', 'max_aliases_per_entity', '100', 'A document giving an entity more aliases than this is refused.'),
    ('*', 'max_alias_chars', '300', 'A document giving an alias (or an entity name) longer than this is refused.'),
    ('*', 'max_quote_chars', '2000', 'A document giving a relation a quote longer than this is refused.'),
    ('*', 'max_title_chars', '1000', 'A document whose title is longer than this is refused.');

CREATE TABLE kgrag.entity_source (
    tenant_id      text NOT NULL,
    entity_id      text NOT NULL,
    doc_id         text NOT NULL,
    name           text NOT NULL,
    description    text NOT NULL DEFAULT '',
    answer         text,
    answer_chunk_id text,
    PRIMARY KEY (tenant_id, entity_id, doc_id),
    FOREIGN KEY (tenant_id, entity_id) REFERENCES kgrag.entity (tenant_id, entity_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, doc_id) REFERENCES kgrag.document (tenant_id, doc_id) ON DELETE CASCADE
);
COMMENT ON TABLE kgrag.entity_source IS
'What one document says of one entity: its spelling, description and, when the input gave one, its answer with the chunk it stands in. The entity''s own name (the spelling of the first document in doc_id order), description (the longest) and given answer (the first document''s) are derived from these rows, so they depend on the documents there are, not on the order they came in.';
CREATE INDEX entity_source_doc_idx ON kgrag.entity_source (tenant_id, doc_id);
ALTER TABLE kgrag.entity_source ENABLE ROW LEVEL SECURITY;
ALTER TABLE kgrag.entity_source FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON kgrag.entity_source USING (tenant_id = (SELECT kgrag.current_tenant()))
    WITH CHECK (tenant_id = (SELECT kgrag.current_tenant()));
GRANT SELECT ON kgrag.entity_source TO kgrag_reader;
GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.entity_source TO kgrag_writer;

-- What the entities of today say, as the sources of the documents that cite them: every
-- document citing an entity is taken to say its current name and description.
ALTER TABLE kgrag.entity_source NO FORCE ROW LEVEL SECURITY;  -- the owner copies every tenant's rows once
INSERT INTO kgrag.entity_source (tenant_id, entity_id, doc_id, name, description)
SELECT DISTINCT m.tenant_id, m.entity_id, c.doc_id, e.name, e.description
  FROM kgrag.mention AS m
  JOIN kgrag.chunk AS c ON c.tenant_id = m.tenant_id AND c.chunk_id = m.chunk_id
  JOIN kgrag.entity AS e ON e.tenant_id = m.tenant_id AND e.entity_id = m.entity_id;
ALTER TABLE kgrag.entity_source FORCE ROW LEVEL SECURITY;

ALTER TABLE kgrag.llm_cache ADD COLUMN content_hash text;
ALTER TABLE kgrag.llm_cache NO FORCE ROW LEVEL SECURITY;  -- the owner drops every tenant's untraceable rows once
DELETE FROM kgrag.llm_cache;
ALTER TABLE kgrag.llm_cache FORCE ROW LEVEL SECURITY;
ALTER TABLE kgrag.llm_cache ALTER COLUMN content_hash SET NOT NULL;
CREATE INDEX llm_cache_content_idx ON kgrag.llm_cache (tenant_id, content_hash);

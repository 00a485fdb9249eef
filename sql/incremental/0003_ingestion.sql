-- 0003_ingestion: what ingestion keeps besides the graph: failed documents, the LLM extraction
-- cache, and the defaults of chunking, extraction and community detection.

CREATE TABLE kgrag.ingest_failure (
    tenant_id    text NOT NULL,
    doc_id       text NOT NULL,
    content_hash text NOT NULL,
    reason       text NOT NULL,
    failed_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (tenant_id, doc_id)
);
COMMENT ON TABLE kgrag.ingest_failure IS
'Documents whose last ingestion failed (nothing of them was written) and why. A later successful ingestion of the document removes its row.';

CREATE TABLE kgrag.llm_cache (
    tenant_id  text NOT NULL,
    cache_key  text NOT NULL,
    model      text NOT NULL,
    response   jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (tenant_id, cache_key)
);
COMMENT ON TABLE kgrag.llm_cache IS
'Validated LLM extractions keyed by chunk hash + model + prompt version. Only output that passed validation is ever stored here.';

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['ingest_failure', 'llm_cache'] LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE pg_catalog.format(
            'CREATE POLICY tenant_isolation ON kgrag.%I USING (tenant_id = (SELECT kgrag.current_tenant())) '
            'WITH CHECK (tenant_id = (SELECT kgrag.current_tenant()))', t);
    END LOOP;
END
$$;

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'chunk_max_chars', '1200', 'Chunks are cut at paragraph, heading and sentence boundaries into pieces of at most this many characters.'),
    ('*', 'chunk_min_chars', '400', 'Chunks shorter than this are merged with their neighbours when the text allows.'),
    ('*', 'chunk_overlap_chars', '100', 'Characters a chunk repeats from the end of the previous one.'),
    ('*', 'max_document_mb', '5', 'Documents larger than this (MB of UTF-8 text) are rejected with a message.'),
    ('*', 'ontology',
     '{"entity_types": ["Person", "Organization", "Team", "Service", "Infrastructure", "Product", "Contract", "Incident", "Location", "Event", "Concept"],
       "relation_types": ["DEPENDS_ON", "OWNS", "RUNS_ON", "PART_OF", "WORKS_FOR", "MANAGES", "SIGNED", "CAUSED", "AFFECTS", "LOCATED_IN", "RELATED_TO"]}',
     'Entity and relation types the LLM extractor may produce; anything else is rejected.'),
    ('*', 'community_seed', '42', 'Seed of hierarchical Leiden: the same graph always gives the same communities.'),
    ('*', 'community_resolution', '1.0', 'Leiden resolution: higher gives more, smaller communities.'),
    ('*', 'community_max_size', '25', 'Communities larger than this are split again one level down (hierarchical Leiden).'),
    ('*', 'report_evidence_chunks', '5', 'A community report cites this many chunks: those that cite the most members.');

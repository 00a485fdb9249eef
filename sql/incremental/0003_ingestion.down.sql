-- Undo 0003_ingestion.
DROP TABLE kgrag.ingest_failure;
DROP TABLE kgrag.llm_cache;
DELETE FROM kgrag.settings
 WHERE tenant_id = '*'
   AND key IN ('chunk_max_chars', 'chunk_min_chars', 'chunk_overlap_chars', 'max_document_mb', 'ontology',
               'community_seed', 'community_resolution', 'community_max_size', 'report_evidence_chunks');

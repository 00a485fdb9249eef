-- 0008_foreign_key_indexes: an index behind every foreign key.
--
-- Deleting a chunk sets edge.evidence_chunk_id and entity.answer_chunk_id to NULL, and deleting
-- an entity removes its relation_evidence rows as dst: without an index on the referencing
-- columns, each deleted row scanned the whole referencing table (every re-ingested chunk read
-- all of kgrag.edge). Nullable references are indexed where set, which is where the lookups go.

CREATE INDEX edge_evidence_chunk_idx ON kgrag.edge (tenant_id, evidence_chunk_id) WHERE evidence_chunk_id IS NOT NULL;
CREATE INDEX entity_answer_chunk_idx ON kgrag.entity (tenant_id, answer_chunk_id) WHERE answer_chunk_id IS NOT NULL;
CREATE INDEX relation_evidence_dst_idx ON kgrag.relation_evidence (tenant_id, dst);
CREATE INDEX community_parent_idx ON kgrag.community (tenant_id, parent_id) WHERE parent_id IS NOT NULL;

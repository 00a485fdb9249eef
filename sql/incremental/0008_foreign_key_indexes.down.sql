-- 0008_foreign_key_indexes down: the indexes go.

DROP INDEX kgrag.edge_evidence_chunk_idx;
DROP INDEX kgrag.entity_answer_chunk_idx;
DROP INDEX kgrag.relation_evidence_dst_idx;
DROP INDEX kgrag.community_parent_idx;

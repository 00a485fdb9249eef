-- 0010_any_client down.

DROP POLICY probe_read ON kgrag.document;
REVOKE SELECT ON kgrag.document FROM kgrag_probe;
ALTER TABLE kgrag.community_report DROP CONSTRAINT community_report_embedding_check;
ALTER TABLE kgrag.entity DROP CONSTRAINT entity_embedding_check;
ALTER TABLE kgrag.chunk DROP CONSTRAINT chunk_embedding_check;
DROP FUNCTION kgrag.check_embedding(vector);

-- 0010_any_client: what searching from any client, with any vector, needs of the tables.
--
-- - A vector of zero length has no direction: its cosine similarity with anything is NaN, and
--   NaN passes every floor (NaN >= x is true in PostgreSQL), so one zero embedding ranked first
--   for every question. kgrag.check_embedding() refuses it with SQLSTATE 22023; the question
--   vector is checked with it, and so is every stored embedding (NOT VALID: rows already stored
--   are not scanned, every new or changed one is). NaN and infinite components never get this
--   far: pgvector refuses them on input.
-- - kgrag.tenants() lists the tenants (which needs to read past the tenant policy, as the index
--   probes do): kgrag_probe may read the document table, its only new right.

CREATE FUNCTION kgrag.check_embedding(v vector) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF vector_norm(v) = 0 THEN
        RAISE EXCEPTION 'a vector of zero length (every component 0) has no direction: its cosine similarity with anything is undefined'
            USING ERRCODE = '22023',
                  HINT = 'Embed the text with the tenant''s embedder; a zero vector usually means an empty text or a failed embedding call.';
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION kgrag.check_embedding(vector) IS
'Returns true for a vector that may be compared by cosine similarity; raises SQLSTATE 22023 for one of zero length (NaN and infinite components are refused by pgvector on input). Checks every question vector and, as a CHECK constraint, every stored embedding.';

ALTER TABLE kgrag.chunk ADD CONSTRAINT chunk_embedding_check CHECK (kgrag.check_embedding(embedding)) NOT VALID;
ALTER TABLE kgrag.entity ADD CONSTRAINT entity_embedding_check CHECK (kgrag.check_embedding(embedding)) NOT VALID;
ALTER TABLE kgrag.community_report ADD CONSTRAINT community_report_embedding_check
    CHECK (kgrag.check_embedding(embedding)) NOT VALID;

GRANT SELECT ON kgrag.document TO kgrag_probe;
CREATE POLICY probe_read ON kgrag.document FOR SELECT TO kgrag_probe USING (true);

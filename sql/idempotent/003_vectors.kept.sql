-- What the vector columns check. Kept (see README.md): the CHECK constraints of the embedding
-- columns (revision 0010) call kgrag.check_embedding, so it is replaced in place, never dropped.
-- The rest of what vectors need (the dimension, the index, nearest-neighbour search) is in
-- 020_vector.sql.

CREATE OR REPLACE FUNCTION kgrag.check_embedding(v vector) RETURNS boolean
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

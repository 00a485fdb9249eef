-- 0043_audience_indexes down: the stored audience of a chunk, its index and its function.
DO $$
BEGIN
    EXECUTE 'DROP INDEX kgrag.chunk_audience_idx';
    EXECUTE 'ALTER TABLE kgrag.chunk DROP COLUMN audience';
    EXECUTE 'DROP FUNCTION kgrag_private.audience_key(text[])';
END
$$;

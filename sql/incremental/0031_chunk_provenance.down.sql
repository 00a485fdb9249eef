-- 0031_chunk_provenance, down: the chunks forget their pages and headings; the readers' settings go;
-- the reports' vectors (of their heads) are dropped for the next build to embed the whole reports.
DO $$
BEGIN
    UPDATE kgrag.community_report SET embedding = NULL WHERE embedding IS NOT NULL;
    DELETE FROM kgrag.settings WHERE key IN ('max_file_mb', 'reader_timeout_s', 'reader_memory_mb');
    EXECUTE 'ALTER TABLE kgrag.chunk DROP COLUMN headings';
    EXECUTE 'ALTER TABLE kgrag.chunk DROP COLUMN page';
END
$$;

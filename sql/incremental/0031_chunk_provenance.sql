-- 0031_chunk_provenance: a chunk keeps where it stands in its source, and the readers of files get
-- their limits as settings.
--
-- - kgrag.chunk.page: the page the chunk starts on (a PDF's physical page, 1-based; NULL where the
--   source has no pages), kgrag.chunk.headings: the headings above it, outermost first ('{}' where
--   the source has none). Citations, context tags, search rows and kgrag.chunks name them.
-- - Settings of tenant '*' for the readers (pgkgrag.ingest.readers), which the driver reads before
--   it reads a file: max_file_mb (a larger file is refused unread), reader_timeout_s and
--   reader_memory_mb (a reader past either is stopped and the file refused).
-- - A report is embedded from its head (kgrag.report_embedding_text: its first 4,000 characters),
--   no longer from the whole of it: the vectors of the whole are dropped, so `pgkgrag build`
--   embeds every report again and a report's vector is the same whatever the history.
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    -- one subcommand a statement, and each check its own named constraint: Citus takes an ALTER
    -- TABLE of one subcommand on a distributed table, and refuses a column added with a check
    -- (every constraint it distributes must have an explicit name)
    EXECUTE 'ALTER TABLE kgrag.chunk ADD COLUMN page integer';
    EXECUTE 'ALTER TABLE kgrag.chunk ADD CONSTRAINT chunk_page_check CHECK (page >= 1)';
    EXECUTE 'ALTER TABLE kgrag.chunk ADD COLUMN headings text[] NOT NULL DEFAULT ''{}''';
    EXECUTE 'ALTER TABLE kgrag.chunk ADD CONSTRAINT chunk_headings_check CHECK (pg_catalog.cardinality(headings) <= 12)';
    EXECUTE 'COMMENT ON COLUMN kgrag.chunk.page IS ''The page the chunk starts on (a PDF''''s physical page, 1-based); NULL where the source has no pages.''';
    EXECUTE 'COMMENT ON COLUMN kgrag.chunk.headings IS ''The headings above the chunk in its source, outermost first; empty where it has none.''';
    INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
        ('*', 'max_file_mb', '200', 'A file larger than this is refused unread (pgkgrag ingest).'),
        ('*', 'reader_timeout_s', '120', 'A file whose reader (PDF, HTML, DOCX) runs longer than this is stopped and refused.'),
        ('*', 'reader_memory_mb', '2048', 'A file whose reader (PDF, HTML, DOCX) needs more memory than this is stopped and refused.');
    UPDATE kgrag.community_report SET embedding = NULL WHERE embedding IS NOT NULL;
END
$$;

-- 0043_audience_indexes down: the stored audience of a chunk, its index and its function; the
-- full-text statistics of documents for everyone only (the audiences' rows are deleted).
DO $$
BEGIN
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.lexeme_stats
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE $q$DELETE FROM kgrag.lexeme_stats WHERE audience <> ''$q$;
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats DROP CONSTRAINT lexeme_stats_pkey';
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats DROP COLUMN audience';
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats ADD CONSTRAINT lexeme_stats_pkey PRIMARY KEY (tenant_id, lang, lexeme)';
    EXECUTE 'DROP INDEX kgrag.chunk_audience_idx';
    EXECUTE 'ALTER TABLE kgrag.chunk DROP COLUMN audience';
    EXECUTE 'DROP FUNCTION kgrag_private.audience_key(text[])';
END
$$;

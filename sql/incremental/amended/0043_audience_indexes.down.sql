-- 0043_audience_indexes down, amended: the released file deleted the audiences' statistics rows
-- under the tenant policy, which for an owner that is no superuser (row-level security forced)
-- reached the rows of the tenant the installer acts for alone; another tenant's rows for an
-- audience were left, and the primary key without the audience then failed on them. Here the
-- policy is set aside while every tenant's rows for an audience are deleted. Nothing else differs
-- from the released file.
DO $$
BEGIN
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.lexeme_stats
        USING (tenant_id = kgrag.current_tenant()) WITH CHECK (tenant_id = kgrag.current_tenant())$q$;
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.lexeme_stats WHERE audience <> ''$q$;
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats DROP CONSTRAINT lexeme_stats_pkey';
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats DROP COLUMN audience';
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats ADD CONSTRAINT lexeme_stats_pkey PRIMARY KEY (tenant_id, lang, lexeme)';
    EXECUTE 'DROP INDEX kgrag.chunk_audience_idx';
    EXECUTE 'ALTER TABLE kgrag.chunk DROP COLUMN audience';
    EXECUTE 'DROP FUNCTION kgrag_private.audience_key(text[])';
END
$$;

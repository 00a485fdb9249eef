-- 0045_report_heads: a community report is embedded from its first 1,000 characters
-- (kgrag.report_embedding_text; 4,000 before), and a rewritten report keeps its vector while that
-- head is unchanged (kgrag_private.refresh_reports). The vectors of the reports longer than the new
-- head were made of up to 4,000 characters: kept, one would stand for a text no report has once
-- the report changes past its first 1,000 characters. They are set aside here, in every tenant,
-- and the next `pgkgrag build` makes them again (kgrag.embedding_todo hands their heads out).
-- The description of community_max_size says what the detection does: a community of that many
-- members or more is split one level down (graspologic's hierarchical Leiden splits at >=).
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus). The
-- policy is set aside for the update: under it an owner that is no superuser reaches the rows of
-- the tenant the installer acts for alone.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE kgrag.community_report NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.community_report DISABLE ROW LEVEL SECURITY';
    EXECUTE $q$UPDATE kgrag.community_report SET embedding = NULL, quantized = NULL
                WHERE embedding IS NOT NULL AND pg_catalog.length(report) > 1000$q$;
    EXECUTE 'ALTER TABLE kgrag.community_report ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.community_report FORCE ROW LEVEL SECURITY';
    UPDATE kgrag.settings
       SET description = 'Communities of this many members or more are split again one level down (hierarchical Leiden).'
     WHERE tenant_id = '*' AND key = 'community_max_size';
END
$$;

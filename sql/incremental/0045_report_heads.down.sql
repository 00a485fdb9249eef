-- 0045_report_heads down: the description as 0003 wrote it. The report vectors set aside stay so:
-- the next build makes them again, of the head the functions then installed say.
DO $$
BEGIN
    UPDATE kgrag.settings
       SET description = 'Communities larger than this are split again one level down (hierarchical Leiden).'
     WHERE tenant_id = '*' AND key = 'community_max_size';
END
$$;

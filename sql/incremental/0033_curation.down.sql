-- 0033_curation, down: the decisions and the review settings go; the role kgrag_curator stays (roles
-- belong to the cluster, as in 0005), without its grants on the schema.
DO $$
BEGIN
    DELETE FROM kgrag.settings WHERE key IN ('review_min_confidence', 'review_sample_percent');
    EXECUTE 'DROP TABLE kgrag.curation';
    EXECUTE 'REVOKE SELECT ON ALL TABLES IN SCHEMA kgrag FROM kgrag_curator';
    EXECUTE 'REVOKE USAGE ON SCHEMA kgrag FROM kgrag_curator';
END
$$;

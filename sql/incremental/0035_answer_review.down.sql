-- 0035_answer_review, down: the answers noted before a change, and the evidence decisions, go
-- (the edges keep the evidence they were built with until their pair is refreshed).
DO $$
BEGIN
    -- every tenant's rows: row-level security lifted for the owner meanwhile
    EXECUTE 'ALTER TABLE kgrag.curation NO FORCE ROW LEVEL SECURITY';
    EXECUTE $q$DELETE FROM kgrag.curation WHERE kind = 'correct_evidence' OR target LIKE 'answer:%'$q$;
    EXECUTE 'ALTER TABLE kgrag.curation FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE kgrag.curation DROP CONSTRAINT curation_kind_check';
    EXECUTE $q$ALTER TABLE kgrag.curation ADD CONSTRAINT curation_kind_check
        CHECK (kind IN ('reject_relation', 'rename_entity', 'approve', 'merge_entities', 'split_entity',
                        'correct_relation'))$q$;
    EXECUTE 'ALTER TABLE kgrag.entity DROP COLUMN answer_before';
    EXECUTE 'ALTER TABLE kgrag.entity DROP COLUMN answer_before_doc';
END
$$;

-- 0035_answer_review: a person sees when an entity's answer changed, and can correct the evidence
-- a relation shows.
--
-- - kgrag.entity.answer_before, answer_before_doc: the answer an entity had before it changed
--   (a document changed under it, or another became its source), with the document it came from,
--   until a person approves the new one (kgrag.review_queue, item answer_changed). Kept only
--   while that document exists: deleting it clears them (kgrag.delete_documents).
-- - kgrag.curation takes one more kind: correct_evidence (the chunk and quote a relation shows).
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'ALTER TABLE kgrag.entity ADD COLUMN answer_before text';  -- one subcommand each (Citus)
    EXECUTE 'ALTER TABLE kgrag.entity ADD COLUMN answer_before_doc text';
    EXECUTE 'ALTER TABLE kgrag.curation DROP CONSTRAINT curation_kind_check';
    EXECUTE $q$ALTER TABLE kgrag.curation ADD CONSTRAINT curation_kind_check
        CHECK (kind IN ('reject_relation', 'rename_entity', 'approve', 'merge_entities', 'split_entity',
                        'correct_relation', 'correct_evidence'))$q$;
    EXECUTE $q$COMMENT ON COLUMN kgrag.entity.answer_before IS 'The answer the entity had before it last changed, until a person approves the new one (kgrag.review_queue, item answer_changed) or it comes back; NULL when nothing changed.'$q$;
    EXECUTE $q$COMMENT ON COLUMN kgrag.entity.answer_before_doc IS 'The document answer_before came from: deleting it clears answer_before.'$q$;
END
$$;

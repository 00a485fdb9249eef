-- 0046_walkable_cooccurrence down: the indexes of denied and dated relations.
DO $$
BEGIN
    EXECUTE 'DROP INDEX kgrag.relation_evidence_dated_idx';
    EXECUTE 'DROP INDEX kgrag.relation_evidence_negated_idx';
END
$$;

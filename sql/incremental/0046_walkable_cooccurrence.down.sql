-- 0046_walkable_cooccurrence down: the index of denied relations.
DO $$
BEGIN
    EXECUTE 'DROP INDEX kgrag.relation_evidence_negated_idx';
END
$$;

-- 0046_walkable_cooccurrence: the denied and the dated relations of a tenant, found in one probe.
--
-- A walk checks a co-occurrence chunk by chunk (kgrag_private.pair_walkable) only in a tenant
-- where some stated relation may not be walked; a relation stated as denied ("Ana never worked
-- at Globex") is one, a sentence that dates a relation is another (even where another sentence
-- states it undated, so that its edge has no dates), and kgrag_private.walk_filter asks whether
-- the tenant has any before every walk: these partial indexes answer without reading the tenant's
-- other evidence.
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'CREATE INDEX relation_evidence_negated_idx ON kgrag.relation_evidence (tenant_id) WHERE negated';
    EXECUTE 'CREATE INDEX relation_evidence_dated_idx ON kgrag.relation_evidence (tenant_id)'
            ' WHERE NOT negated AND (valid_from IS NOT NULL OR valid_to IS NOT NULL)';
END
$$;

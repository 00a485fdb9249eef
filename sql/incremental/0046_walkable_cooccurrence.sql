-- 0046_walkable_cooccurrence: the denied relations of a tenant, found in one probe.
--
-- A walk checks a co-occurrence chunk by chunk (kgrag_private.pair_walkable) only in a tenant
-- where some stated relation may not be walked; a relation stated as denied ("Ana never worked
-- at Globex") is one, and kgrag_private.walk_filter asks whether the tenant has any before every
-- walk: relation_evidence_negated_idx answers without reading the tenant's other evidence.
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'CREATE INDEX relation_evidence_negated_idx ON kgrag.relation_evidence (tenant_id) WHERE negated';
END
$$;

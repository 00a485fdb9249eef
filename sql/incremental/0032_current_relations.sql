-- 0032_current_relations: walks hold relations at a time (now, or the caller's as_of) and above a
-- confidence.
--
-- - edge_dated_idx: the stated relations that have a validity (valid_from or valid_to), by pair.
--   A walk asks it once whether the tenant has any (none: nothing more to check), and a
--   co-occurrence of a pair one of whose dated relations does not hold at the walk's time is not
--   walked (it would re-admit the expired relation: kgrag_private.pair_holds).
-- - Setting walk_min_confidence (0): the confidence below which a walk (kgrag.k_hop, the local
--   route, kgrag.personalized_pagerank) does not follow a stated relation, unless the caller
--   gives min_confidence. Setting short_form_types (Person, Name): the types whose short forms
--   within a document are folded into the longer name they match at ingestion.
-- - Router rules of a third kind, count: a question that asks how many, or for every item of a
--   kind ("how many", "all the", "quantos", "todos os"), is told how many items match and that
--   only k are shown (kgrag_search's reason and payload.matching).
--
-- Through EXECUTE, as every DDL of a revision: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    EXECUTE 'CREATE INDEX edge_dated_idx ON kgrag.edge (tenant_id, src, dst)
             WHERE rel <> ''CO_OCCURS'' AND (valid_from IS NOT NULL OR valid_to IS NOT NULL)';
    INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
        ('*', 'walk_min_confidence', '0', 'A walk (k_hop, the local route, personalized_pagerank) does not follow a stated relation of a lower confidence, unless the caller gives min_confidence (0..1).'),
        ('*', 'short_form_types', '["Person", "Name"]', 'Entity types whose short forms within a document ("Grace", "Ms. Liu", "G. Liu") are folded into the one longer name of the document they match (ingestion).');
    EXECUTE 'ALTER TABLE kgrag.router_rule DROP CONSTRAINT router_rule_route_check';
    EXECUTE 'ALTER TABLE kgrag.router_rule ADD CONSTRAINT router_rule_route_check CHECK (route IN (''global'', ''mixed'', ''count''))';
    INSERT INTO kgrag.router_rule (tenant_id, rule_id, route, pattern, lang, description) VALUES
        ('*', 'en-count', 'count',
         '\m(how many|number of|count (of|the)|list (all|every|each)|all (the|of the)|every single|each of the)\M', 'en',
         'asks for a count or a complete list'),
        ('*', 'pt-contagem', 'count',
         '\m(quant[oa]s|quantidade de|numero de|total de|tod[oa]s (os|as)|liste tod[oa]s|cada um[a]? d[oa]s)\M', 'pt',
         'asks (in Portuguese) for a count or a complete list');
END
$$;

-- 0032_current_relations, down: the index of dated relations, the setting walk_min_confidence and
-- the router rules of kind count go.
DO $$
BEGIN
    DELETE FROM kgrag.router_rule WHERE route = 'count';
    EXECUTE 'ALTER TABLE kgrag.router_rule DROP CONSTRAINT router_rule_route_check';
    EXECUTE 'ALTER TABLE kgrag.router_rule ADD CONSTRAINT router_rule_route_check CHECK (route IN (''global'', ''mixed''))';
    DELETE FROM kgrag.settings WHERE key IN ('walk_min_confidence', 'short_form_types');
    EXECUTE 'DROP INDEX kgrag.edge_dated_idx';
END
$$;

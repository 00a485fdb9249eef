-- 0032_current_relations, down: the index of dated relations and the setting walk_min_confidence go.
DO $$
BEGIN
    DELETE FROM kgrag.settings WHERE key = 'walk_min_confidence';
    EXECUTE 'DROP INDEX kgrag.edge_dated_idx';
END
$$;

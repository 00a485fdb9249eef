-- The search options: what a caller passes to kgrag_search (jsonb), completed with the tenant's
-- settings and checked, so every route reads a complete, typed set.

CREATE OR REPLACE FUNCTION kgrag_private.given_search_options(options jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    allowed constant text[] := ARRAY['hops', 'degree_cap', 'entities', 'reports', 'seeds', 'level', 'relations',
                                     'as_of', 'chunk_min_similarity', 'chunk_alone_min_similarity',
                                     'entity_seed_min_similarity',
                                     'report_min_similarity', 'lexical_min_coverage', 'rrf_k', 'graph_weight',
                                     'whole_collection', 'neighbours', 'direction', 'seed_entities', 'graph_ranking', 'log',
                                     'history', 'min_confidence'];
    unknown text;
BEGIN
    IF options IS NULL OR jsonb_typeof(options) <> 'object' THEN
        RAISE EXCEPTION 'options must be a jsonb object, e.g. {"hops": 2, "degree_cap": 4}' USING ERRCODE = '22023';
    END IF;
    -- whole_collection was called shape before revision 0009; the old name is still accepted
    IF options ? 'shape' THEN
        IF options ? 'whole_collection' THEN
            RAISE EXCEPTION 'give the option whole_collection or its old name shape, not both' USING ERRCODE = '22023';
        END IF;
        options := (options - 'shape') || jsonb_build_object('whole_collection', options -> 'shape');
    END IF;
    -- null means "the default", except where it has a meaning of its own: no degree cap, every
    -- relation, no validity filter
    options := (SELECT COALESCE(jsonb_object_agg(o.key, o.value), '{}') FROM jsonb_each(options) AS o
                 WHERE jsonb_typeof(o.value) <> 'null' OR o.key IN ('degree_cap', 'relations', 'as_of', 'seed_entities'));
    SELECT string_agg(key, ', ' ORDER BY key) INTO unknown FROM jsonb_object_keys(options) AS key
     WHERE key <> ALL (allowed);
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'unknown search option(s): %', unknown
            USING ERRCODE = '22023', HINT = 'Known options: ' || array_to_string(allowed, ', ');
    END IF;
    RETURN options;
END
$$;
COMMENT ON FUNCTION kgrag_private.given_search_options(jsonb) IS
'Private. Returns the options a caller gave, by their current names (shape is whole_collection) and without the nulls that mean "the default"; raises SQLSTATE 22023 for what is not a jsonb object or names an unknown option (the hint lists the known ones).';

CREATE OR REPLACE FUNCTION kgrag_private.default_search_options() RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- every setting in two statements (kgrag_private.settings_of, floors_of), not one each
    SELECT jsonb_build_object(
        'hops', v -> 'search_hops', 'degree_cap', v -> 'search_degree_cap',
        'entities', v -> 'search_entities', 'reports', v -> 'search_reports',
        'seeds', v -> 'search_seeds', 'level', 0, 'relations', NULL, 'as_of', NULL,
        'chunk_min_similarity', f -> 'chunk_min_similarity',
        'chunk_alone_min_similarity', to_jsonb(COALESCE(kgrag_private.chunk_spread_floor(v -> 'chunk_spread', v -> 'embedder'), -1)),
        'entity_seed_min_similarity', f -> 'entity_seed_min_similarity',
        'report_min_similarity', f -> 'report_min_similarity',
        'lexical_min_coverage', v -> 'lexical_min_coverage', 'rrf_k', v -> 'rrf_k',
        'graph_weight', v -> 'rrf_graph_weight',
        'whole_collection', false, 'neighbours', v -> 'search_neighbours', 'direction', 'out',
        'seed_entities', NULL, 'graph_ranking', v -> 'search_graph_ranking',
        'log', v -> 'query_log', 'history', false, 'min_confidence', v -> 'walk_min_confidence')
      FROM (SELECT kgrag_private.settings_of(ARRAY['search_hops', 'search_degree_cap', 'search_entities',
                                                   'search_reports', 'search_seeds', 'lexical_min_coverage', 'rrf_k',
                                                   'rrf_graph_weight', 'search_neighbours', 'search_graph_ranking',
                                                   'query_log', 'walk_min_confidence', 'chunk_spread', 'embedder']) AS v,
                   kgrag_private.floors_of(ARRAY['chunk_min_similarity', 'entity_seed_min_similarity',
                                                 'report_min_similarity']) AS f
             OFFSET 0) AS d  -- (a fence: each once, not once per reference)
$$;
COMMENT ON FUNCTION kgrag_private.default_search_options() IS
'Private. Returns every search option with the current tenant''s default: the search_* settings, the floors (kgrag_private.floor: for the tenant''s embedder; chunk_alone_min_similarity: the median of the setting chunk_spread measured with the tenant''s embedder, else -1), rrf_k, rrf_graph_weight, query_log; level 0, direction out, no relation, as_of or seed_entities filter, history false, min_confidence the setting walk_min_confidence.';

CREATE OR REPLACE FUNCTION kgrag_private.check_search_options(merged jsonb, given jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    above record;  -- (option, value, bound) of an option beyond its setting's limit
BEGIN
    -- a date alone is that day's midnight UTC, whatever the session's time zone
    IF merged ->> 'as_of' ~ '^\d{4}-\d{2}-\d{2}$' THEN
        merged := merged || jsonb_build_object('as_of', (merged ->> 'as_of') || 'T00:00:00Z');
    END IF;
    BEGIN  -- every value must have the type its use needs
        PERFORM (merged ->> 'hops')::integer, (merged ->> 'degree_cap')::integer, (merged ->> 'entities')::integer,
                (merged ->> 'reports')::integer, (merged ->> 'seeds')::integer, (merged ->> 'level')::integer,
                (merged ->> 'as_of')::timestamptz, (merged ->> 'chunk_min_similarity')::float8,
                (merged ->> 'chunk_alone_min_similarity')::float8,
                (merged ->> 'entity_seed_min_similarity')::float8, (merged ->> 'report_min_similarity')::float8,
                (merged ->> 'lexical_min_coverage')::float8, (merged ->> 'rrf_k')::integer,
                (merged ->> 'graph_weight')::float8,
                (merged ->> 'whole_collection')::boolean, (merged ->> 'neighbours')::boolean,
                (merged ->> 'log')::boolean, (merged ->> 'history')::boolean, (merged ->> 'min_confidence')::float8,
                ARRAY(SELECT jsonb_array_elements_text(COALESCE(merged -> 'relations', '[]'))
                       WHERE jsonb_typeof(merged -> 'relations') IS DISTINCT FROM 'null'),
                ARRAY(SELECT jsonb_array_elements_text(COALESCE(merged -> 'seed_entities', '[]'))
                       WHERE jsonb_typeof(merged -> 'seed_entities') IS DISTINCT FROM 'null');
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION 'bad search option value: %', SQLERRM
            USING ERRCODE = '22023', HINT = 'hops, degree_cap, entities, reports, seeds, level, rrf_k are integers; '
                                            '*_similarity and lexical_min_coverage numbers; as_of a timestamp; '
                                            'relations and seed_entities arrays of text; direction out, in or both; whole_collection, neighbours, log and history booleans; min_confidence a number.';
    END;
    IF NOT (merged ->> 'log')::boolean THEN  -- (nested: the limits are read only for log = false)
        IF kgrag_private.within_limits('query_log', 'false') <> 'false' THEN
            RAISE EXCEPTION 'option log = false: the schema owner keeps the query log on (setting setting_limits)'
                USING ERRCODE = '42501';
        END IF;
    END IF;
    IF (merged ->> 'hops')::integer NOT BETWEEN 0 AND kgrag.setting('max_hops')::integer THEN
        RAISE EXCEPTION 'option hops = % is outside 0..% (setting max_hops)', merged ->> 'hops',
            kgrag.setting('max_hops') USING ERRCODE = '22023';
    END IF;
    IF (merged ->> 'degree_cap')::integer < 1 OR (merged ->> 'entities')::integer NOT BETWEEN 0 AND 100
       OR (merged ->> 'reports')::integer NOT BETWEEN 1 AND 1000 OR (merged ->> 'seeds')::integer NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'options out of range: degree_cap >= 1 (or null), entities 0..100, reports 1..1000, seeds 1..100'
            USING ERRCODE = '22023';
    END IF;
    IF (merged ->> 'rrf_k')::integer NOT BETWEEN 0 AND 1000 OR (merged ->> 'graph_weight')::float8 NOT BETWEEN 0 AND 100
       OR (merged ->> 'level')::integer NOT BETWEEN 0 AND 100
       OR (merged ->> 'lexical_min_coverage')::float8 NOT BETWEEN 0 AND 1
       OR (merged ->> 'chunk_min_similarity')::float8 NOT BETWEEN -1 AND 1
       OR (merged ->> 'chunk_alone_min_similarity')::float8 NOT BETWEEN -1 AND 1
       OR (merged ->> 'entity_seed_min_similarity')::float8 NOT BETWEEN -1 AND 1
       OR (merged ->> 'report_min_similarity')::float8 NOT BETWEEN -1 AND 1
       OR jsonb_array_length(COALESCE(NULLIF(merged -> 'relations', 'null'), '[]')) > 100
       OR jsonb_array_length(COALESCE(NULLIF(merged -> 'seed_entities', 'null'), '[]')) > 100
       OR merged ->> 'direction' NOT IN ('out', 'in', 'both')
       OR merged ->> 'graph_ranking' NOT IN ('paths', 'pagerank', 'both')
       OR NOT (merged ->> 'min_confidence')::float8 BETWEEN 0 AND 1 THEN
        RAISE EXCEPTION 'options out of range: rrf_k 0..1000, graph_weight 0..100, level 0..100, '
                        'lexical_min_coverage 0..1, the *_similarity floors -1..1, at most 100 relations and '
                        '100 seed_entities, direction out, in or both, graph_ranking paths, pagerank or both, min_confidence 0..1'
            USING ERRCODE = '22023';
    END IF;
    -- the options the call gives within the limits the owner set on the settings they stand for
    -- (the rule that reads the settings: kgrag_private.within_limits), a number given as a string
    -- ("30") as the number it is used as; a default (the owner's, or the tenant's own row, which
    -- kgrag.setting reads within them) is not checked again: on a Citus worker every statement
    -- costs a plan of its own
    SELECT x.option, merged -> x.option AS value, b.bound
      INTO above
      FROM (VALUES ('seeds', 'search_seeds'), ('entities', 'search_entities'), ('reports', 'search_reports'),
                   ('degree_cap', 'search_degree_cap'), ('hops', 'search_hops')) AS x(option, setting)
     CROSS JOIN LATERAL (SELECT to_jsonb((merged ->> x.option)::numeric) AS value) AS v
     CROSS JOIN LATERAL (SELECT kgrag_private.within_limits(x.setting, v.value) AS bound) AS b
     WHERE given ? x.option AND v.value IS NOT NULL
       AND b.bound IS DISTINCT FROM v.value
     ORDER BY x.option LIMIT 1;
    IF above.option IS NOT NULL THEN
        RAISE EXCEPTION 'option % = % is beyond the limit of % the schema owner set (setting_limits)',
            above.option, above.value, above.bound USING ERRCODE = '22023';
    END IF;
    RETURN merged;
END
$$;
COMMENT ON FUNCTION kgrag_private.check_search_options(jsonb, jsonb) IS
'Private. Returns a complete set of search options unchanged (but for an as_of given as a date alone, which becomes that day''s midnight UTC) once each value has the type its use needs and lies in its range (hops within the setting max_hops; seeds, entities, reports, degree_cap and hops, where the call gives them (given: the options it gave, kgrag_private.given_search_options; a number given as a string counts as that number; a default, the owner''s or the tenant''s own row as kgrag.setting reads it within the limits, is not checked again), within the ceilings setting_limits puts on search_seeds, search_entities, search_reports, search_degree_cap and search_hops; log false only where the owner allows query_log false); raises SQLSTATE 22023 saying which rule a value breaks (42501 for the log).';

CREATE OR REPLACE FUNCTION kgrag_private.search_options(options jsonb) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT kgrag_private.check_search_options(kgrag_private.default_search_options() || g.given, g.given)
      FROM (SELECT kgrag_private.given_search_options(options) AS given) AS g
$$;
COMMENT ON FUNCTION kgrag_private.search_options(jsonb) IS
'Private. Returns the search options completed with the tenant''s settings; raises a clear error for an unknown option or a value of the wrong type.';

-- The router: the search options completed with the tenant's settings, the route names, and
-- kgrag.route, which picks a route for a question and says why.

CREATE OR REPLACE FUNCTION kgrag_private.search_options(options jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    allowed constant text[] := ARRAY['hops', 'degree_cap', 'entities', 'reports', 'seeds', 'level', 'relations',
                                     'as_of', 'chunk_min_similarity', 'entity_seed_min_similarity',
                                     'report_min_similarity', 'lexical_min_coverage', 'rrf_k', 'graph_weight',
                                     'whole_collection', 'neighbours', 'direction', 'seed_entities', 'graph_ranking', 'log'];
    unknown text;
    merged jsonb;
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
    merged := jsonb_build_object(
        'hops', kgrag.setting('search_hops'), 'degree_cap', kgrag.setting('search_degree_cap'),
        'entities', kgrag.setting('search_entities'), 'reports', kgrag.setting('search_reports'),
        'seeds', kgrag.setting('search_seeds'), 'level', 0, 'relations', NULL, 'as_of', NULL,
        'chunk_min_similarity', kgrag.setting('chunk_min_similarity'),
        'entity_seed_min_similarity', kgrag.setting('entity_seed_min_similarity'),
        'report_min_similarity', kgrag.setting('report_min_similarity'),
        'lexical_min_coverage', kgrag.setting('lexical_min_coverage'), 'rrf_k', kgrag.setting('rrf_k'),
        'graph_weight', kgrag.setting('rrf_graph_weight'),
        'whole_collection', false, 'neighbours', kgrag.setting('search_neighbours'), 'direction', 'out',
        'seed_entities', NULL, 'graph_ranking', kgrag.setting('search_graph_ranking'),
        'log', kgrag.setting('query_log')) || options;
    BEGIN  -- every value must have the type its use needs
        PERFORM (merged ->> 'hops')::integer, (merged ->> 'degree_cap')::integer, (merged ->> 'entities')::integer,
                (merged ->> 'reports')::integer, (merged ->> 'seeds')::integer, (merged ->> 'level')::integer,
                (merged ->> 'as_of')::timestamptz, (merged ->> 'chunk_min_similarity')::float8,
                (merged ->> 'entity_seed_min_similarity')::float8, (merged ->> 'report_min_similarity')::float8,
                (merged ->> 'lexical_min_coverage')::float8, (merged ->> 'rrf_k')::integer,
                (merged ->> 'graph_weight')::float8,
                (merged ->> 'whole_collection')::boolean, (merged ->> 'neighbours')::boolean,
                (merged ->> 'log')::boolean,
                ARRAY(SELECT jsonb_array_elements_text(COALESCE(merged -> 'relations', '[]'))
                       WHERE jsonb_typeof(merged -> 'relations') IS DISTINCT FROM 'null'),
                ARRAY(SELECT jsonb_array_elements_text(COALESCE(merged -> 'seed_entities', '[]'))
                       WHERE jsonb_typeof(merged -> 'seed_entities') IS DISTINCT FROM 'null');
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION 'bad search option value: %', SQLERRM
            USING ERRCODE = '22023', HINT = 'hops, degree_cap, entities, reports, seeds, level, rrf_k are integers; '
                                            '*_similarity and lexical_min_coverage numbers; as_of a timestamp; '
                                            'relations and seed_entities arrays of text; direction out, in or both; whole_collection, neighbours and log booleans.';
    END;
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
       OR (merged ->> 'entity_seed_min_similarity')::float8 NOT BETWEEN -1 AND 1
       OR (merged ->> 'report_min_similarity')::float8 NOT BETWEEN -1 AND 1
       OR jsonb_array_length(COALESCE(NULLIF(merged -> 'relations', 'null'), '[]')) > 100
       OR jsonb_array_length(COALESCE(NULLIF(merged -> 'seed_entities', 'null'), '[]')) > 100
       OR merged ->> 'direction' NOT IN ('out', 'in', 'both')
       OR merged ->> 'graph_ranking' NOT IN ('paths', 'pagerank', 'both') THEN
        RAISE EXCEPTION 'options out of range: rrf_k 0..1000, graph_weight 0..100, level 0..100, '
                        'lexical_min_coverage 0..1, the *_similarity floors -1..1, at most 100 relations and '
                        '100 seed_entities, direction out, in or both, graph_ranking paths, pagerank or both'
            USING ERRCODE = '22023';
    END IF;
    RETURN merged;
END
$$;
COMMENT ON FUNCTION kgrag_private.search_options(jsonb) IS
'Private. Returns the search options completed with the tenant''s settings; raises a clear error for an unknown option or a value of the wrong type.';

CREATE OR REPLACE FUNCTION kgrag.routes()
RETURNS TABLE (route text, description text)
LANGUAGE sql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    VALUES ('local', 'the question names an entity: the entities around it and the chunks fused from the graph, vector and lexical search'),
           ('global', 'the question asks about the collection: community reports as the map, then the chunks they cite'),
           ('mixed', 'a named subject and a request for broad context: the best report as the map, then the local route'),
           ('vector', 'nothing of the graph is named: vector and lexical chunks fused by RRF')
$$;
COMMENT ON FUNCTION kgrag.routes() IS
'Returns the routes kgrag_search can take, in this order, with what each returns: (route, description). kgrag_search also takes ''auto'': the router (kgrag.route) picks one of these and says why.';

CREATE OR REPLACE FUNCTION kgrag.route(
    question_vec vector DEFAULT NULL, question text DEFAULT NULL, options jsonb DEFAULT '{}')
RETURNS TABLE (route text, reason text, seeds text[], linked text[], profile_gap double precision, rule_id text,
               named_seeds text[])
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    opts jsonb := kgrag_private.search_options(options);
    n_seeds integer := (opts ->> 'seeds')::integer;
    folded text := kgrag.fold(COALESCE(question, ''));
    v_linked text[] := '{}';
    v_named text[] := '{}';
    vector_seeds text[] := '{}';
    profile float8[];
    gap float8;
    flat boolean;
    global_rule record;
    mixed_rule record;
    named text;
BEGIN
    PERFORM kgrag_private.check_question(question);
    IF question IS NOT NULL THEN
        -- Entities the question names. One without edges cannot seed a walk, but its own chunks
        -- are still evidence about the subject: it stays, at hop 0. The best link first; among
        -- links alike, a proper name (capitalized) before a common phrase, then the more specific
        -- entity (fewer chunks cite it, counted up to 1,000), as HippoRAG weighs its seeds.
        -- Named: linked by a whole name (tiers exact, phrase, squashed, token), not a fuzzy guess.
        SELECT COALESCE(array_agg(x.entity_id ORDER BY x.o), '{}'),
               COALESCE(array_agg(x.entity_id ORDER BY x.o) FILTER (WHERE x.tier IN ('exact', 'phrase', 'squashed', 'token')), '{}')
          INTO v_linked, v_named
          FROM (SELECT l.entity_id, l.tier,
                       row_number() OVER (ORDER BY l.score DESC, e.name <> lower(e.name) DESC,
                                          (SELECT count(*) FROM (SELECT 1 FROM kgrag.mention AS m
                                                                  WHERE m.tenant_id = t AND m.entity_id = l.entity_id
                                                                  LIMIT 1000) AS c),
                                          l.entity_id) AS o
                  FROM kgrag.link_entities(question, include_isolated => true) AS l
                  JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = l.entity_id) AS x
         WHERE x.o <= n_seeds;
    END IF;
    -- The shape of the entity similarity profile: a question naming a subject peaks, a question
    -- about the whole collection (or about nothing here) is flat.
    -- Without a question vector (a question given as text only) there is no profile and no vector seed.
    profile := CASE WHEN question_vec IS NULL THEN '{}'::float8[] ELSE ARRAY(
                   SELECT p.similarity FROM kgrag.search_entities_vector(question_vec, 4, profile => true) AS p
                    ORDER BY p.rank) END;
    gap := CASE WHEN cardinality(profile) = 0 THEN 0 ELSE profile[1] - profile[cardinality(profile)] END;
    flat := cardinality(profile) >= 4 AND gap < kgrag.setting('router_flat_gap')::float8;
    -- Vector search seeds the traversal when the words name nothing the graph knows, and only
    -- when its profile peaks: a name found in the text is more precise than a neighbour in space.
    IF NOT flat AND cardinality(v_linked) = 0 AND question_vec IS NOT NULL THEN
        vector_seeds := ARRAY(SELECT s.entity_id FROM kgrag.search_entities_vector(
                                     question_vec, n_seeds, (opts ->> 'entity_seed_min_similarity')::float8) AS s
                               ORDER BY s.rank);
    END IF;
    seeds := v_linked || ARRAY(SELECT x FROM unnest(vector_seeds) AS x WHERE x <> ALL (v_linked));
    linked := v_linked;
    named_seeds := v_named;
    profile_gap := gap;

    SELECT r.rule_id, r.route, r.description INTO global_rule
      FROM (SELECT DISTINCT ON (rr.rule_id) rr.* FROM kgrag.router_rule AS rr
             WHERE rr.tenant_id IN ('*', t) ORDER BY rr.rule_id, (rr.tenant_id = '*')) AS r
     WHERE r.enabled AND r.route = 'global' AND folded ~* r.pattern
     ORDER BY r.rule_id LIMIT 1;
    SELECT r.rule_id, r.route, r.description INTO mixed_rule
      FROM (SELECT DISTINCT ON (rr.rule_id) rr.* FROM kgrag.router_rule AS rr
             WHERE rr.tenant_id IN ('*', t) ORDER BY rr.rule_id, (rr.tenant_id = '*')) AS r
     WHERE r.enabled AND r.route = 'mixed' AND folded ~* r.pattern
     ORDER BY r.rule_id LIMIT 1;
    SELECT string_agg(e.name, ', ' ORDER BY array_position(seeds, e.entity_id)) INTO named
      FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.entity_id = ANY (seeds[1:3]);

    IF global_rule.rule_id IS NOT NULL THEN
        route := 'global';
        rule_id := global_rule.rule_id;
        reason := format('the question %s (rule %s)', global_rule.description, global_rule.rule_id)
                  || CASE WHEN cardinality(seeds) = 0 THEN ' without naming a subject: every report of the level, by weight'
                          ELSE format(': community reports ranked against it (it names %s)', named) END;
    ELSIF cardinality(seeds) = 0 THEN
        route := 'vector';
        reason := 'no entity of the graph is named'
                  || CASE WHEN question_vec IS NULL THEN ' (no question vector: entity and chunk vector search skipped)'
                          WHEN flat THEN format(' and none stands out (top-1 minus top-4 similarity %s < %s)',
                                               round(gap::numeric, 3), kgrag.setting('router_flat_gap'))
                          ELSE format(' or close enough (best entity similarity %s < %s)',
                                      COALESCE(round(profile[1]::numeric, 3)::text, 'none'),
                                      opts ->> 'entity_seed_min_similarity') END
                  || CASE WHEN question_vec IS NULL THEN ': lexical search over the chunks'
                          ELSE ': vector and lexical search over the chunks' END;
    ELSIF mixed_rule.rule_id IS NOT NULL THEN
        route := 'mixed';
        rule_id := mixed_rule.rule_id;
        reason := format('the question names %s and %s (rule %s): a community report as the map, the chunks '
                         'around the subject as evidence', named, regexp_replace(mixed_rule.description,
                         '^names a subject and ', ''), mixed_rule.rule_id);
    ELSE
        route := 'local';
        reason := format('the question names %s: the evidence is in the chunks around it', named);
    END IF;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag.route(vector, text, jsonb) IS
'Returns the route the router picks for a question and why: (route, reason, seeds, linked, profile_gap, rule_id = the kgrag.router_rule that decided, if one did, named_seeds = the seeds the question names by a whole name, not by a fuzzy link). Aggregation markers (kgrag.router_rule, route global) send it to global; no entity named or close to it (entity linking and a peaked entity-similarity profile above the seed floor) to vector; a named subject with a broad-context marker to mixed; a named subject to local. Seeds come from entity linking (the best link first; among links alike, a proper name before a common phrase, then the entity fewer chunks cite), or, when it finds none, from entity vector search above the seed floor when the similarity profile peaks. profile_gap = top-1 minus top-4 entity similarity. question_vec may be NULL when question is given: then only entity linking seeds, and nothing is decided by similarity.';

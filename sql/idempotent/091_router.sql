-- The router: the route names, and kgrag.route, which picks a route for a question and says why.
-- The search options it reads are in 090_search_options.sql.

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

CREATE OR REPLACE FUNCTION kgrag_private.linked_seeds(question text, n_seeds integer)
RETURNS TABLE (linked text[], named text[])
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    -- Entities the question names. One without edges cannot seed a walk, but its own chunks
    -- are still evidence about the subject: it stays, at hop 0. The best link first; among
    -- links alike, a proper name (capitalized) before a common phrase, then the more specific
    -- entity (fewer chunks cite it, counted up to 1,000), as HippoRAG weighs its seeds.
    -- Named: linked by a whole name (tiers exact, phrase, squashed, token), not a fuzzy guess.
    SELECT COALESCE(array_agg(x.entity_id ORDER BY x.o), '{}'),
           COALESCE(array_agg(x.entity_id ORDER BY x.o) FILTER (WHERE x.tier IN ('exact', 'phrase', 'squashed', 'token')), '{}')
      INTO linked, named
      FROM (SELECT l.entity_id, l.tier,
                   row_number() OVER (ORDER BY l.score DESC, e.name <> lower(e.name) DESC,
                                      (SELECT count(*) FROM (SELECT 1 FROM kgrag.mention AS m
                                                              WHERE m.tenant_id = t AND m.entity_id = l.entity_id
                                                              LIMIT 1000) AS c),
                                      l.entity_id) AS o
              FROM kgrag_private.link_entities_at(t, question, NULL, NULL, true) AS l  -- (kgrag.link_entities)
              JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = l.entity_id) AS x
     WHERE x.o <= n_seeds;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.linked_seeds(text, integer) IS
'Private. Returns the first n_seeds entities the question names (kgrag.link_entities, isolated ones included), best first: the best link, then a proper name before a common phrase, then the entity fewer chunks cite; named = those linked by a whole name (tiers exact, phrase, squashed, token), not a fuzzy guess.';

CREATE OR REPLACE FUNCTION kgrag_private.matching_rules(folded_question text)
RETURNS TABLE (route text, rule_id text, description text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value (router_rule is a reference table on Citus)
BEGIN
    -- one pass over the rules: the first match of each route
    RETURN QUERY
    SELECT DISTINCT ON (r.route) r.route, r.rule_id, r.description
      FROM (SELECT DISTINCT ON (rr.rule_id) rr.* FROM kgrag.router_rule AS rr
             WHERE rr.tenant_id IN ('*', t) ORDER BY rr.rule_id, (rr.tenant_id = '*')) AS r
     WHERE r.enabled AND folded_question ~* r.pattern
     ORDER BY r.route, r.rule_id;
END
$$;
COMMENT ON FUNCTION kgrag_private.matching_rules(text) IS
'Private. Returns, for each route of kgrag.router_rule (global, mixed, count), the first enabled rule (by rule_id; a tenant''s rule in place of the default of the same id) whose pattern the folded question matches: (route, rule_id, description); no row for a route none matches.';

CREATE OR REPLACE FUNCTION kgrag_private.route_decision(
    seeds integer, named text, global_rule text, global_why text, mixed_rule text, mixed_why text,
    has_vector boolean, flat boolean, gap double precision, best double precision, seed_floor text,
    absent_subject text, subject text)
RETURNS TABLE (route text, rule_id text, reason text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF global_rule IS NOT NULL THEN
        route := 'global';
        rule_id := global_rule;
        reason := format('the question %s (rule %s)', global_why, global_rule)
                  || CASE WHEN absent_subject IS NOT NULL
                          THEN format(' about "%s", which no chunk of the collection mentions: nothing to return',
                                      absent_subject)
                          WHEN seeds = 0 AND subject IS NOT NULL
                          THEN format(': community reports ranked against its subject "%s"', subject)
                          WHEN seeds = 0 THEN ' without naming a subject: every report of the level, by weight'
                          ELSE format(': community reports ranked against it (it %s)', named) END;
    ELSIF seeds = 0 THEN
        route := 'vector';
        reason := 'no entity of the graph is named'
                  || CASE WHEN NOT has_vector THEN ' (no question vector: entity and chunk vector search skipped)'
                          WHEN flat THEN format(' and none stands out (top-1 minus top-4 similarity %s < %s)',
                                               round(gap::numeric, 4), kgrag_private.floor('router_flat_gap'))
                          ELSE format(' or close enough (best entity similarity %s < %s)',
                                      COALESCE(round(best::numeric, 3)::text, 'none'), seed_floor) END
                  || CASE WHEN NOT has_vector THEN ': lexical search over the chunks'
                          ELSE ': vector and lexical search over the chunks' END;
    ELSIF mixed_rule IS NOT NULL THEN
        route := 'mixed';
        rule_id := mixed_rule;
        reason := format('the question %s and %s (rule %s): a community report as the map, the chunks '
                         'around the subject as evidence', named, regexp_replace(mixed_why,
                         '^names a subject and ', ''), mixed_rule);
    ELSE
        route := 'local';
        reason := format('the question %s: the evidence is in the chunks around it', named);
    END IF;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.route_decision(integer, text, text, text, text, text, boolean, boolean, double precision, double precision, text, text, text) IS
'Private. The router''s rule and its reason, from what kgrag.route found: a global rule matched sends to global (the whole collection where the question names no subject; reports ranked against its subject where it names one, subject; nothing where no chunk holds a word of it, absent_subject); no seed to vector (the reason says whether there was no vector, a flat profile or no entity above the seed floor); a mixed rule with seeds to mixed; seeds alone to local. named = what the question says of the first seeds, for the reason: "names A, B", then apart "its words are spelled near C" (a fuzzy link) and "it is near D in meaning" (vector search), or "names no entity outright" before those.';

CREATE OR REPLACE FUNCTION kgrag_private.ambiguity_note(question text, linked text[]) RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    spoken text := ' ' || kgrag.canonical_name(COALESCE(question, '')) || ' ';
    note text;
BEGIN
    -- a name the question says that several of the linked entities answer to ("Grace": Grace Liu
    -- and Grace Park): the reason names them (linked is at most 100 entities, each few aliases)
    SELECT string_agg(format('the name "%s" is ambiguous: %s', x.alias_fold, x.names), '; ' ORDER BY x.alias_fold)
      INTO note
      -- (namesakes of one name are told apart by id and what their description says)
      FROM (SELECT a.alias_fold,
                   CASE WHEN count(DISTINCT e.name) = count(DISTINCT e.entity_id) THEN string_agg(DISTINCT e.name, ', ')
                        ELSE string_agg(DISTINCT format('%s [%s%s]', e.name, e.entity_id,
                                                        COALESCE(': ' || NULLIF(left(e.description, 60), ''), '')), ', ')
                   END AS names
              FROM kgrag.alias AS a
              JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = a.entity_id
             WHERE a.tenant_id = t AND a.entity_id = ANY (linked) AND a.alias_fold <> ''
               AND strpos(spoken, ' ' || a.alias_fold || ' ') > 0
             GROUP BY a.alias_fold
            -- (an entity and its twins in the audiences the session sees are one: kgrag_private.with_twins)
            HAVING count(DISTINCT kgrag_private.twin_key(a.entity_id)) > 1) AS x;
    RETURN COALESCE('; ' || note || ' (each is a seed; name one, or pass seed_entities)', '');
END
$$;
COMMENT ON FUNCTION kgrag_private.ambiguity_note(text, text[]) IS
'Private. Returns what kgrag.route adds to its reason when a name the question says is a name or alias of several of the entities it linked (an entity and its twins in an audience''s graph, kgrag_private.with_twins, count as one): ''; the name "grace" is ambiguous: Grace Liu, Grace Park (each is a seed; ...)'', or '''' when none is.';

CREATE OR REPLACE FUNCTION kgrag_private.route_at(tenant text, question_vec vector, question text, options jsonb)
RETURNS TABLE (route text, reason text, seeds text[], linked text[], profile_gap double precision, rule_id text,
               named_seeds text[], subject text, subject_absent boolean, count_rule text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = auto  -- cached plans where it runs (use_tenant forces custom ones on Citus, for the
                            -- coordinator's UPDATEs; a delegated read runs every statement on one worker)
AS $$
DECLARE
    t text := kgrag_private.check_delegated_tenant(tenant);
    opts jsonb := kgrag_private.search_options(options);
    n_seeds integer := (opts ->> 'seeds')::integer;
    folded text := kgrag.fold(COALESCE(question, ''));
    vector_seeds text[] := '{}';
    profile float8[];
    flat boolean;
    global_rule text;
    global_why text;
    mixed_rule text;
    mixed_why text;
    named text;
BEGIN
    PERFORM kgrag_private.check_question(question);
    question_vec := kgrag_private.fit_vector(question_vec);  -- a narrower model's, zero-padded
    linked := '{}';
    named_seeds := '{}';
    IF question IS NOT NULL THEN
        SELECT s.linked, s.named INTO linked, named_seeds FROM kgrag_private.linked_seeds(question, n_seeds) AS s;
    END IF;
    -- The shape of the entity similarity profile: a question naming a subject peaks, a question
    -- about the whole collection (or about nothing here) is flat.
    -- Without a question vector (a question given as text only) there is no profile and no vector seed.
    profile := CASE WHEN question_vec IS NULL THEN '{}'::float8[] ELSE ARRAY(
                   SELECT p.similarity FROM kgrag.search_entities_vector(question_vec, 4, profile => true) AS p
                    ORDER BY p.rank) END;
    profile_gap := CASE WHEN cardinality(profile) = 0 THEN 0 ELSE profile[1] - profile[cardinality(profile)] END;
    flat := cardinality(profile) >= 4 AND profile_gap < kgrag_private.floor('router_flat_gap')::float8;
    -- Vector search seeds the traversal when the words name nothing the graph knows, and only
    -- when its profile peaks: a name found in the text is more precise than a neighbour in space.
    IF NOT flat AND cardinality(linked) = 0 AND question_vec IS NOT NULL THEN
        vector_seeds := ARRAY(SELECT s.entity_id FROM kgrag.search_entities_vector(
                                     question_vec, n_seeds, (opts ->> 'entity_seed_min_similarity')::float8) AS s
                               ORDER BY s.rank);
    END IF;
    seeds := linked || ARRAY(SELECT x FROM unnest(vector_seeds) AS x WHERE x <> ALL (linked));

    SELECT max(m.rule_id) FILTER (WHERE m.route = 'global'), max(m.description) FILTER (WHERE m.route = 'global'),
           max(m.rule_id) FILTER (WHERE m.route = 'mixed'), max(m.description) FILTER (WHERE m.route = 'mixed'),
           max(m.rule_id) FILTER (WHERE m.route = 'count')
      INTO global_rule, global_why, mixed_rule, mixed_why, count_rule
      FROM kgrag_private.matching_rules(folded) AS m;
    -- An aggregation without an entity, or a count: what it is about (the words left once the
    -- markers are out), and for the aggregation, whether any chunk holds it.
    subject_absent := false;
    IF global_rule IS NOT NULL AND cardinality(seeds) = 0 OR count_rule IS NOT NULL THEN
        subject := kgrag_private.question_subject(question);
    END IF;
    IF global_rule IS NOT NULL AND cardinality(seeds) = 0 AND subject IS NOT NULL THEN
        -- absent: not one of its words is in any chunk (a subject some chunk names is ranked against the reports)
        SELECT m.has_words AND m.chunks = 0 INTO subject_absent FROM kgrag_private.subject_matches(subject, 1, false) AS m;
        -- in other words than the collection's: a chunk or a report near the question (its
        -- vector, above the floors) holds it
        IF subject_absent AND question_vec IS NOT NULL THEN
            subject_absent := NOT EXISTS (SELECT 1 FROM kgrag.search_chunks_vector(question_vec, 1) AS c
                                           WHERE c.similarity >= (opts ->> 'chunk_min_similarity')::float8)
                              AND NOT EXISTS (SELECT 1 FROM kgrag.search_reports_vector(question_vec, 1, (opts ->> 'level')::integer) AS r
                                               WHERE r.similarity >= (opts ->> 'report_min_similarity')::float8);
        END IF;
    END IF;
    -- what the question says of the first seeds, for the reason: the names it says outright, then
    -- apart the ones it comes near by spelling (a fuzzy link) or in meaning (vector search), never
    -- said to be named
    EXECUTE 'SELECT CASE WHEN x.outright IS NULL THEN ''names no entity outright'' ELSE ''names '' || x.outright END
                    || COALESCE(''; its words are spelled near '' || x.spelled, '''')
                    || COALESCE(''; it is near '' || x.meant || '' in meaning'', '''')
               FROM (SELECT string_agg(e.name, '', '' ORDER BY array_position($2, e.entity_id))
                                FILTER (WHERE e.entity_id = ANY ($3)) AS outright,
                            string_agg(e.name, '', '' ORDER BY array_position($2, e.entity_id))
                                FILTER (WHERE e.entity_id <> ALL ($3) AND e.entity_id = ANY ($4)) AS spelled,
                            string_agg(e.name, '', '' ORDER BY array_position($2, e.entity_id))
                                FILTER (WHERE e.entity_id <> ALL ($3) AND e.entity_id <> ALL ($4)) AS meant
                       FROM kgrag.entity AS e WHERE e.tenant_id = $1 AND e.entity_id = ANY ($2[1:3])) AS x'
       INTO named USING t, seeds, COALESCE(named_seeds, '{}'), COALESCE(linked, '{}');  -- planned each time: see kgrag_private.search_at
    SELECT d.route, d.rule_id, d.reason INTO route, rule_id, reason
      FROM kgrag_private.route_decision(cardinality(seeds), named, global_rule, global_why, mixed_rule, mixed_why,
                                        question_vec IS NOT NULL, flat,
                                        profile_gap, profile[1], opts ->> 'entity_seed_min_similarity',
                                        CASE WHEN subject_absent THEN subject END, subject) AS d;
    reason := reason || kgrag_private.ambiguity_note(question, linked);
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.route_at(text, vector, text, jsonb) IS
'Private. kgrag.route itself, for the tenant the transaction acts for (tenant: checked against it). On a Citus cluster a delegated function (kgrag_private.delegate_calls): the public function''s one call runs on the worker holding the tenant''s shards.';

CREATE OR REPLACE FUNCTION kgrag.route(
    question_vec vector DEFAULT NULL, question text DEFAULT NULL, options jsonb DEFAULT '{}')
RETURNS TABLE (route text, reason text, seeds text[], linked text[], profile_gap double precision, rule_id text,
               named_seeds text[], subject text, subject_absent boolean, count_rule text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- one statement, its values bound (EXECUTE ... USING): on Citus, one call to the tenant's worker
    RETURN QUERY EXECUTE 'SELECT * FROM kgrag_private.route_at($1, $2, $3, $4)'
       USING kgrag.current_tenant(), question_vec, question, options;
END
$$;
COMMENT ON FUNCTION kgrag.route(vector, text, jsonb) IS
'Returns the route the router picks for a question and why: (route, reason, seeds, linked, profile_gap, rule_id = the kgrag.router_rule that decided, if one did, named_seeds = the seeds the question names by a whole name, not by a fuzzy link). Aggregation markers (kgrag.router_rule, route global) send it to global; no entity named or close to it (entity linking and a peaked entity-similarity profile above the seed floor) to vector; a named subject with a broad-context marker to mixed; a named subject to local. Seeds come from entity linking (the best link first; among links alike, a proper name before a common phrase, then the entity fewer chunks cite), or, when it finds none, from entity vector search above the seed floor when the similarity profile peaks. profile_gap = top-1 minus top-4 entity similarity. question_vec may be NULL when question is given: then only entity linking seeds, and nothing is decided by similarity. subject = the question''s words left once the markers of the rules are out (kgrag_private.question_subject), for an aggregation that names no entity or a count; subject_absent = an aggregation whose subject no chunk holds a word of, and, with a question vector, no chunk or report is near enough (chunk_min_similarity, report_min_similarity) (kgrag_search returns nothing for it; an aggregation with a subject some chunk names ranks the reports against it, one without a subject takes every report by weight); count_rule = the count rule matched (a question asking how many, or for every item: kgrag_search says how many match). A name the question says that several linked entities answer to is named in the reason with its candidates (kgrag_private.ambiguity_note).';

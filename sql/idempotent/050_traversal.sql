-- Traversal: the k-hop walk (WITH RECURSIVE with a string-path cycle guard), fan-out
-- accounting, and the relations along a path.

CREATE OR REPLACE FUNCTION kgrag_private.traversal_timeout(budget_ms integer) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- kgrag_search falls back to vector and lexical search on a 57014 whose message starts with
    -- 'graph traversal' (this one and kgrag_private.walk's path budget), and on no other cancel
    RAISE EXCEPTION 'graph traversal cancelled after % ms (setting khop_timeout_ms, or the search''s search_timeout_ms)', budget_ms
        USING ERRCODE = '57014',
              HINT = 'Walk fewer hops, pass a degree cap, or filter relations: a hub multiplies every hop.';
END
$$;
COMMENT ON FUNCTION kgrag_private.traversal_timeout(integer) IS
'Private. Never returns: raises SQLSTATE 57014 (query_canceled) when a traversal exceeds its time budget.';

CREATE OR REPLACE FUNCTION kgrag_private.twin_key(id text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.regexp_replace(id, '~[^@]*', '')
$$;
COMMENT ON FUNCTION kgrag_private.twin_key(text) IS
'Private. Returns an entity id without its audience mark ("service:auth service~hr" -> "service:auth service"; a namesake''s mark stays): an entity of the shared graph and its twins in audiences'' graphs have one twin key (kgrag.resolve_entities, kgrag_private.with_twins, kgrag_private.ambiguity_note).';

CREATE OR REPLACE FUNCTION kgrag.resolve_entities(names text[]) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    given text;
    found text[];
    resolved text[] := '{}';
BEGIN
    IF cardinality(names) > 100 THEN
        RAISE EXCEPTION 'at most 100 entities, got %', cardinality(names) USING ERRCODE = '22023';
    END IF;
    FOREACH given IN ARRAY COALESCE(names, '{}') LOOP
        CONTINUE WHEN given IS NULL;
        -- (an entity of an audience's graph only for a session that sees it, as the policy: said
        -- here too, for the curation functions run as the schema owner, whom a superuser bypasses)
        IF EXISTS (SELECT 1 FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.entity_id = given)
           AND (strpos(given, '~') = 0 OR kgrag_private.may_see(t, kgrag_private.id_access(given))) THEN
            found := ARRAY[given];
        ELSE  -- a name or an alias, whatever the case and the accents
            found := ARRAY(SELECT DISTINCT a.entity_id FROM kgrag.alias AS a
                            WHERE a.tenant_id = t AND a.alias_fold = kgrag.canonical_name(given)
                              AND (strpos(a.entity_id, '~') = 0 OR kgrag_private.may_see(t, kgrag_private.id_access(a.entity_id)))
                            ORDER BY 1 LIMIT 11);
        END IF;
        -- an entity of the shared graph and its twins in the audiences the session sees (the same
        -- id marked with an audience, kgrag_private.id_access) are one name: the shared one answers
        -- (kgrag_private.with_twins adds the twins where a walk starts)
        IF cardinality(found) > 1
           AND (SELECT count(DISTINCT kgrag_private.twin_key(x)) FROM unnest(found) AS x) = 1 THEN
            found := ARRAY(SELECT x FROM unnest(found) AS x ORDER BY strpos(x, '~') > 0, x COLLATE "C" LIMIT 1);
        END IF;
        IF cardinality(found) = 0 THEN
            RAISE EXCEPTION 'no entity is named %', quote_literal(given)
                USING ERRCODE = '22023',
                      HINT = 'Names and aliases match whatever the case and accents; find one with SELECT * FROM kgrag.entities WHERE name ILIKE ''%...%''.';
        ELSIF cardinality(found) > 1 THEN
            RAISE EXCEPTION 'the name % is ambiguous: %', quote_literal(given),
                (SELECT string_agg(format('%s (%s, %s)', e.name, e.type, e.entity_id), '; ' ORDER BY e.entity_id)
                   FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.entity_id = ANY (found[1:10]))
                  || CASE WHEN cardinality(found) > 10 THEN '; ...' ELSE '' END
                USING ERRCODE = '22023', HINT = 'Give the entity_id of the one you mean.';
        END IF;
        IF NOT found[1] = ANY (resolved) THEN
            resolved := resolved || found[1];
        END IF;
    END LOOP;
    RETURN resolved;
END
$$;
COMMENT ON FUNCTION kgrag.resolve_entities(text[]) IS
'Returns the entity ids of up to 100 entities given by id, name or alias (a name or alias matches whatever the case and the accents), in the order given, once each. A name of an entity of the shared graph and of its twins in the audiences the session sees (kgrag_private.id_access) gives the shared one (else the first twin by id). A name no entity has, or one that several entities have (the error lists them), raises SQLSTATE 22023. What kgrag.k_hop, kgrag.fanout, kgrag.neighbourhood and the search option seed_entities accept.';

CREATE OR REPLACE FUNCTION kgrag_private.with_twins(ids text[]) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    -- A session that holds no group sees no twin: nothing to read (a tenant without audiences).
    IF cardinality(COALESCE(ids, '{}')) = 0 OR kgrag_private.groups_for(t) = '{}' THEN
        RETURN ids;
    END IF;
    -- twins share their name (an alias each): found through the alias index, kept where the ids
    -- are one id but for the audience mark; the policy shows those of the audiences it sees
    -- (each seed's name looked up on its own, OFFSET 0: as a join the planner read every alias)
    RETURN ids || ARRAY(
        SELECT DISTINCT x.entity_id FROM kgrag.entity AS e
         CROSS JOIN LATERAL (SELECT a.entity_id FROM kgrag.alias AS a
                              WHERE a.tenant_id = t AND a.alias_fold = kgrag.canonical_name(e.name) OFFSET 0) AS x
         WHERE e.tenant_id = t AND e.entity_id = ANY (ids) AND x.entity_id <> ALL (ids)
           AND kgrag_private.twin_key(x.entity_id) = kgrag_private.twin_key(e.entity_id)
         ORDER BY 1);
END
$$;
COMMENT ON FUNCTION kgrag_private.with_twins(text[]) IS
'Private. Returns the entity ids given followed by their twins the session sees: the same id marked with another audience, or unmarked ("service:auth service" and "service:auth service~hr", kgrag_private.id_access), found through their shared name. Where a walk starts (kgrag.k_hop, kgrag.personalized_pagerank, the search option seed_entities), what an audience''s documents say of an entity of the shared graph is walked for the audience''s holders. A session holding no group reads nothing.';

CREATE OR REPLACE FUNCTION kgrag_private.walk_filter(as_of timestamptz, history boolean, min_confidence double precision)
RETURNS TABLE (at timestamptz, min_conf double precision, guarded boolean)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    min_conf := COALESCE(min_confidence, kgrag.setting('walk_min_confidence')::float8, 0);
    IF min_conf = 'NaN' OR min_conf NOT BETWEEN 0 AND 1 THEN
        RAISE EXCEPTION 'min_confidence must be between 0 and 1, got %', min_conf USING ERRCODE = '22023';
    END IF;
    -- current facts unless the caller asks for another time (as_of) or for every time (history)
    at := CASE WHEN as_of IS NOT NULL THEN as_of WHEN COALESCE(history, false) THEN NULL ELSE now() END;
    -- A co-occurrence may have to be held back (kgrag_private.pair_walkable) only where some
    -- stated relation is not walked: a weak one under a confidence floor, one dated (one probe of
    -- edge_dated_idx, of relation_evidence_dated_idx: a dated sentence beside an undated one),
    -- denied (relation_evidence_negated_idx) or rejected by a curator (curation_pkey).
    guarded := min_conf > 0
               OR (at IS NOT NULL AND (EXISTS (SELECT 1 FROM kgrag.edge AS z
                                                WHERE z.tenant_id = t AND z.rel <> 'CO_OCCURS'
                                                  AND (z.valid_from IS NOT NULL OR z.valid_to IS NOT NULL))
                                       OR EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r
                                                   WHERE r.tenant_id = t AND NOT r.negated
                                                     AND (r.valid_from IS NOT NULL OR r.valid_to IS NOT NULL))))
               OR EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r WHERE r.tenant_id = t AND r.negated)
               OR EXISTS (SELECT 1 FROM kgrag.curation AS c WHERE c.tenant_id = t AND c.kind = 'reject_relation');
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.walk_filter(timestamptz, boolean, double precision) IS
'Private. Returns which relations a walk follows: at, the time they must hold at (as_of; else now(), the current facts; NULL, every time, when history is true and no as_of is given), min_conf (min_confidence, else the setting walk_min_confidence; 22023 outside 0..1), and guarded (whether some stated relation of the tenant may not be walked: min_conf above 0, a dated relation, a denied one, a curator''s rejection; then a co-occurrence is checked: kgrag_private.pair_walkable). A walk follows an edge whose confidence >= min_conf, valid at at (valid_from <= at < valid_to, a missing bound open), and, for a co-occurrence, whose pair is walkable.';

CREATE OR REPLACE FUNCTION kgrag_private.held_back(t text, x text, chunk text, at timestamptz, min_conf double precision)
RETURNS boolean
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
COST 500  -- (tested after the cheaper conditions of a chunk)
AS $$
    -- (relation_evidence_chunk_idx: the few relations one chunk states)
    SELECT EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r
                    WHERE r.tenant_id = t AND r.chunk_id = chunk AND (r.src = x OR r.dst = x))
       AND NOT EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r
                        WHERE r.tenant_id = t AND r.chunk_id = chunk AND (r.src = x OR r.dst = x) AND NOT r.negated
                          AND (at IS NULL OR ((r.valid_from IS NULL OR r.valid_from <= at)
                                              AND (r.valid_to IS NULL OR r.valid_to > at)))
                          AND EXISTS (SELECT 1 FROM kgrag.edge AS y  -- edge_pkey
                                       WHERE y.tenant_id = t AND y.src = r.src AND y.dst = r.dst
                                         AND y.rel <> 'CO_OCCURS' AND y.confidence >= min_conf))
$$;
COMMENT ON FUNCTION kgrag_private.held_back(text, text, text, timestamptz, double precision) IS
'Private. Returns whether entity x is named in a chunk only in relations a walk at time at (NULL: any time) with the confidence floor min_conf does not follow: the chunk states relations of x, and none stands (each is denied, or of another time, or has no edge of at least min_conf: rejected by a curator, too weak). "Ana worked at Northwind from 2015 to 2019", "Bruno never worked at Globex": Northwind today, Globex at any time.';

CREATE OR REPLACE FUNCTION kgrag_private.pair_holds(t text, a text, b text, at timestamptz) RETURNS boolean
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- no dated relation between them fails to hold (edge_dated_idx), or one between them holds
    -- (a past internship beside a current job: the pair is walked)
    SELECT NOT EXISTS (
               SELECT 1 FROM kgrag.edge AS z
                WHERE z.tenant_id = t AND z.rel <> 'CO_OCCURS' AND (z.valid_from IS NOT NULL OR z.valid_to IS NOT NULL)
                  AND ((z.src = a AND z.dst = b) OR (z.src = b AND z.dst = a))
                  AND NOT ((z.valid_from IS NULL OR z.valid_from <= at) AND (z.valid_to IS NULL OR z.valid_to > at)))
        OR EXISTS (
               SELECT 1 FROM kgrag.edge AS z  -- edge_pkey
                WHERE z.tenant_id = t AND z.rel <> 'CO_OCCURS'
                  AND ((z.src = a AND z.dst = b) OR (z.src = b AND z.dst = a))
                  AND (z.valid_from IS NULL OR z.valid_from <= at) AND (z.valid_to IS NULL OR z.valid_to > at))
$$;
COMMENT ON FUNCTION kgrag_private.pair_holds(text, text, text, timestamptz) IS
'Private. Returns whether the co-occurrence of entities a and b may be walked at time at: false when a dated relation stated between them (either way) does not hold at that time (an employer of the past, or of the future: walking their co-occurrence would re-admit it) and no relation stated between them holds then (a past internship beside a current job keeps the pair).';

CREATE OR REPLACE FUNCTION kgrag_private.pair_walkable(t text, a text, b text, at timestamptz, min_conf double precision)
RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
COST 1000  -- called per edge: a capped walk reads the edges in strength order and stops at the cap
AS $$
DECLARE
    related boolean;  -- a relation between them is walked (an edge not rejected, strong enough, holding)
BEGIN
    IF at IS NOT NULL AND NOT kgrag_private.pair_holds(t, a, b, at) THEN
        RETURN false;
    END IF;
    -- neither states nor is stated anything (four probes): every chunk naming both lends it
    IF NOT EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r WHERE r.tenant_id = t AND r.src = a)
       AND NOT EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r WHERE r.tenant_id = t AND r.dst = a)
       AND NOT EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r WHERE r.tenant_id = t AND r.src = b)
       AND NOT EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r WHERE r.tenant_id = t AND r.dst = b) THEN
        RETURN true;
    END IF;
    related := EXISTS (SELECT 1 FROM kgrag.edge AS y
                        WHERE y.tenant_id = t AND y.rel <> 'CO_OCCURS'
                          AND ((y.src = a AND y.dst = b) OR (y.src = b AND y.dst = a))
                          AND y.confidence >= min_conf
                          AND (at IS NULL OR ((y.valid_from IS NULL OR y.valid_from <= at)
                                              AND (y.valid_to IS NULL OR y.valid_to > at))));
    -- Each chunk of the one cited less probes mention_pkey for the other (a plan kept from call
    -- to call: one probe a chunk, never a hub's thousands of chunks against the other's), which
    -- two capped counts tell (the condition below is the same either way round).
    IF (SELECT count(*) FROM (SELECT 1 FROM kgrag.mention AS m WHERE m.tenant_id = t AND m.entity_id = b LIMIT 64) AS x)
       < (SELECT count(*) FROM (SELECT 1 FROM kgrag.mention AS m WHERE m.tenant_id = t AND m.entity_id = a LIMIT 64) AS x) THEN
        SELECT b, a INTO a, b;
    END IF;
    -- the first chunk naming both that lends it: what it states between them (if anything) is
    -- walked, and it names neither only in relations the walk does not follow
    RETURN EXISTS (
        SELECT 1
          FROM kgrag.mention AS ma
         WHERE ma.tenant_id = t AND ma.entity_id = a
           AND EXISTS (SELECT 1 FROM kgrag.mention AS mb
                        WHERE mb.tenant_id = t AND mb.entity_id = b AND mb.chunk_id = ma.chunk_id)
           AND (related
                OR (NOT EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r  -- relation_evidence_pkey
                                 WHERE r.tenant_id = t AND r.src = a AND r.dst = b AND r.chunk_id = ma.chunk_id)
                    AND NOT EXISTS (SELECT 1 FROM kgrag.relation_evidence AS r
                                     WHERE r.tenant_id = t AND r.src = b AND r.dst = a AND r.chunk_id = ma.chunk_id)))
           AND NOT kgrag_private.held_back(t, a, ma.chunk_id, at, min_conf)
           AND NOT kgrag_private.held_back(t, b, ma.chunk_id, at, min_conf));
END
$$;
COMMENT ON FUNCTION kgrag_private.pair_walkable(text, text, text, timestamptz, double precision) IS
'Private. Returns whether the co-occurrence of entities a and b may be walked at time at (NULL: any time) with the confidence floor min_conf: the pair holds at at (kgrag_private.pair_holds), and neither states nor is stated any relation, or some chunk naming both lends it: (a) it states no relation between them, or one between them is walked (an edge, not rejected by a curator, with confidence >= min_conf, holding at at), and (b) it names neither only in relations the walk does not follow (kgrag_private.held_back: denied, of another time, rejected, too weak). So an expired, future, rejected, denied or too weak relation does not come back through the co-occurrence of the sentence that stated it, nor through another entity that sentence names: an employer of the past is not reached through the current one named beside it, nor a company someone never worked at through the one they do.';

CREATE OR REPLACE FUNCTION kgrag_private.walk_bounds(
    hops integer, degree_cap integer, relations text[], direction text, as_of timestamptz, history boolean,
    min_confidence double precision)
RETURNS TABLE (deadline timestamptz, budget_ms integer, relation_keys text[], at timestamptz,
               min_conf double precision, guarded boolean)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    given jsonb := kgrag_private.settings_of(ARRAY['max_hops', 'khop_timeout_ms']);  -- (one statement)
    max_hops integer := (given -> 'max_hops')::integer;
    search_deadline text := current_setting('kgrag.search_deadline', true);
BEGIN
    IF hops IS NULL OR hops < 0 THEN
        RAISE EXCEPTION 'hops must be >= 0, got %', COALESCE(hops::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF hops > max_hops THEN
        RAISE EXCEPTION 'hops = % is above the maximum of % (setting max_hops)', hops, max_hops
            USING ERRCODE = '22023',
                  HINT = 'Each hop multiplies the work by the mean degree; raise max_hops for a tenant only if you measured it.';
    END IF;
    IF degree_cap IS NOT NULL AND degree_cap NOT BETWEEN 1 AND kgrag.edge_rank_depth() THEN
        RAISE EXCEPTION 'degree_cap must be between 1 and % (setting edge_rank_depth), or NULL for no cap, got %',
            kgrag.edge_rank_depth(), degree_cap USING ERRCODE = '22023';
    END IF;
    IF direction IS NULL OR direction NOT IN ('out', 'in', 'both') THEN
        RAISE EXCEPTION 'direction must be out, in or both, got %', COALESCE(quote_literal(direction), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    budget_ms := (given -> 'khop_timeout_ms')::integer;
    deadline := clock_timestamp() + budget_ms * interval '1 millisecond';
    IF search_deadline <> '' AND search_deadline::timestamptz < deadline THEN
        -- inside kgrag_search, whose whole time has one budget (setting search_timeout_ms)
        deadline := search_deadline::timestamptz;
        budget_ms := greatest(0, (extract(epoch FROM deadline - clock_timestamp()) * 1000)::integer);
    END IF;
    relation_keys := CASE WHEN relations IS NOT NULL
                          THEN ARRAY(SELECT DISTINCT kgrag.relation_key(r) FROM unnest(relations) AS r WHERE r IS NOT NULL) END;
    SELECT f.at, f.min_conf, f.guarded INTO at, min_conf, guarded FROM kgrag_private.walk_filter(as_of, history, min_confidence) AS f;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.walk_bounds(integer, integer, text[], text, timestamptz, boolean, double precision) IS
'Private. Checks a walk''s arguments (hops within max_hops, degree_cap within edge_rank_depth, direction out, in or both, min_confidence within 0..1; 22023 otherwise) and returns its deadline (khop_timeout_ms from now, or the end of the kgrag_search that runs it if sooner), that budget in ms, the relation types as keys (NULL for all), and the relations it follows (at, min_conf, guarded: kgrag_private.walk_filter).';

CREATE OR REPLACE FUNCTION kgrag_private.walk(
    seeds text[], hops integer, degree_cap integer, relations text[], as_of timestamptz, direction text,
    history boolean, min_confidence double precision)
RETURNS TABLE (entity_id text, hop integer, trail text, seed text, steps text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    max_paths integer := kgrag.setting('max_paths_walked')::integer;
    rels text[];
    deadline timestamptz;
    budget_ms integer;
    at timestamptz;
    min_conf double precision;
    guarded boolean;
    walked integer;
BEGIN
    SELECT w.relation_keys, w.deadline, w.budget_ms, w.at, w.min_conf, w.guarded
      INTO rels, deadline, budget_ms, at, min_conf, guarded
      FROM kgrag_private.walk_bounds(hops, degree_cap, relations, direction, as_of, history, min_confidence) AS w;
    -- The branch a direction does not take is a one-time filter that fails, so it is never
    -- scanned; the plan is kept from call to call (a custom plan for each walk cost more to make,
    -- 0.3 ms, than a capped two-hop walk costs to run). CO_OCCURS is stored both ways: walked
    -- out, it needs no reverse branch.
    RETURN QUERY
    WITH RECURSIVE walk(entity_id, hop, trail, seed, steps) AS (
        SELECT e.entity_id, 0, '|' || e.entity_id || '|', e.entity_id, ''
          FROM kgrag.entity AS e
         WHERE e.tenant_id = t AND e.entity_id = ANY (seeds)
        UNION ALL
        SELECT g.next_id, w.hop + 1, w.trail || g.next_id || '|', w.seed, w.steps || g.way
          FROM walk AS w
         CROSS JOIN LATERAL (
               -- the degree cap, per node: its strongest degree_cap edges out (read in strength
               -- order from edge_src_weight_idx), and the edges into it that are among the
               -- strongest degree_cap of their own source (kgrag_private.among_strongest)
               SELECT x.dst AS next_id, '>' AS way, x.src, x.dst, x.rel, x.valid_from, x.valid_to, x.confidence
                 FROM (SELECT y.src, y.dst, y.rel, y.valid_from, y.valid_to, y.confidence FROM kgrag.edge AS y
                        WHERE direction <> 'in' AND y.tenant_id = t AND y.src = w.entity_id
                          -- the cap counts the edges that hold (kgrag_private.walk_filter), not expired ones
                          AND y.confidence >= min_conf
                          AND (at IS NULL OR ((y.valid_from IS NULL OR y.valid_from <= at) AND (y.valid_to IS NULL OR y.valid_to > at)))
                          AND (NOT guarded OR y.rel <> 'CO_OCCURS'
                               -- (the budget checked as each co-occurrence is: a hub has thousands)
                               OR ((clock_timestamp() < deadline OR kgrag_private.traversal_timeout(budget_ms))
                                   AND kgrag_private.pair_walkable(t, y.src, y.dst, at, min_conf)))
                        ORDER BY y.weight DESC, y.dst COLLATE "C", y.rel COLLATE "C"
                        LIMIT degree_cap) AS x
               UNION ALL
               SELECT x.src, '<', x.src, x.dst, x.rel, x.valid_from, x.valid_to, x.confidence
                 FROM kgrag.edge AS x
                WHERE direction <> 'out' AND x.tenant_id = t AND x.dst = w.entity_id
                  AND (direction = 'in' OR x.rel <> 'CO_OCCURS')
                  AND (degree_cap IS NULL OR kgrag_private.among_strongest(t, x.src, x.dst, x.rel, degree_cap))) AS g
         WHERE w.hop < hops
           AND strpos(w.trail, '|' || g.next_id || '|') = 0      -- cycle guard: never revisit
           AND (rels IS NULL OR g.rel = ANY (rels))
           AND g.confidence >= min_conf  -- the relations the walk follows: kgrag_private.walk_filter
           AND (at IS NULL OR ((g.valid_from IS NULL OR g.valid_from <= at) AND (g.valid_to IS NULL OR g.valid_to > at)))
           AND (NOT guarded OR g.rel <> 'CO_OCCURS' OR g.way = '>'  -- (out: checked under the cap)
                OR kgrag_private.pair_walkable(t, g.src, g.dst, at, min_conf))
           AND (clock_timestamp() < deadline OR kgrag_private.traversal_timeout(budget_ms))
    )
    SELECT w.entity_id, w.hop, w.trail, w.seed, w.steps FROM walk AS w LIMIT max_paths + 1;
    GET DIAGNOSTICS walked = ROW_COUNT;
    IF walked > max_paths THEN  -- what follows (the shortest path per node) sorts every path walked
        RAISE EXCEPTION 'graph traversal stopped after % paths (setting max_paths_walked)', max_paths
            USING ERRCODE = '57014',
                  HINT = 'Walk fewer hops, pass a degree cap, or filter relations: a hub multiplies every hop.';
    END IF;
    PERFORM set_config('kgrag.paths_walked', walked::text, true);  -- read back by kgrag_search's log
END
$$;
COMMENT ON FUNCTION kgrag_private.walk(text[], integer, integer, text[], timestamptz, text, boolean, double precision) IS
'Private. Returns every simple path walked from the seeds (entity ids), one row per path end: (entity_id, hop, trail = ''|a|b|c|'', seed, steps = one character per step, > along the edge, < against it), and leaves the number of paths in the setting kgrag.paths_walked. The recursive CTE behind kgrag.fanout, which counts paths (kgrag.k_hop walks breadth-first: kgrag_private.frontier). direction: out follows edges from src to dst, in from dst to src, both either way. Relation types match whatever their case (kgrag.relation_key); the relations followed are those that hold at as_of (else now, unless history) with a confidence of at least min_confidence (kgrag_private.walk_filter). Bounded: cancelled (57014) past khop_timeout_ms (or the end of the kgrag_search that runs it) and past max_paths_walked paths.';

CREATE OR REPLACE FUNCTION kgrag_private.frontier_step(
    front text[], visited text[], h integer, degree_cap integer, rels text[], at timestamptz, direction text,
    deadline timestamptz, budget_ms integer, paths_left bigint, min_conf double precision, guarded boolean)
RETURNS TABLE (next_front text[], reached text[], step_paths bigint)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan  -- the arguments fold: the index that fits each walk
AS $$
DECLARE
    t text := kgrag.current_tenant();
    -- the ids apart: a join on split_part() could not use the edge index under the tenant policy
    -- (split_part is not leakproof)
    ids text[] := ARRAY(SELECT split_part(x.path, '|', -2) FROM unnest(front) WITH ORDINALITY AS x(path, o) ORDER BY x.o);
BEGIN
    -- Every edge out of the frontier (in this custom plan the branch a direction does not take is
    -- a constant false; CO_OCCURS is stored both ways), at most paths_left paths. The frontier is
    -- in trail order, so of the entities not reached before each keeps the path through the first
    -- frontier entity linking to it, and '<' before '>' for the same one: the first (trail, steps)
    -- in byte order, the path kgrag_private.walk's enumeration ranks first. Integers are
    -- compared, not the paths.
        SELECT COALESCE(array_agg(left(p.path, h - 1) || CASE WHEN n.best % 2 = 1 THEN '>' ELSE '<' END
                                  || substr(p.path, h) || n.next_id || '|'
                                  ORDER BY n.best / 2, n.next_id || '|' COLLATE "C") FILTER (WHERE n.fresh), '{}'),
               COALESCE(array_agg(n.next_id) FILTER (WHERE n.fresh), '{}'),
               COALESCE(sum(n.paths), 0)
          INTO next_front, reached, step_paths
          FROM (SELECT g.next_id, g.best, g.paths, v.id IS NULL AS fresh
                  FROM (SELECT c.next_id, min(c.o * 2 + c.forward) AS best, count(*) AS paths
                          FROM (SELECT x.dst AS next_id, f.o, 1 AS forward
                                  FROM unnest(ids) WITH ORDINALITY AS f(id, o)
                                 CROSS JOIN LATERAL (  -- the strongest degree_cap edges out, as in walk()
                                       SELECT y.src, y.dst, y.rel, y.valid_from, y.valid_to, y.confidence FROM kgrag.edge AS y
                                        WHERE y.tenant_id = t AND y.src = f.id
                                          AND y.confidence >= min_conf  -- the cap counts the edges that hold
                                          AND (at IS NULL OR ((y.valid_from IS NULL OR y.valid_from <= at)
                                                              AND (y.valid_to IS NULL OR y.valid_to > at)))
                                          AND (NOT guarded OR y.rel <> 'CO_OCCURS'
                                               OR ((clock_timestamp() < deadline OR kgrag_private.traversal_timeout(budget_ms))
                                                   AND kgrag_private.pair_walkable(t, y.src, y.dst, at, min_conf)))
                                        ORDER BY y.weight DESC, y.dst COLLATE "C", y.rel COLLATE "C"
                                        LIMIT degree_cap) AS x
                                 WHERE direction <> 'in'
                                   AND (rels IS NULL OR x.rel = ANY (rels))
                                   AND x.confidence >= min_conf  -- as in walk()
                                   AND (at IS NULL OR ((x.valid_from IS NULL OR x.valid_from <= at)
                                                       AND (x.valid_to IS NULL OR x.valid_to > at)))
                                   AND (clock_timestamp() < deadline OR kgrag_private.traversal_timeout(budget_ms))
                                UNION ALL
                                SELECT x.src, f.o, 0
                                  FROM unnest(ids) WITH ORDINALITY AS f(id, o)
                                  JOIN kgrag.edge AS x ON x.tenant_id = t AND x.dst = f.id
                                 WHERE direction <> 'out' AND (direction = 'in' OR x.rel <> 'CO_OCCURS')
                                   AND (degree_cap IS NULL OR kgrag_private.among_strongest(t, x.src, x.dst, x.rel, degree_cap))
                                   AND (rels IS NULL OR x.rel = ANY (rels))
                                   AND x.confidence >= min_conf  -- as in walk()
                                   AND (at IS NULL OR ((x.valid_from IS NULL OR x.valid_from <= at)
                                                       AND (x.valid_to IS NULL OR x.valid_to > at)))
                                   AND (NOT guarded OR x.rel <> 'CO_OCCURS' OR kgrag_private.pair_walkable(t, x.src, x.dst, at, min_conf))
                                   AND (clock_timestamp() < deadline OR kgrag_private.traversal_timeout(budget_ms))
                                 LIMIT paths_left) AS c
                         GROUP BY c.next_id) AS g
                  LEFT JOIN unnest(visited) AS v(id) ON v.id = g.next_id) AS n
          -- joined, not subscripted: the i-th element of a text array is found by walking it
          LEFT JOIN unnest(front) WITH ORDINALITY AS p(path, o) ON n.fresh AND p.o = n.best / 2;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.frontier_step(text[], text[], integer, integer, text[], timestamptz, text, timestamptz, integer, bigint, double precision, boolean) IS
'Private. One hop of kgrag_private.frontier: from the paths of the frontier (steps || trail, in trail byte order) at hop h - 1, the paths of the entities not visited before that the edges out of it reach (next_front, each entity by its first path in byte order), those entities (reached), and the edges followed (step_paths, kept or not), at most paths_left; only the relations that hold at at with a confidence of at least min_conf (kgrag_private.walk_filter). Cancelled (57014) past the deadline.';

CREATE OR REPLACE FUNCTION kgrag_private.frontier(
    seeds text[], hops integer, degree_cap integer, relations text[], as_of timestamptz, direction text,
    history boolean, min_confidence double precision)
RETURNS TABLE (entity_id text, hop integer, trail text, seed text, steps text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan  -- the arguments fold: the index that fits each walk
AS $$
DECLARE
    t text := kgrag.current_tenant();
    max_paths integer := kgrag.setting('max_paths_walked')::integer;
    bounds record;
    -- The frontier: the entities first reached at the last hop, each by its first shortest path
    -- written as steps || trail ('><|seed|a|b|': the steps never hold '|'), in trail byte order.
    front text[];
    visited text[];
    step record;
    examined bigint := 0;  -- paths extended by one edge, kept or not: what the budget counts
    h integer := 0;
BEGIN
    SELECT * INTO bounds
      FROM kgrag_private.walk_bounds(hops, degree_cap, relations, direction, as_of, history, min_confidence) AS w;
    SELECT COALESCE(array_agg('|' || e.entity_id || '|' ORDER BY e.entity_id || '|' COLLATE "C"), '{}'),
           COALESCE(array_agg(e.entity_id), '{}')
      INTO front, visited
      FROM kgrag.entity AS e
     WHERE e.tenant_id = t AND e.entity_id = ANY (seeds);
    WHILE TRUE LOOP
        RETURN QUERY SELECT split_part(f.path, '|', -2), h, substr(f.path, h + 1), split_part(f.path, '|', 2), left(f.path, h)
                       FROM unnest(front) AS f(path);
        EXIT WHEN h >= hops OR cardinality(front) = 0;
        h := h + 1;
        IF clock_timestamp() >= bounds.deadline THEN
            PERFORM kgrag_private.traversal_timeout(bounds.budget_ms);
        END IF;
        SELECT * INTO step FROM kgrag_private.frontier_step(front, visited, h, degree_cap, bounds.relation_keys, bounds.at,
                                                            direction, bounds.deadline, bounds.budget_ms,
                                                            max_paths - examined + 1, bounds.min_conf, bounds.guarded);
        front := step.next_front;
        examined := examined + step.step_paths;
        IF examined > max_paths THEN
            RAISE EXCEPTION 'graph traversal stopped after % paths (setting max_paths_walked)', max_paths
                USING ERRCODE = '57014',
                      HINT = 'Walk fewer hops, pass a degree cap, or filter relations: a hub multiplies every hop.';
        END IF;
        visited := visited || step.reached;
    END LOOP;
    PERFORM set_config('kgrag.paths_walked', examined::text, true);  -- read back by kgrag_search's log
END
$$;
COMMENT ON FUNCTION kgrag_private.frontier(text[], integer, integer, text[], timestamptz, text, boolean, double precision) IS
'Private. The breadth-first walk behind kgrag.k_hop (where no degree cap bounds the paths): one row per entity reached, at its shortest hop, with the first of its shortest paths by (trail, steps) in byte order, the same row kgrag_private.walk''s enumeration ranks first (same arguments and columns). Each hop extends only the paths of the entities first reached at the hop before, so the work is the edges out of the reached entities, not the number of paths. Leaves the paths extended (every edge followed, kept or not) in kgrag.paths_walked. Bounded: cancelled (57014) past khop_timeout_ms (or the end of the kgrag_search that runs it) and past max_paths_walked paths extended.';

CREATE OR REPLACE FUNCTION kgrag.k_hop(
    seeds text[], hops integer DEFAULT 2, degree_cap integer DEFAULT NULL, relations text[] DEFAULT NULL,
    as_of timestamptz DEFAULT NULL, direction text DEFAULT 'out', history boolean DEFAULT false,
    min_confidence double precision DEFAULT NULL)
RETURNS TABLE (entity_id text, hop integer, path text[], seed text, directions text[])
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- Two walks give the same rows (tests/routes/test_frontier.py): the enumeration of every simple path
    -- is the cheaper where a degree cap bounds the paths (each entity's strongest degree_cap
    -- edges out, at most 10,000 paths in all); breadth-first, whose work is the edges
    -- followed, everywhere else.
    WITH s AS MATERIALIZED (
        SELECT r.ids, COALESCE(direction = 'out' AND degree_cap > 0 AND hops BETWEEN 0 AND 32
                               AND cardinality(r.ids) * (SELECT sum(power(degree_cap::float8, i)) FROM generate_series(0, hops) AS i)
                                   <= 10000, false) AS enumerate
          FROM (SELECT kgrag_private.with_twins(kgrag.resolve_entities(seeds)) AS ids) AS r
    )
    SELECT w.entity_id, w.hop, string_to_array(btrim(w.trail, '|'), '|'), w.seed,
           string_to_array(rtrim(replace(replace(w.steps, '>', 'out,'), '<', 'in,'), ','), ',')
      FROM (SELECT f.* FROM s CROSS JOIN LATERAL kgrag_private.frontier(s.ids, hops, degree_cap, relations, as_of, direction, history, min_confidence) AS f
             WHERE NOT s.enumerate
            UNION ALL
            SELECT x.entity_id, x.hop, x.trail, x.seed, x.steps
              FROM (SELECT p.*, row_number() OVER (PARTITION BY p.entity_id ORDER BY p.hop, p.trail COLLATE "C", p.steps) AS shortest
                      FROM s CROSS JOIN LATERAL kgrag_private.walk(s.ids, hops, degree_cap, relations, as_of, direction, history, min_confidence) AS p
                     WHERE s.enumerate) AS x
             WHERE x.shortest = 1) AS w
     ORDER BY w.hop, w.entity_id COLLATE "C"
$$;
COMMENT ON FUNCTION kgrag.k_hop(text[], integer, integer, text[], timestamptz, text, boolean, double precision) IS
'Returns the entities within hops edges of the seeds (entity ids, names or aliases, see kgrag.resolve_entities, with their twins in the audiences the session sees: kgrag_private.with_twins), one row each at its shortest hop: (entity_id, hop, path from the seed, seed, directions: out or in for each step); the seeds themselves come back at hop 0. direction: out (the default) follows edges from src to dst, in from dst to src ("who signed X?": k_hop(ARRAY[''X''], 1, relations => ARRAY[''signed''], direction => ''in'')), both either way. degree_cap keeps each edge that is among the degree_cap strongest of its source (by weight, ties by dst then rel; counted over every relation type, in the stored direction, out of a node among the edges that hold at the walk''s time and confidence; at most kgrag.edge_rank_depth()), relations keeps those relation types whatever their case. The walk follows the current facts: a relation with a validity (valid_from, valid_to) is followed only while it holds now, or at as_of when given (history => true: at any time), and a co-occurrence is followed only where a chunk naming both lends it (kgrag_private.pair_walkable): not the sentence of a relation between them that is not followed (expired, of the future, rejected by a curator, denied, below min_confidence), nor a sentence that names one of them only in relations of another time (an expired employer is not reached through it, nor through the current one named beside it); a stated relation below min_confidence (default setting walk_min_confidence) is not followed. Ties between equally short paths go to the lexicographically first path. Refuses hops above the setting max_hops; cancelled after khop_timeout_ms.';

CREATE OR REPLACE FUNCTION kgrag.fanout(seed text, hops integer, degree_cap integer DEFAULT NULL, direction text DEFAULT 'out')
RETURNS TABLE (hop integer, nodes bigint, new_nodes bigint, paths bigint)
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    WITH w AS MATERIALIZED (
        SELECT p.entity_id, p.hop FROM kgrag_private.walk(kgrag.resolve_entities(ARRAY[seed]), hops, degree_cap, NULL, NULL, direction, true, 0) AS p
    ), first_seen AS (
        SELECT f.entity_id, min(f.hop) AS hop FROM w AS f GROUP BY f.entity_id
    )
    SELECT w.hop, count(DISTINCT w.entity_id), COALESCE(max(n.new_nodes), 0), count(*)
      FROM w
      LEFT JOIN (SELECT s.hop, count(*) AS new_nodes FROM first_seen AS s GROUP BY s.hop) AS n ON n.hop = w.hop
     GROUP BY w.hop
     ORDER BY w.hop
$$;
COMMENT ON FUNCTION kgrag.fanout(text, integer, integer, text) IS
'Returns, per hop from one seed (an entity id, name or alias): nodes (distinct entities at the end of some path of that length), new_nodes (entities reached for the first time at that hop) and paths (simple paths walked, over every edge whatever its validity and confidence). paths growing much faster than nodes is a hub blowing up the query; compare with and without degree_cap.';

CREATE OR REPLACE FUNCTION kgrag_private.path_length(path text[]) RETURNS integer
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    longest integer := kgrag.setting('max_hops')::integer + 1;
BEGIN
    IF cardinality(path) > longest THEN
        RAISE EXCEPTION 'a path of % entities is longer than any walk (at most % entities: setting max_hops)',
            cardinality(path), longest USING ERRCODE = '22023';
    END IF;
    RETURN COALESCE(cardinality(path), 0);
END
$$;
COMMENT ON FUNCTION kgrag_private.path_length(text[]) IS
'Private. Returns the number of entities in a path; raises SQLSTATE 22023 for a path longer than a walk can be (setting max_hops + 1), which bounds kgrag.path_relations.';

CREATE OR REPLACE FUNCTION kgrag_private.paths_relations(
    paths jsonb, as_of timestamptz, history boolean, min_confidence double precision)
RETURNS TABLE (path_no integer, step integer, src text, rel text, dst text, valid_from timestamptz, valid_to timestamptz)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan  -- see kgrag_private.search_at: no generic plan of a one-shard read
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    f record;
BEGIN
    IF jsonb_typeof(paths) IS DISTINCT FROM 'array' OR jsonb_array_length(paths) > 1000 THEN
        RAISE EXCEPTION 'paths must be a jsonb array of at most 1,000 paths' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO f FROM kgrag_private.walk_filter(as_of, history, min_confidence);
    -- every path at most max_hops + 1 entities long: the longest one is checked
    PERFORM kgrag_private.path_length(ARRAY(SELECT jsonb_array_elements_text(p.path)))
       FROM jsonb_array_elements(paths) AS p(path)
      WHERE jsonb_typeof(p.path) = 'array'
      ORDER BY jsonb_array_length(p.path) DESC LIMIT 1;
    -- one statement for every step of every path (on a Citus worker each statement costs a plan
    -- of its own), an indexed lookup per step
    RETURN QUERY
    SELECT p.o::integer, s.i, x.src, x.rel, x.dst, x.valid_from, x.valid_to
      FROM jsonb_array_elements(paths) WITH ORDINALITY AS p(path, o)
     CROSS JOIN LATERAL generate_series(1, jsonb_array_length(p.path) - 1) AS s(i)
     CROSS JOIN LATERAL (
           SELECT y.src, y.rel, y.dst, y.valid_from, y.valid_to FROM kgrag.edge AS y
            WHERE y.tenant_id = t
              AND ((y.src = p.path ->> (s.i - 1) AND y.dst = p.path ->> s.i)
                   OR (y.src = p.path ->> s.i AND y.dst = p.path ->> (s.i - 1) AND y.rel <> 'CO_OCCURS'))
              AND (y.rel = 'CO_OCCURS'  -- the relations a walk at the same time follows (kgrag_private.walk_filter)
                   OR y.confidence >= f.min_conf
                      AND (f.at IS NULL OR ((y.valid_from IS NULL OR y.valid_from <= f.at)
                                            AND (y.valid_to IS NULL OR y.valid_to > f.at))))
            ORDER BY (y.rel = 'CO_OCCURS'), y.weight DESC, y.rel, y.src
            LIMIT 1) AS x
     WHERE jsonb_typeof(p.path) = 'array'
     ORDER BY p.o, s.i;
END
$$;
COMMENT ON FUNCTION kgrag_private.paths_relations(jsonb, timestamptz, boolean, double precision) IS
'Private. kgrag.path_relations for several paths at once (paths: a jsonb array of arrays of entity ids, at most 1,000; an element that is not an array is skipped), in one statement: (path_no = the path''s place in paths, 1-based, step, src, rel, dst, valid_from, valid_to). kgrag_private.entity_rows reads the relations of every entity it shows with one call.';

CREATE OR REPLACE FUNCTION kgrag.path_relations(
    path text[], as_of timestamptz DEFAULT NULL, history boolean DEFAULT false, min_confidence double precision DEFAULT NULL)
RETURNS TABLE (step integer, src text, rel text, dst text, valid_from timestamptz, valid_to timestamptz)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    RETURN QUERY
    SELECT r.step, r.src, r.rel, r.dst, r.valid_from, r.valid_to
      FROM kgrag_private.paths_relations(jsonb_build_array(to_jsonb(path)), as_of, history, min_confidence) AS r
     ORDER BY r.step;
    -- every element counted, whatever the array's shape (paths_relations counts a path's own)
    PERFORM kgrag_private.path_length(path);
END
$$;
COMMENT ON FUNCTION kgrag.path_relations(text[], timestamptz, boolean, double precision) IS
'Returns, for each step of a path of entity ids (as kgrag.k_hop gives it), the relation that links the two entities: the strongest stated relation in its own direction that a walk with the same as_of, history and min_confidence follows (by default: one that holds now), else their co-occurrence: (step, src, rel, dst, valid_from, valid_to; the validity NULL where the relation has none).';

CREATE OR REPLACE FUNCTION kgrag.neighbourhood(
    seeds text[], hops integer DEFAULT 2, degree_cap integer DEFAULT NULL, relations text[] DEFAULT NULL,
    as_of timestamptz DEFAULT NULL, direction text DEFAULT 'out', history boolean DEFAULT false,
    min_confidence double precision DEFAULT NULL)
RETURNS TABLE (entity_id text, name text, type text, hop integer, path text[], seed text, src text, rel text, dst text,
               evidence_chunk_id text, evidence_quote text, valid_from timestamptz, valid_to timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    RETURN QUERY
    SELECT k.entity_id, e.name, e.type, k.hop, k.path, k.seed, s.src, s.rel, s.dst, g.evidence_chunk_id, g.evidence_quote,
           s.valid_from, s.valid_to
      FROM kgrag.k_hop(seeds, hops, degree_cap, relations, as_of, direction, history, min_confidence) AS k
      JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = k.entity_id
      LEFT JOIN LATERAL kgrag.path_relations(k.path[k.hop:k.hop + 1], as_of, history, min_confidence) AS s ON k.hop > 0
      LEFT JOIN kgrag.edge AS g ON g.tenant_id = t AND g.src = s.src AND g.dst = s.dst AND g.rel = s.rel
     ORDER BY k.hop, k.entity_id COLLATE "C";
END
$$;
COMMENT ON FUNCTION kgrag.neighbourhood(text[], integer, integer, text[], timestamptz, text, boolean, double precision) IS
'Returns kgrag.k_hop''s answer (seeds by id, name or alias; the same options) with each entity''s name and type and the last step of its shortest path, the edge that reached it, in its own direction, with its evidence and validity: (entity_id, name, type, hop, path, seed, src, rel, dst, evidence_chunk_id, evidence_quote, valid_from, valid_to; the step is NULL for the seeds). By default the current facts: see kgrag.k_hop for as_of, history and min_confidence. What pgkgrag graph draws, in one call.';

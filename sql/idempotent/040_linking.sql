-- Entity linking: from the words of a question to entity ids, from the strictest match to the
-- most tolerant. Every contiguous span of up to twelve words of the question is tried (squashed
-- forms and fuzzy matches of the shorter ones only), so a name is found inside a sentence and
-- not only when it is the whole question.

CREATE OR REPLACE FUNCTION kgrag_private.fuzzy_aliases(
    form text, min_trigram double precision, min_ratio double precision, most integer,
    common text[] DEFAULT '{}', frequency real[] DEFAULT '{}')
RETURNS TABLE (entity_id text, contained double precision, similarity double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    grams text[] := kgrag.trigrams(form);
    probe text[] := kgrag_private.probe_trigrams(form, min_trigram, common, frequency);
    pieces text[] := kgrag_private.alias_pieces(form, min_ratio);
    found text[] := '{}';
    hit record;
BEGIN
    -- The candidates: the aliases sharing a probe trigram (GIN index), and those equal to a piece
    -- of the form (btree index). They are read as a stream: once more than `most` entities have
    -- an alias that passes, the form is ambiguous (kgrag.link_entities drops it) and no further
    -- candidate is read. Names alike by the thousand ("Team 02289", "Team 02288", ...) cost the
    -- first few that pass, not every alias sharing their trigrams.
    FOR hit IN
        SELECT c.entity_id, c.contained, c.similarity
          FROM (SELECT a.entity_id,
                       CASE WHEN length(a.alias_sq) >= 4
                                 AND (strpos(form, a.alias_sq) > 0 OR strpos(a.alias_sq, form) > 0)
                            THEN least(length(a.alias_sq), length(form))::float8
                                 / greatest(length(a.alias_sq), length(form))
                            ELSE 0 END AS contained,
                       -- Jaccard, |shared| / |either|, inline: a function call per candidate costs more than it does
                       COALESCE(x.shared::float8 / NULLIF(cardinality(a.trigrams) + cardinality(grams) - x.shared, 0), 0)
                           AS similarity
                  FROM (SELECT y.entity_id, y.alias_sq, y.trigrams FROM kgrag.alias AS y
                         WHERE y.tenant_id = t AND y.trigrams && probe
                        UNION ALL
                        SELECT y.entity_id, y.alias_sq, y.trigrams FROM kgrag.alias AS y
                         WHERE y.tenant_id = t AND y.alias_sq = ANY (pieces)) AS a
                 -- a name of an audience's graph, for a session that sees the audience (as the policy)
                 CROSS JOIN LATERAL (SELECT pg_catalog.strpos(a.entity_id, '~') = 0
                                            OR kgrag_private.may_see(t, kgrag_private.id_access(a.entity_id)) AS seen) AS v
                 CROSS JOIN LATERAL (SELECT count(*) AS shared FROM unnest(a.trigrams) AS g WHERE g = ANY (grams)) AS x
                 -- both tests need lengths within a factor of two (ratio >= 0.5, Jaccard >= 0.5)
                 WHERE length(a.alias_sq) BETWEEN length(form) / 2 AND length(form) * 2 AND v.seen) AS c
         WHERE c.contained >= min_ratio OR c.similarity >= min_trigram
    LOOP
        IF NOT hit.entity_id = ANY (found) THEN
            found := found || hit.entity_id;
        END IF;
        entity_id := hit.entity_id;
        contained := hit.contained;
        similarity := hit.similarity;
        RETURN NEXT;
        EXIT WHEN cardinality(found) > most;
    END LOOP;
END
$$;
GRANT CREATE ON SCHEMA kgrag_private TO kgrag_probe;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag_private.fuzzy_aliases(text, double precision, double precision, integer, text[], real[]) OWNER TO kgrag_probe;
REVOKE CREATE ON SCHEMA kgrag_private FROM kgrag_probe;
REVOKE EXECUTE ON FUNCTION kgrag_private.fuzzy_aliases(text, double precision, double precision, integer, text[], real[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.fuzzy_aliases(text, double precision, double precision, integer, text[], real[])
    TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag_private.fuzzy_aliases(text, double precision, double precision, integer, text[], real[]) IS
'Private. Returns the current tenant''s aliases close to a squashed span, form: (entity_id, contained = the length ratio when one holds the other and the alias has 4 characters or more, else 0; similarity = trigram Jaccard), those with contained >= min_ratio or similarity >= min_trigram. Candidates: the aliases sharing one of kgrag_private.probe_trigrams (alias_trigrams_idx; common and frequency, the tenant''s commonest name trigrams from kgrag.alias_trigram_stats, choose the rarest) or equal to one of kgrag_private.alias_pieces (alias_sq_idx). Stops after the first alias of the (most + 1)-th entity that passes: the caller counts more than most entities as ambiguous. SECURITY DEFINER, owned by kgrag_probe, on the allow-list because && is not leakproof: under the tenant policy the GIN index on trigrams could not be used. It filters on kgrag.current_tenant() itself (raises when unset), and keeps the names of an audience''s graph for a session that sees it (kgrag_private.may_see), as the policy does.';

CREATE OR REPLACE FUNCTION kgrag_private.probe_trigrams(
    form text, min_trigram double precision, common text[] DEFAULT '{}', frequency real[] DEFAULT '{}')
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- An alias the weak tiers of kgrag.link_entities keep, apart from one inside form (found by
    -- kgrag_private.alias_pieces), shares one of these trigrams with form:
    -- - Jaccard >= min_trigram needs ceil(min_trigram x |A|) of form's |A| trigrams shared, so any
    --   |A| - that + 1 of them meet it: the rarest are taken (by frequency, the share of aliases
    --   holding a trigram; one not listed in common is rarer than any listed), so the index reads
    --   the shortest lists; without statistics, the trigrams inside the word first (the padded
    --   ones at its edges are the ones every name starting with the same letter shares);
    -- - an alias holding form holds every trigram inside form: the rarest of those is added.
    WITH a AS (
        SELECT kgrag.squash(form) AS sq, kgrag.trigrams(form) AS grams
    ), inner_grams AS (
        SELECT i, substr(a.sq, i, 3) AS g FROM a, generate_series(1, length(a.sq) - 2) AS i
    ), ordered AS (
        SELECT x.g, x.edge, row_number() OVER (ORDER BY x.share, x.edge, x.pos, x.g COLLATE "C") AS o
          FROM (SELECT u.g, (min(n.i) IS NULL) AS edge, COALESCE(min(n.i), 0) AS pos,
                       COALESCE(frequency[array_position(common, u.g)], 0) AS share
                  FROM a CROSS JOIN unnest(a.grams) AS u(g)
                  LEFT JOIN inner_grams AS n ON n.g = u.g
                 GROUP BY u.g) AS x
    ), step AS (
        SELECT cardinality(a.grams) - greatest(1, ceil(min_trigram * cardinality(a.grams))::integer) + 1 AS take
          FROM a
    )
    SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM inner_grams) THEN (SELECT a.grams FROM a)
                ELSE ARRAY(SELECT DISTINCT y.g FROM (
                         SELECT o.g FROM ordered AS o, step AS s WHERE o.o <= s.take
                         UNION ALL
                         (SELECT o.g FROM ordered AS o WHERE NOT o.edge ORDER BY o.o LIMIT 1)
                     ) AS y ORDER BY 1) END
$$;
COMMENT ON FUNCTION kgrag_private.probe_trigrams(text, double precision, text[], real[]) IS
'Private. Returns the trigrams of a squashed span that every alias the weak tiers of kgrag.link_entities could keep (trigram similarity >= min_trigram, or one holding the span) shares at least one of: the index probe searches with these, not with all of the span''s trigrams. common and frequency (the tenant''s commonest name trigrams and their shares, kgrag.alias_trigram_stats) pick the rarest, so a probe reads the shortest posting lists; they change what is read, never what is found. An alias inside the span is found by kgrag_private.alias_pieces. Exact, not a heuristic: see the comments in the body and tests/routes/test_linking.py.';

CREATE OR REPLACE FUNCTION kgrag_private.alias_pieces(form text, min_ratio double precision)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- An alias inside form that the contains tier keeps is one of its substrings at least
    -- max(4, min_ratio x length) long, and the candidates are at least half its length: a span
    -- of n characters has at most (n/2 + 1)^2 / 2 of those, each one btree probe.
    WITH a AS (
        SELECT kgrag.squash(form) AS sq
    ), shortest AS (
        SELECT greatest(4, ceil(greatest(min_ratio, 0) * length(a.sq))::integer, length(a.sq) / 2) AS l, length(a.sq) AS n
          FROM a
    )
    SELECT COALESCE(array_agg(DISTINCT substr(a.sq, i, len) ORDER BY substr(a.sq, i, len)), '{}')
      FROM a, shortest AS s, generate_series(s.l, s.n) AS len, generate_series(1, s.n - len + 1) AS i
$$;
COMMENT ON FUNCTION kgrag_private.alias_pieces(text, double precision) IS
'Private. Returns the substrings of a squashed span that an alias inside it must equal for the contains tier of kgrag.link_entities to keep it (at least 4 characters, min_ratio of the span and half of it): kgrag_private.fuzzy_aliases looks them up in alias_sq_idx.';

CREATE OR REPLACE FUNCTION kgrag.refresh_alias_trigram_stats() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    DELETE FROM kgrag.alias_trigram_stats AS s WHERE s.tenant_id = t;
    -- filtered and grouped by the tenant, so Citus runs it on the tenant's shard (see
    -- refresh_lexeme_stats); the 200 commonest held by two names or more, ties by trigram: the
    -- same whatever the history. Every span's probe looks its trigrams up in this list: with 1,000
    -- the lookups cost more than the rarer probes saved (linking p50 4.9 -> 7.8 ms, against 4.8
    -- with 200; benchmarks/linking_stats.py).
    INSERT INTO kgrag.alias_trigram_stats (tenant_id, common, frequency)
    WITH names AS (
        SELECT count(*)::float8 AS n FROM kgrag.alias AS a WHERE a.tenant_id = t AND strpos(a.entity_id, '~') = 0
    ), counted AS (  -- of the shared graph's names: the statistics are read by every session of the tenant
        SELECT a.tenant_id, u.g, count(*) AS n
          FROM kgrag.alias AS a CROSS JOIN LATERAL unnest(a.trigrams) AS u(g)
         WHERE a.tenant_id = t AND strpos(a.entity_id, '~') = 0
         GROUP BY a.tenant_id, u.g
        HAVING count(*) >= 2
         ORDER BY count(*) DESC, u.g COLLATE "C"
         LIMIT 200
    )
    SELECT c.tenant_id, array_agg(c.g ORDER BY c.n DESC, c.g COLLATE "C"),
           array_agg((c.n / m.n)::real ORDER BY c.n DESC, c.g COLLATE "C")
      FROM counted AS c CROSS JOIN names AS m
     GROUP BY c.tenant_id;
    RETURN COALESCE((SELECT cardinality(s.common) FROM kgrag.alias_trigram_stats AS s WHERE s.tenant_id = t), 0);
END
$$;
COMMENT ON FUNCTION kgrag.refresh_alias_trigram_stats() IS
'Counts, for the current tenant, the 200 commonest trigrams of its names (those of the shared graph: not an audience''s, kgrag_private.id_access) (kgrag.alias.trigrams, held by two names or more) and the share of its names holding each, and stores them in kgrag.alias_trigram_stats (replacing the tenant''s row); returns how many. pgkgrag build runs it. kgrag.link_entities probes the alias index with a span''s rarest trigrams by them; they change what is read, never what is found. Reads every name of the tenant once: a build step.';

CREATE OR REPLACE FUNCTION kgrag_private.question_spans(whole text)
RETURNS TABLE (first integer, last integer, len integer, words text[], phrase text)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
ROWS 50
AS $$
    -- every run of 1 to 12 words, cut from the array: linear in the question's length (a title of
    -- seven words or more, "The Girl Who Kicked the Hornets' Nest", is a phrase too)
    SELECT f.first::integer, f.first::integer + n - 1, n, x.w[f.first:f.first + n - 1],
           array_to_string(x.w[f.first:f.first + n - 1], ' ')
      FROM (SELECT string_to_array(whole, ' ') AS w) AS x
     CROSS JOIN generate_subscripts(x.w, 1) AS f(first)
     CROSS JOIN generate_series(1, 12) AS n
     WHERE f.first + n - 1 <= cardinality(x.w)
$$;
COMMENT ON FUNCTION kgrag_private.question_spans(text) IS
'Private. Returns every run of 1 to 12 words of a canonical question (kgrag.canonical_name): (first, last, len = word positions and count, words, phrase = the words joined by spaces).';

CREATE OR REPLACE FUNCTION kgrag_private.span_forms(whole text, stop text[])
RETURNS TABLE (first integer, last integer, len integer, phrase text, form text)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
ROWS 100
AS $$
    -- A span of up to six words squashed three ways: as written, without its inner stop words,
    -- and with its words sorted ("servico de autenticacao" -> "servicoautenticacao"). The last
    -- two only for spans that start and end with a content word.
    SELECT sp.first, sp.last, sp.len, sp.phrase, v.form
      FROM kgrag_private.question_spans(whole) AS sp
     CROSS JOIN LATERAL (
           SELECT array_to_string(sp.words, '')
           UNION ALL
           SELECT string_agg(x.w, '' ORDER BY x.o) FROM unnest(sp.words) WITH ORDINALITY AS x(w, o)
            WHERE x.w <> ALL (stop) AND sp.words[1] <> ALL (stop) AND sp.words[sp.len] <> ALL (stop)
           UNION ALL
           SELECT string_agg(x.w, '' ORDER BY x.w COLLATE "C") FROM unnest(sp.words) AS x(w)
            WHERE x.w <> ALL (stop) AND sp.words[1] <> ALL (stop) AND sp.words[sp.len] <> ALL (stop)
     ) AS v(form)
     WHERE sp.len <= 6 AND v.form IS NOT NULL AND length(v.form) >= 2
$$;
COMMENT ON FUNCTION kgrag_private.span_forms(text, text[]) IS
'Private. Returns the squashed forms of the spans of up to six words of a canonical question: each span as written without spaces, and, for a span that starts and ends with a word not in stop, without its stop words and with its words sorted: (first, last, len, phrase, form).';

CREATE OR REPLACE FUNCTION kgrag_private.word_links(whole text, stop text[], capitalized text[]) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    -- One word of the question that is an alias. A capitalized one-word name ("Taken", a film) is
    -- cased only where the question capitalizes that word too ("taken by the British" is not the
    -- film), unless the question capitalizes nothing; one the tenant's documents also write as a
    -- plain lowercase word (kgrag.entity.common_word: "History") only where the question
    -- capitalizes it.
    RETURN (SELECT COALESCE(jsonb_agg(jsonb_build_object('entity_id', a.entity_id, 'first', f.first, 'cased', a.cased)), '[]')
              FROM kgrag_private.question_spans(whole) AS f
             CROSS JOIN LATERAL (SELECT x.entity_id,
                                        (f.phrase = ANY (capitalized)
                                         OR (NOT e.common_word
                                             AND (NOT kgrag.is_cased_name(x.alias) OR cardinality(capitalized) = 0))) AS cased
                                   FROM kgrag.alias AS x
                                   JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = x.entity_id
                                  WHERE x.tenant_id = t AND x.alias_fold = f.phrase OFFSET 0) AS a
             WHERE f.len = 1 AND length(f.phrase) >= 2 AND f.phrase <> ALL (stop));
END
$$;
COMMENT ON FUNCTION kgrag_private.word_links(text, text[], text[]) IS
'Private. Returns the words of a canonical question that are aliases, as a jsonb array of {entity_id, first = the word''s position, cased}: cased is false where the case rule of one-word names refuses the match (kgrag.is_cased_name: a capitalized one-word name the question writes in lower case, when it capitalizes anything; a common word of the tenant''s documents, kgrag.entity.common_word, the question writes in lower case). Stop words and single letters are not looked up.';

CREATE OR REPLACE FUNCTION kgrag_private.strong_links(whole text, stop text[], words jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    -- Each form probes the alias indexes on its own (a lateral lookup; OFFSET 0 keeps the planner
    -- from turning it back into a join): the spans are a few dozen, but estimated at thousands,
    -- and as a join the plan sorted every alias of the tenant (80 ms at 46k aliases).
    RETURN (SELECT COALESCE(jsonb_agg(jsonb_build_object('entity_id', s.entity_id, 'score', s.score, 'tier', s.tier,
                                                         'first', s.first, 'last', s.last)), '[]')
      FROM (-- exact: the whole question is an alias
            SELECT a.entity_id, 10.0::float8 AS score, 'exact'::text AS tier, 1 AS first, 1000 AS last
              FROM kgrag.alias AS a
             WHERE a.tenant_id = t AND a.alias_fold = whole
            UNION ALL
            -- phrase: a span of two or more words is an alias
            SELECT a.entity_id, 9.0, 'phrase', f.first, f.last
              FROM kgrag_private.question_spans(whole) AS f
             CROSS JOIN LATERAL (SELECT x.entity_id FROM kgrag.alias AS x
                                  WHERE x.tenant_id = t AND x.alias_fold = f.phrase OFFSET 0) AS a
             WHERE f.len >= 2
            UNION ALL
            -- squashed: a span meets an alias once both are written without spaces
            SELECT a.entity_id, 8.0, 'squashed', f.first, f.last
              FROM kgrag_private.span_forms(whole, stop) AS f
             CROSS JOIN LATERAL (SELECT x.entity_id FROM kgrag.alias AS x
                                  WHERE x.tenant_id = t AND x.alias_sq = f.form AND x.alias_fold <> f.phrase OFFSET 0) AS a
            UNION ALL
            -- token: one word of the question is an alias (kgrag_private.word_links)
            SELECT n.entity_id, 7.0, 'token', n.first, n.first
              FROM jsonb_to_recordset(words) AS n(entity_id text, first integer, cased boolean)
             WHERE n.cased) AS s);
END
$$;
COMMENT ON FUNCTION kgrag_private.strong_links(text, text[], jsonb) IS
'Private. Returns the whole-name matches of a canonical question as a jsonb array of {entity_id, score, tier, first, last}: exact (the whole question is an alias, 10), phrase (a span of 2 to 12 words is an alias, 9), squashed (a squashed span of up to six words is a squashed alias, 8), token (a word is an alias the case rule allows, from kgrag_private.word_links, 7).';

CREATE OR REPLACE FUNCTION kgrag_private.weak_links(
    whole text, stop text[], strong jsonb, words jsonb, trigram_floor double precision, ratio_floor double precision,
    common text[], frequency real[])
RETURNS TABLE (entity_id text, score double precision, tier text, form text)
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- contains / trigram: candidates share trigrams with a squashed span (GIN index), then one
    -- holds the other with a minimum length ratio, or they are close enough (typos).
    SELECT c.entity_id, 3.0 * greatest(c.contained, c.similarity),
           CASE WHEN c.contained >= c.similarity THEN 'contains' ELSE 'trigram' END, sf.form
      FROM (SELECT DISTINCT ON (f.form) f.form, f.first, f.last
              FROM kgrag_private.span_forms(whole, stop) AS f
             WHERE f.len <= 3 AND length(f.form) >= CASE WHEN f.len = 1 THEN 6 ELSE 4 END
               -- words a strong match already explains are not searched again
               AND NOT EXISTS (SELECT 1 FROM jsonb_to_recordset(strong) AS s(first integer, last integer)
                                WHERE s.first <= f.last AND f.first <= s.last)
             ORDER BY f.form, f.first, f.last) AS sf
     CROSS JOIN LATERAL kgrag_private.fuzzy_aliases(sf.form, trigram_floor, ratio_floor, 2,
                                                    COALESCE(common, '{}'), COALESCE(frequency, '{}')) AS c
     -- a name the case rule refused for a word of the question is not a guess from that word
     -- either ("who directed" is not the name "Directed", inside "whodirected" or not)
     WHERE NOT EXISTS (SELECT 1 FROM jsonb_to_recordset(words) AS n(entity_id text, first integer, cased boolean)
                        WHERE n.entity_id = c.entity_id AND NOT n.cased AND n.first BETWEEN sf.first AND sf.last)
$$;
COMMENT ON FUNCTION kgrag_private.weak_links(text, text[], jsonb, jsonb, double precision, double precision, text[], real[]) IS
'Private. Returns the fuzzy matches of a canonical question: for each squashed span of up to three words (six letters or more for one word, four for more) that no strong match explains, the aliases that hold it or are held by it with a length ratio >= ratio_floor (contains) or share trigrams with it above trigram_floor (trigram), scored 3 x the better of the two, two at most (kgrag_private.fuzzy_aliases); a name the case rule refused for a word of the span is left out.';

CREATE OR REPLACE FUNCTION kgrag_private.link_entities_at(tenant text, question text, min_ratio double precision, min_trigram double precision, include_isolated boolean)
RETURNS TABLE (entity_id text, score double precision, tier text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = auto  -- cached plans where it runs (use_tenant forces custom ones on Citus, for the
                            -- coordinator's UPDATEs; a delegated read runs every statement on one worker)
AS $$
DECLARE
    t text := kgrag_private.check_delegated_tenant(tenant);
    whole text := kgrag.canonical_name(COALESCE(question, ''));
    ratio_floor float8 := COALESCE(min_ratio, kgrag.setting('link_min_ratio')::float8);
    trigram_floor float8 := COALESCE(min_trigram, kgrag.setting('link_min_trigram')::float8);
    stop text[] := ARRAY(SELECT jsonb_array_elements_text(kgrag.setting('link_stopwords')));
    -- the words the question capitalizes, folded; none when it capitalizes nothing (no case to read)
    capitalized text[] := kgrag.capitalized_words(COALESCE(question, ''));
    common text[];  -- the tenant's commonest name trigrams (kgrag.alias_trigram_stats) and their shares
    frequency real[];
    words jsonb;
    strong jsonb;
BEGIN
    PERFORM kgrag_private.check_question(question);
    IF whole = '' THEN
        RETURN;
    END IF;
    EXECUTE 'SELECT s.common, s.frequency FROM kgrag.alias_trigram_stats AS s WHERE s.tenant_id = $1'
       INTO common, frequency USING t;  -- planned each time: see kgrag_private.search_at
    words := kgrag_private.word_links(whole, stop, capitalized);
    strong := kgrag_private.strong_links(whole, stop, words);
    RETURN QUERY
    WITH strong AS (
        SELECT * FROM jsonb_to_recordset(strong) AS s(entity_id text, score float8, tier text, first integer, last integer)
    ), weak AS (
        SELECT * FROM kgrag_private.weak_links(whole, stop, strong, words, trigram_floor, ratio_floor, common, frequency)
    ), ambiguity AS (
        SELECT w.form, count(DISTINCT w.entity_id) AS entities FROM weak AS w GROUP BY w.form
    ), matches AS (
        -- The longest match wins: a name inside a longer name the question holds ("Federation"
        -- inside "Thumb Wrestling Federation") is a part of it, not a second subject.
        SELECT s.entity_id, s.score, s.tier FROM strong AS s
         WHERE NOT EXISTS (SELECT 1 FROM strong AS o
                            WHERE o.first <= s.first AND s.last <= o.last AND o.last - o.first > s.last - s.first)
        UNION ALL
        -- A weak match counts only when its words point at one or two entities ("service" inside
        -- every "... Service" does not); a single word must have six letters or more.
        SELECT w.entity_id, w.score, w.tier FROM weak AS w JOIN ambiguity AS n USING (form)
         WHERE n.entities <= 2
    ), best AS (
        SELECT DISTINCT ON (m.entity_id) m.entity_id, m.score, m.tier
          FROM matches AS m
         ORDER BY m.entity_id, m.score DESC, m.tier
    )
    SELECT b.entity_id, b.score, b.tier
      FROM best AS b
      JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = b.entity_id
     WHERE e.degree > 0 OR include_isolated  -- an isolated entity leads nowhere: not a seed
     ORDER BY b.score DESC, b.entity_id;
END
$$;
COMMENT ON FUNCTION kgrag_private.link_entities_at(text, text, double precision, double precision, boolean) IS
'Private. kgrag.link_entities itself, for the tenant the transaction acts for (tenant: checked against it). On a Citus cluster a delegated function (kgrag_private.delegate_calls): the public function''s one call runs on the worker holding the tenant''s shards.';

CREATE OR REPLACE FUNCTION kgrag.link_entities(
    question text, min_ratio double precision DEFAULT NULL, min_trigram double precision DEFAULT NULL,
    include_isolated boolean DEFAULT false)
RETURNS TABLE (entity_id text, score double precision, tier text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- one statement, its values bound (EXECUTE ... USING): on Citus, one call to the tenant's worker
    RETURN QUERY EXECUTE 'SELECT * FROM kgrag_private.link_entities_at($1, $2, $3, $4, $5)'
       USING kgrag.current_tenant(), question, min_ratio, min_trigram, include_isolated;
END
$$;
COMMENT ON FUNCTION kgrag.link_entities(text, double precision, double precision, boolean) IS
'Returns the entities a question names, best first: (entity_id, score, tier). Tiers, strictest first: exact (the whole question is an alias, 10), phrase (a span of 2 to 12 words is an alias, 9), squashed (a span written without spaces, without stop words or with sorted words equals a squashed alias, 8), token (one word is an alias, 7; a capitalized one-word name only where the question capitalizes that word, unless it capitalizes none, and a name so refused is not matched by the weak tiers from that word either), contains (a squashed span holds an alias or is held by one, length ratio >= min_ratio, 3 x ratio), trigram (typos: trigram similarity >= min_trigram, 3 x similarity). A whole-name match inside a longer one of another entity is left out (the longest match wins: "Federation" inside "Thumb Wrestling Federation"). Entities of degree 0 are left out (they cannot seed a traversal) unless include_isolated.';

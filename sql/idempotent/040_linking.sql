-- Entity linking: from the words of a question to entity ids, from the strictest match to the
-- most tolerant. Every contiguous span of up to six words of the question is tried, so a name
-- is found inside a sentence and not only when it is the whole question.

CREATE OR REPLACE FUNCTION kgrag_private.trigram_probe(grams text[], min_length integer, max_length integer)
RETURNS TABLE (entity_id text, alias_sq text, trigrams text[])
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN QUERY
    SELECT a.entity_id, a.alias_sq, a.trigrams
      FROM kgrag.alias AS a
     WHERE a.tenant_id = t AND a.trigrams && grams
       AND length(a.alias_sq) BETWEEN min_length AND max_length;
END
$$;
GRANT CREATE ON SCHEMA kgrag_private TO kgrag_probe;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag_private.trigram_probe(text[], integer, integer) OWNER TO kgrag_probe;
REVOKE CREATE ON SCHEMA kgrag_private FROM kgrag_probe;
REVOKE EXECUTE ON FUNCTION kgrag_private.trigram_probe(text[], integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.trigram_probe(text[], integer, integer) TO kgrag_reader, kgrag_writer;
COMMENT ON FUNCTION kgrag_private.trigram_probe(text[], integer, integer) IS
'Private. Returns (entity_id, alias_sq, trigrams) of the current tenant''s aliases sharing a trigram with grams whose squashed form is min_length to max_length characters long. SECURITY DEFINER, owned by kgrag_probe, on the allow-list because && is not leakproof: under the tenant policy the GIN index on trigrams could not be used. It filters on kgrag.current_tenant() itself (raises when unset), as the policy does.';

CREATE OR REPLACE FUNCTION kgrag_private.probe_trigrams(form text, min_trigram double precision, min_ratio double precision)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- An alias the weak tiers of kgrag.link_entities keep shares one of these trigrams with form:
    -- - Jaccard >= min_trigram needs ceil(min_trigram x |A|) of form's |A| trigrams shared, so any
    --   |A| - that + 1 of them meet it (the trigrams inside the word first: the padded ones at its
    --   edges are the ones every name starting with the same letter shares);
    -- - an alias holding form holds every trigram inside form;
    -- - an alias inside form, at least max(4, min_ratio x length) long, covers that many - 2
    --   consecutive inner trigrams, so one at every such step meets it.
    WITH a AS (
        SELECT kgrag.squash(form) AS sq, kgrag.trigrams(form) AS grams
    ), inner_grams AS (
        SELECT i, substr(a.sq, i, 3) AS g FROM a, generate_series(1, length(a.sq) - 2) AS i
    ), ordered AS (
        SELECT x.g, row_number() OVER (ORDER BY x.edge, x.pos, x.g COLLATE "C") AS o
          FROM (SELECT u.g, (min(n.i) IS NULL) AS edge, COALESCE(min(n.i), 0) AS pos
                  FROM a CROSS JOIN unnest(a.grams) AS u(g)
                  LEFT JOIN inner_grams AS n ON n.g = u.g
                 GROUP BY u.g) AS x
    ), step AS (
        SELECT greatest(1, greatest(4, ceil(greatest(min_ratio, 0) * length(a.sq))::integer) - 2) AS w,
               cardinality(a.grams) AS n,
               CASE WHEN min_trigram > 0 THEN cardinality(a.grams) - ceil(min_trigram * cardinality(a.grams))::integer + 1
                    ELSE cardinality(a.grams) END AS need
          FROM a
    )
    SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM inner_grams) THEN (SELECT a.grams FROM a)
                ELSE ARRAY(SELECT DISTINCT y.g FROM (
                         SELECT o.g FROM ordered AS o, step AS s WHERE o.o <= s.need
                         UNION ALL
                         SELECT n.g FROM inner_grams AS n, step AS s WHERE n.i % s.w = 0 OR n.i = 1
                     ) AS y ORDER BY 1) END
$$;
COMMENT ON FUNCTION kgrag_private.probe_trigrams(text, double precision, double precision) IS
'Private. Returns the trigrams of a squashed span that every alias the weak tiers of kgrag.link_entities could keep (trigram similarity >= min_trigram, or one holding the other with length ratio >= min_ratio) shares at least one of: the index probe searches with these, not with all of the span''s trigrams, so an alias sharing only a common trigram (the padded first letter) is never read. Exact, not a heuristic: see the comments in the body and tests/test_linking.py.';

CREATE OR REPLACE FUNCTION kgrag.link_entities(
    question text, min_ratio double precision DEFAULT NULL, min_trigram double precision DEFAULT NULL,
    include_isolated boolean DEFAULT false)
RETURNS TABLE (entity_id text, score double precision, tier text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    whole text := kgrag.canonical_name(COALESCE(question, ''));
    ratio_floor float8 := COALESCE(min_ratio, kgrag.setting('link_min_ratio')::float8);
    trigram_floor float8 := COALESCE(min_trigram, kgrag.setting('link_min_trigram')::float8);
    stop text[] := ARRAY(SELECT jsonb_array_elements_text(kgrag.setting('link_stopwords')));
BEGIN
    PERFORM kgrag_private.check_question(question);
    IF whole = '' THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH words AS (
        SELECT string_to_array(whole, ' ') AS w
    ), spans AS (
        -- every run of 1 to 6 words, cut from the array: linear in the question's length
        SELECT f.first::integer AS first, n AS len, x.w[f.first:f.first + n - 1] AS words
          FROM words AS x
         CROSS JOIN generate_subscripts(x.w, 1) AS f(first)
         CROSS JOIN generate_series(1, 6) AS n
         WHERE f.first + n - 1 <= cardinality(x.w)
    ), forms AS (
        -- A span as a phrase, and squashed three ways: as written, without its inner stop words,
        -- and with its words sorted ("servico de autenticacao" -> "servicoautenticacao"). The last
        -- two only for spans that start and end with a content word.
        SELECT sp.first, sp.first + sp.len - 1 AS last, sp.len, array_to_string(sp.words, ' ') AS phrase, v.form
          FROM spans AS sp
         CROSS JOIN LATERAL (
               SELECT array_to_string(sp.words, '')
               UNION ALL
               SELECT string_agg(x.w, '' ORDER BY x.o) FROM unnest(sp.words) WITH ORDINALITY AS x(w, o)
                WHERE x.w <> ALL (stop) AND sp.words[1] <> ALL (stop) AND sp.words[sp.len] <> ALL (stop)
               UNION ALL
               SELECT string_agg(x.w, '' ORDER BY x.w COLLATE "C") FROM unnest(sp.words) AS x(w)
                WHERE x.w <> ALL (stop) AND sp.words[1] <> ALL (stop) AND sp.words[sp.len] <> ALL (stop)
         ) AS v(form)
         WHERE v.form IS NOT NULL AND length(v.form) >= 2
    ), strong AS (
        -- exact: the whole question is an alias
        SELECT a.entity_id, 10.0::float8 AS score, 'exact'::text AS tier, 1 AS first, 1000 AS last
          FROM kgrag.alias AS a
         WHERE a.tenant_id = t AND a.alias_fold = whole
        UNION ALL
        -- phrase: a span of two or more words is an alias
        SELECT a.entity_id, 9.0, 'phrase', f.first, f.last
          FROM forms AS f
          JOIN kgrag.alias AS a ON a.tenant_id = t AND a.alias_fold = f.phrase
         WHERE f.len >= 2
        UNION ALL
        -- squashed: a span meets an alias once both are written without spaces
        SELECT a.entity_id, 8.0, 'squashed', f.first, f.last
          FROM forms AS f
          JOIN kgrag.alias AS a ON a.tenant_id = t AND a.alias_sq = f.form
         WHERE a.alias_fold <> f.phrase
        UNION ALL
        -- token: one word of the question is an alias
        SELECT a.entity_id, 7.0, 'token', f.first, f.last
          FROM forms AS f
          JOIN kgrag.alias AS a ON a.tenant_id = t AND a.alias_fold = f.phrase
         WHERE f.len = 1 AND f.phrase <> ALL (stop)
    ), weak AS (
        -- contains / trigram: candidates share trigrams with a squashed span (GIN index), then
        -- one holds the other with a minimum length ratio, or they are close enough (typos).
        SELECT c.entity_id, 3.0 * greatest(c.contained, c.similarity) AS score,
               CASE WHEN c.contained >= c.similarity THEN 'contains' ELSE 'trigram' END AS tier,
               sf.first, sf.last, sf.form
          FROM (SELECT DISTINCT ON (f.form) f.form, f.first, f.last, kgrag.trigrams(f.form) AS grams,
                       kgrag_private.probe_trigrams(f.form, trigram_floor, ratio_floor) AS probe
                  FROM forms AS f
                 WHERE f.len <= 3 AND length(f.form) >= CASE WHEN f.len = 1 THEN 6 ELSE 4 END
                   -- words a strong match already explains are not searched again
                   AND NOT EXISTS (SELECT 1 FROM strong AS s WHERE s.first <= f.last AND f.first <= s.last)
                 ORDER BY f.form, f.first, f.last) AS sf
         CROSS JOIN LATERAL (
               SELECT a.entity_id,
                      CASE WHEN length(a.alias_sq) >= 4
                                AND (strpos(sf.form, a.alias_sq) > 0 OR strpos(a.alias_sq, sf.form) > 0)
                           THEN least(length(a.alias_sq), length(sf.form))::float8
                                / greatest(length(a.alias_sq), length(sf.form))
                           ELSE 0 END AS contained,
                      -- Jaccard, |shared| / |either|, inline: a function call per candidate costs more than it does
                      COALESCE(x.shared::float8 / NULLIF(cardinality(a.trigrams) + cardinality(sf.grams) - x.shared, 0), 0)
                          AS similarity
                 -- both tests need lengths within a factor of two (ratio >= 0.5, Jaccard >= 0.5)
                 FROM kgrag_private.trigram_probe(sf.probe, length(sf.form) / 2, length(sf.form) * 2) AS a
                CROSS JOIN LATERAL (SELECT count(*) AS shared FROM unnest(a.trigrams) AS g WHERE g = ANY (sf.grams)) AS x) AS c
         WHERE c.contained >= ratio_floor OR c.similarity >= trigram_floor
    ), ambiguity AS (
        SELECT w.form, count(DISTINCT w.entity_id) AS entities FROM weak AS w GROUP BY w.form
    ), matches AS (
        SELECT s.entity_id, s.score, s.tier FROM strong AS s
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
COMMENT ON FUNCTION kgrag.link_entities(text, double precision, double precision, boolean) IS
'Returns the entities a question names, best first: (entity_id, score, tier). Tiers, strictest first: exact (the whole question is an alias, 10), phrase (a span of words is an alias, 9), squashed (a span written without spaces, without stop words or with sorted words equals a squashed alias, 8), token (one word is an alias, 7), contains (a squashed span holds an alias or is held by one, length ratio >= min_ratio, 3 x ratio), trigram (typos: trigram similarity >= min_trigram, 3 x similarity). Entities of degree 0 are left out (they cannot seed a traversal) unless include_isolated.';

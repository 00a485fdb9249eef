-- Full-text search over chunks: accents folded (kgrag.fold) on both sides, one text search
-- configuration per document language, and parsing that never fails on user punctuation.

CREATE OR REPLACE FUNCTION kgrag_private.question_lexemes(question text, config regconfig) RETURNS text[]
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT tsvector_to_array(to_tsvector(config, COALESCE(question, '')) || to_tsvector(config, kgrag.fold(COALESCE(question, ''))))
$$;
COMMENT ON FUNCTION kgrag_private.question_lexemes(text, regconfig) IS
'Private. Returns the lexemes of a question in a text search configuration, as written and with accents folded (kgrag.chunk.tsv holds both forms): the terms of lexical mode ''any''.';

CREATE OR REPLACE FUNCTION kgrag.lexical_query(question text, config regconfig, mode text DEFAULT 'any')
RETURNS tsquery
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
SET client_min_messages = warning  -- a question of stop words only is no reason for a NOTICE
AS $$
DECLARE
    raw text := COALESCE(question, '');
    q tsquery;
    lexeme text;
BEGIN
    PERFORM kgrag_private.check_question(question);
    -- Each form is tried as written and with accents folded, as kgrag.chunk.tsv holds both.
    IF mode = 'websearch' THEN
        RETURN websearch_to_tsquery(config, raw) || websearch_to_tsquery(config, kgrag.fold(raw));
    ELSIF mode <> 'any' THEN
        RAISE EXCEPTION 'lexical mode must be ''any'' or ''websearch'', got %', quote_literal(mode)
            USING ERRCODE = '22023';
    END IF;
    -- 'any': every content word of the question, OR-ed; ranking rewards chunks that hold more.
    FOREACH lexeme IN ARRAY kgrag_private.question_lexemes(raw, config) LOOP
        q := CASE WHEN q IS NULL THEN plainto_tsquery('simple', lexeme)
                  ELSE q || plainto_tsquery('simple', lexeme) END;
    END LOOP;
    RETURN COALESCE(q, ''::tsquery);
END
$$;
COMMENT ON FUNCTION kgrag.lexical_query(text, regconfig, text) IS
'Returns the tsquery used for a question in a text search configuration: mode ''any'' (default) ORs the question''s content words; mode ''websearch'' is websearch_to_tsquery (all words, "quoted phrases", or, -negation). Words are taken as written and with accents folded. Never raises on punctuation, and a question of stop words only gives an empty tsquery without a NOTICE.';

CREATE OR REPLACE FUNCTION kgrag_private.fts_probe(query tsquery, config regconfig, lim integer)
RETURNS TABLE (chunk_id text, tsv tsvector)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
SET plan_cache_mode = force_custom_plan  -- see kgrag_private.search_at: no generic plan of a one-shard read
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    keys text[] := kgrag_private.seen_audiences(t);
BEGIN
    -- No audience policy binds this function's owner (it would keep @@ off the index): the
    -- caller's groups are checked here, by the audiences it sees (chunk_audience_idx, with the
    -- text index: a session that sees few chunks does not read the others), else row by row.
    IF keys IS NOT NULL THEN
        RETURN QUERY
        SELECT c.chunk_id, c.tsv
          FROM kgrag.chunk AS c
         WHERE c.tenant_id = t AND c.lang = config AND c.tsv @@ query
           AND (c.audience IS NULL OR c.audience = ANY (keys))
         LIMIT lim;
    ELSE
        RETURN QUERY
        SELECT c.chunk_id, c.tsv
          FROM kgrag.chunk AS c
         WHERE c.tenant_id = t AND c.lang = config AND c.tsv @@ query
           AND (c.access IS NULL OR kgrag_private.may_see(t, c.access))
         LIMIT lim;
    END IF;
END
$$;
GRANT CREATE ON SCHEMA kgrag_private TO kgrag_probe;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag_private.fts_probe(tsquery, regconfig, integer) OWNER TO kgrag_probe;
REVOKE CREATE ON SCHEMA kgrag_private FROM kgrag_probe;
REVOKE EXECUTE ON FUNCTION kgrag_private.fts_probe(tsquery, regconfig, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.fts_probe(tsquery, regconfig, integer) TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag_private.fts_probe(tsquery, regconfig, integer) IS
'Private. Returns (chunk_id, tsv) of at most lim of the current tenant''s chunks in a text search configuration that match a tsquery, in storage order. SECURITY DEFINER, owned by kgrag_probe, on the allow-list because @@ is not leakproof: under the tenant policy the GIN index on tsv could not be used. It filters on kgrag.current_tenant() itself (raises when unset), as the policy does, and on the caller''s groups (kgrag.current_groups: a chunk of a document for an audience it holds none of is not returned), as the audience policy does for the tenant roles: by the audiences it sees (kgrag_private.seen_audiences), so a session that sees few chunks reads the text index with chunk_audience_idx, not every chunk holding a word.';

CREATE OR REPLACE FUNCTION kgrag.refresh_lexeme_stats() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    cap integer := kgrag.setting('lexical_candidates')::integer;
    held text[] := kgrag.current_groups();  -- (once, not for every row)
    stored integer;
BEGIN
    DELETE FROM kgrag.lexeme_stats AS s  -- (the rows it may write again; the others are their holders')
     WHERE s.tenant_id = t
       AND (s.audience = '' OR kgrag_private.holds_all(pg_catalog.string_to_array(s.audience, ','), held));
    -- grouped by the tenant too, so Citus runs it on the tenant's shards (INSERT ... SELECT pushed
    -- down) instead of copying the rows through the coordinator, which row-level security refuses
    -- per audience ('' for everyone), each row under the audience policy: the rows of the
    -- audiences the builder sees are replaced, the others' kept for their holders (counting every
    -- audience's would take a SECURITY DEFINER, and on Citus the build's transaction refuses
    -- another user's query on the placements it changed)
    INSERT INTO kgrag.lexeme_stats (tenant_id, lang, lexeme, audience, chunks)
    SELECT c.tenant_id, c.lang, u.lexeme, COALESCE(c.audience, ''), count(*)
      FROM kgrag.chunk AS c
     CROSS JOIN LATERAL pg_catalog.unnest(c.tsv) AS u(lexeme, positions, weights)
     WHERE c.tenant_id = t
       -- (an audience the builder holds only some groups of is left to a builder holding them all:
       -- the policy writes a row only for one)
       AND (c.audience IS NULL OR kgrag_private.holds_all(pg_catalog.string_to_array(c.audience, ','), held))
     GROUP BY c.tenant_id, c.lang, u.lexeme, COALESCE(c.audience, '')
    HAVING count(*) > cap;
    GET DIAGNOSTICS stored = ROW_COUNT;
    RETURN stored;
END
$$;
COMMENT ON FUNCTION kgrag.refresh_lexeme_stats() IS
'Counts, for the current tenant and each audience (kgrag.chunk.audience; '''' for documents for everyone), the lexemes that more of its chunks hold than lexical search scores (setting lexical_candidates) and stores them in kgrag.lexeme_stats (replacing the tenant''s rows of the audiences the caller sees: a row is read only by a session that sees its audience and written only by one holding all its groups, and the others'' are kept for their holders); returns how many. pgkgrag build runs it. Reads every chunk of the tenant once: a build step, not a search step. Until it runs, lexical search counts each word of a question through the index (bounded, but a very common word''s whole index list is read).';

CREATE OR REPLACE FUNCTION kgrag.refresh_common_words() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    configs regconfig[] := kgrag_private.tenant_languages();
    most_names constant integer := 5000;  -- names looked at: those the most documents give
    most_chunks constant integer := 50;   -- chunks read for a name, in each language
    marked integer;
BEGIN
    -- A one-word name (letters, an inner apostrophe or hyphen, not all lowercase, no identifier)
    -- is a common word where a chunk writes it in lowercase as a word of its own ("the history of
    -- the API", not "history.md"): the chunks holding its lexeme are found through the text index
    -- (kgrag_private.fts_probe: those the caller sees), then read for the lowercase word.
    WITH names AS MATERIALIZED (
        SELECT e.entity_id, pg_catalog.lower(e.name) AS word
          FROM kgrag.entity AS e
         WHERE e.tenant_id = t AND strpos(e.entity_id, ':#') = 0
           AND e.name ~ '^[[:alpha:]]+([''’-][[:alpha:]]+)*$' AND e.name <> pg_catalog.lower(e.name)
         ORDER BY (SELECT count(*) FROM kgrag.entity_source AS s WHERE s.tenant_id = t AND s.entity_id = e.entity_id) DESC,
                  e.entity_id COLLATE "C"
         LIMIT most_names
    ), common AS MATERIALIZED (
        SELECT n.entity_id FROM names AS n
         WHERE EXISTS (
               SELECT 1 FROM unnest(configs) AS g(cfg)
                CROSS JOIN LATERAL kgrag_private.fts_probe(pg_catalog.plainto_tsquery(g.cfg, n.word), g.cfg, most_chunks) AS p
                JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = p.chunk_id
                WHERE strpos(c.text, n.word) > 0
                  AND c.text ~ ('(^|[[:space:]])["''‘’“”(\[{<*_`¿¡]*' || n.word || '[]"''‘’“”)}>,.;:!?*_`]*([[:space:]]|$)'))
    )
    UPDATE kgrag.entity AS e SET common_word = x.common
      FROM (SELECT y.entity_id, y.entity_id IN (SELECT c.entity_id FROM common AS c) AS common
              FROM kgrag.entity AS y
             WHERE y.tenant_id = t
               AND (y.common_word OR y.entity_id IN (SELECT c.entity_id FROM common AS c))) AS x
     WHERE e.tenant_id = t AND e.entity_id = x.entity_id AND e.common_word IS DISTINCT FROM x.common;
    SELECT count(*) INTO marked FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.common_word;
    RETURN marked;
END
$$;
COMMENT ON FUNCTION kgrag.refresh_common_words() IS
'Marks the entities of the current tenant whose one-word name (letters, an inner apostrophe or hyphen, not all in lowercase; no identifier) a chunk the caller sees also writes as a plain lowercase word ("History" beside "the history of the API"; kgrag.entity.common_word) and unmarks the others; returns how many are marked. Such a name is linked from a question''s word only where the question capitalizes it and ranks below named entities on the local route. Bounded: the 5,000 names the most documents give, 50 chunks holding the word''s lexeme read for each, in each language of the tenant (through the text index, kgrag_private.fts_probe). pgkgrag build runs it.';

CREATE OR REPLACE FUNCTION kgrag_private.lexical_candidates(question text, config regconfig, mode text, cap integer)
RETURNS TABLE (chunk_id text, tsv tsvector)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    query tsquery := kgrag.lexical_query(question, config, mode);
    terms text[];
    counts bigint[];
    rare tsquery;
    total bigint := 0;
    got bigint := 0;
    r integer := 0;  -- the rare terms: terms[1:r]
BEGIN
    IF numnode(query) = 0 THEN
        RETURN;
    ELSIF mode = 'websearch' THEN  -- every word required: the matches are the candidates
        RETURN QUERY SELECT p.chunk_id, p.tsv FROM kgrag_private.fts_probe(query, config, cap) AS p;
        RETURN;
    END IF;
    -- 'any': how many chunks hold each term, rarest first: from kgrag.lexeme_stats for the common
    -- ones (their index lists are long), else through the index, counted up to cap + 1
    SELECT array_agg(x.term ORDER BY x.n, x.term COLLATE "C"), array_agg(x.n ORDER BY x.n, x.term COLLATE "C")
      INTO terms, counts
      FROM (SELECT w.term,
                   -- (the rows of the audiences the session sees, added up)
                   COALESCE((SELECT sum(s.chunks) FROM kgrag.lexeme_stats AS s
                              WHERE s.tenant_id = t AND s.lang = config AND s.lexeme = w.term
                             HAVING sum(s.chunks) > cap),
                            (SELECT count(*) FROM kgrag_private.fts_probe(plainto_tsquery('simple', w.term), config, cap + 1))) AS n
              FROM unnest(kgrag_private.question_lexemes(question, config)) AS w(term)) AS x;
    -- The rarest terms whose chunks fit in cap together: every chunk holding one is a candidate;
    -- then, up to cap, chunks holding the next term if it is no more common than cap. A term more
    -- chunks hold draws none: it would say little about a chunk, and reading its list is the cost
    -- that grows with the corpus.
    WHILE r < cardinality(terms) AND total + counts[r + 1] <= cap LOOP
        r := r + 1;
        total := total + counts[r];
        rare := CASE WHEN rare IS NULL THEN plainto_tsquery('simple', terms[r]) ELSE rare || plainto_tsquery('simple', terms[r]) END;
    END LOOP;
    IF rare IS NOT NULL THEN
        RETURN QUERY SELECT p.chunk_id, p.tsv FROM kgrag_private.fts_probe(rare, config, cap) AS p;
        GET DIAGNOSTICS got = ROW_COUNT;
    END IF;
    IF r < cardinality(terms) AND counts[r + 1] <= cap AND got < cap THEN
        RETURN QUERY SELECT p.chunk_id, p.tsv FROM kgrag_private.fts_probe(plainto_tsquery('simple', terms[r + 1]), config, cap) AS p
                      WHERE rare IS NULL OR NOT p.tsv @@ rare
                      ORDER BY p.chunk_id  -- at most cap rows to sort; storage order differs between copies
                      LIMIT cap - got;
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.lexical_candidates(text, regconfig, text, integer) IS
'Private. Returns at most cap chunks (chunk_id, tsv) of the current tenant in a text search configuration for lexical search to score. Mode ''any'': every chunk holding one of the question''s rarest terms (those whose chunks, counted up to cap + 1 each, fit in cap together), then, up to cap, chunks holding the next rarest term (smallest chunk_id first, so every copy of the data draws the same) if at most cap chunks hold it; a term more chunks hold draws no candidates (kgrag.lexeme_stats names those without reading their index lists: the rows of the audiences the session sees, added up). Mode ''websearch'': up to cap matches (in storage order where more match). The work is bounded by cap per term, not by the number of chunks holding a word; with at most cap chunks per term and in all, every match is a candidate.';

CREATE OR REPLACE FUNCTION kgrag_private.coverage(tsv tsvector, words text[]) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT CASE WHEN cardinality(words) = 0 THEN 0::float8
                ELSE (SELECT count(*) FILTER (WHERE tsv @@ plainto_tsquery('simple', w))::float8 / count(*)
                        FROM unnest(words) AS w) END
$$;
COMMENT ON FUNCTION kgrag_private.coverage(tsvector, text[]) IS
'Private. Returns the share of the words (a question''s lexemes) that the tsvector holds, 0 for no words.';

CREATE OR REPLACE FUNCTION kgrag_private.question_words(question text, config regconfig) RETURNS text[]
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT tsvector_to_array(to_tsvector(config, kgrag.fold(COALESCE(question, ''))))
$$;
COMMENT ON FUNCTION kgrag_private.question_words(text, regconfig) IS
'Private. Returns the content words of a question in a text search configuration (accents folded): what lexical coverage is counted over.';

CREATE OR REPLACE FUNCTION kgrag_private.search_chunks_lexical_at(tenant text, question text, k integer, mode text, config regconfig, min_coverage double precision)
RETURNS TABLE (chunk_id text, rank integer, score double precision)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = auto  -- cached plans where it runs (use_tenant forces custom ones on Citus, for the
                            -- coordinator's UPDATEs; a delegated read runs every statement on one worker)
AS $$
DECLARE
    t text := kgrag_private.check_delegated_tenant(tenant);
    cap integer := kgrag.setting('lexical_candidates')::integer;
    configs regconfig[];
BEGIN
    PERFORM kgrag_private.check_k(k);
    -- the languages of the tenant's documents unless config is given
    configs := CASE WHEN config IS NOT NULL THEN ARRAY[config] ELSE kgrag_private.tenant_languages() END;
    RETURN QUERY
    WITH queries AS MATERIALIZED (  -- once per configuration, not per candidate
        SELECT cfg, kgrag.lexical_query(question, cfg, mode) AS query,
               ARRAY(SELECT plainto_tsquery('simple', w) FROM unnest(kgrag_private.question_words(question, cfg)) AS w) AS words
          FROM unnest(COALESCE(configs, '{}')) AS cfg
    ), hits AS (
        SELECT c.chunk_id, ts_rank_cd(c.tsv, qs.query)::float8 AS score,
               -- the share of the question's content words the chunk holds
               COALESCE((SELECT count(*) FROM unnest(qs.words) AS w WHERE c.tsv @@ w)::float8
                        / NULLIF(cardinality(qs.words), 0), 0) AS coverage
          FROM queries AS qs
         CROSS JOIN LATERAL kgrag_private.lexical_candidates(question, qs.cfg, mode, cap) AS c
         WHERE numnode(qs.query) > 0
    ), covered AS (
        SELECT h.chunk_id, h.score FROM hits AS h WHERE min_coverage <= 0 OR h.coverage >= min_coverage
    )
    SELECT v.chunk_id, (row_number() OVER (ORDER BY v.score DESC, v.chunk_id))::integer, v.score
      FROM covered AS v
     ORDER BY v.score DESC, v.chunk_id
     LIMIT k;
END
$$;
COMMENT ON FUNCTION kgrag_private.search_chunks_lexical_at(text, text, integer, text, regconfig, double precision) IS
'Private. kgrag.search_chunks_lexical itself, for the tenant the transaction acts for (tenant: checked against it). On a Citus cluster a delegated function (kgrag_private.delegate_calls): the public function''s one call runs on the worker holding the tenant''s shards.';

CREATE OR REPLACE FUNCTION kgrag.search_chunks_lexical(
    question text, k integer DEFAULT 10, mode text DEFAULT 'any', config regconfig DEFAULT NULL,
    min_coverage double precision DEFAULT 0)
RETURNS TABLE (chunk_id text, rank integer, score double precision)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- one statement, its values bound (EXECUTE ... USING): on Citus, one call to the tenant's worker
    RETURN QUERY EXECUTE 'SELECT * FROM kgrag_private.search_chunks_lexical_at($1, $2, $3, $4, $5, $6)'
       USING kgrag.current_tenant(), question, k, mode, config, min_coverage;
END
$$;
COMMENT ON FUNCTION kgrag.search_chunks_lexical(text, integer, text, regconfig, double precision) IS
'Returns the k chunks of the current tenant that best match the question by full-text search: (chunk_id, rank, score = ts_rank_cd). Each chunk is searched in its own language''s configuration unless config is given; see kgrag.lexical_query for the modes. min_coverage keeps chunks holding at least that share of the question''s content words. An empty or stop-word-only question returns no rows. Bounded: at most lexical_candidates (setting) chunks per configuration are scored, drawn by the question''s rarest words (see kgrag_private.lexical_candidates); a word more chunks hold than that draws none (kgrag.lexeme_stats, counted by pgkgrag build, names those), so the work does not grow with the chunks that hold a common word; the languages of the tenant''s documents are one index probe each (document_lang_idx), not a scan of the documents. A corpus with fewer matches than that scores every match, as before.';

CREATE OR REPLACE FUNCTION kgrag.search_reports_lexical(
    question text, k integer DEFAULT 10, level integer DEFAULT NULL, min_coverage double precision DEFAULT 0)
RETURNS TABLE (community_id text, rank integer, score double precision)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    cfg regconfig := kgrag.text_search_config(NULL);
    query tsquery := kgrag.lexical_query(question, cfg);
    words text[] := kgrag_private.question_words(question, cfg);
BEGIN
    PERFORM kgrag_private.check_k(k);
    IF numnode(query) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH reports AS (
        SELECT r.community_id,
               to_tsvector(cfg, r.title || E'\n' || r.report) || to_tsvector(cfg, kgrag.fold(r.title || E'\n' || r.report)) AS tsv
          FROM kgrag.community_report AS r
         WHERE r.tenant_id = t
           AND (search_reports_lexical.level IS NULL OR EXISTS (
                SELECT 1 FROM kgrag.community AS c
                 WHERE c.tenant_id = t AND c.community_id = r.community_id AND c.level = search_reports_lexical.level))
    ), hits AS (
        SELECT x.community_id, ts_rank_cd(x.tsv, query)::float8 AS score
          FROM reports AS x
         WHERE x.tsv @@ query AND (min_coverage <= 0 OR kgrag_private.coverage(x.tsv, words) >= min_coverage)
    )
    SELECT h.community_id, (row_number() OVER (ORDER BY h.score DESC, h.community_id))::integer, h.score
      FROM hits AS h
     ORDER BY h.score DESC, h.community_id
     LIMIT k;
END
$$;
COMMENT ON FUNCTION kgrag.search_reports_lexical(text, integer, integer, double precision) IS
'Returns the k community reports of the current tenant that best match the question by full-text search (the tenant''s text search configuration, accents folded), optionally of one community level: (community_id, rank, score = ts_rank_cd). min_coverage keeps reports holding at least that share of the question''s content words. The global route ranks reports with it when no question vector is given. Reads every report of the tenant (reports are few: one per community).';

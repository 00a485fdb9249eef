-- Full-text search over chunks: accents folded (kgrag.fold) on both sides, one text search
-- configuration per document language, and parsing that never fails on user punctuation.

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
    FOREACH lexeme IN ARRAY tsvector_to_array(to_tsvector(config, raw) || to_tsvector(config, kgrag.fold(raw))) LOOP
        q := CASE WHEN q IS NULL THEN plainto_tsquery('simple', lexeme)
                  ELSE q || plainto_tsquery('simple', lexeme) END;
    END LOOP;
    RETURN COALESCE(q, ''::tsquery);
END
$$;
COMMENT ON FUNCTION kgrag.lexical_query(text, regconfig, text) IS
'Returns the tsquery used for a question in a text search configuration: mode ''any'' (default) ORs the question''s content words; mode ''websearch'' is websearch_to_tsquery (all words, "quoted phrases", or, -negation). Words are taken as written and with accents folded. Never raises on punctuation, and a question of stop words only gives an empty tsquery without a NOTICE.';

CREATE OR REPLACE FUNCTION kgrag_private.fts_probe(query tsquery, config regconfig)
RETURNS TABLE (chunk_id text, tsv tsvector)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
    SELECT c.chunk_id, c.tsv
      FROM kgrag.chunk AS c
     WHERE c.tenant_id = (SELECT kgrag.current_tenant()) AND c.lang = config AND c.tsv @@ query
$$;
GRANT CREATE ON SCHEMA kgrag_private TO kgrag_probe;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag_private.fts_probe(tsquery, regconfig) OWNER TO kgrag_probe;
REVOKE CREATE ON SCHEMA kgrag_private FROM kgrag_probe;
REVOKE EXECUTE ON FUNCTION kgrag_private.fts_probe(tsquery, regconfig) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.fts_probe(tsquery, regconfig) TO kgrag_reader, kgrag_writer;
COMMENT ON FUNCTION kgrag_private.fts_probe(tsquery, regconfig) IS
'Private. Returns (chunk_id, tsv) of the current tenant''s chunks in a text search configuration that match a tsquery. SECURITY DEFINER, owned by kgrag_probe, on the allow-list because @@ is not leakproof: under the tenant policy the GIN index on tsv could not be used. It filters on kgrag.current_tenant() itself (raises when unset), as the policy does.';

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

CREATE OR REPLACE FUNCTION kgrag.search_chunks_lexical(
    question text, k integer DEFAULT 10, mode text DEFAULT 'any', config regconfig DEFAULT NULL,
    min_coverage double precision DEFAULT 0)
RETURNS TABLE (chunk_id text, rank integer, score double precision)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    configs regconfig[];
BEGIN
    PERFORM kgrag_private.check_k(k);
    IF config IS NOT NULL THEN
        configs := ARRAY[config];
    ELSE
        SELECT array_agg(DISTINCT d.lang) INTO configs FROM kgrag.document AS d WHERE d.tenant_id = t;
    END IF;
    RETURN QUERY
    WITH queries AS (
        SELECT cfg, kgrag.lexical_query(question, cfg, mode) AS query, kgrag_private.question_words(question, cfg) AS words
          FROM unnest(COALESCE(configs, '{}')) AS cfg
    ), hits AS (
        SELECT c.chunk_id, ts_rank_cd(c.tsv, qs.query)::float8 AS score, c.tsv, qs.words
          FROM queries AS qs
         CROSS JOIN LATERAL kgrag_private.fts_probe(qs.query, qs.cfg) AS c
         WHERE numnode(qs.query) > 0
    ), covered AS (
        -- the share of the question's content words the chunk holds
        SELECT h.chunk_id, h.score
          FROM hits AS h
         WHERE min_coverage <= 0 OR kgrag_private.coverage(h.tsv, h.words) >= min_coverage
    )
    SELECT v.chunk_id, (row_number() OVER (ORDER BY v.score DESC, v.chunk_id))::integer, v.score
      FROM covered AS v
     ORDER BY v.score DESC, v.chunk_id
     LIMIT k;
END
$$;
COMMENT ON FUNCTION kgrag.search_chunks_lexical(text, integer, text, regconfig, double precision) IS
'Returns the k chunks of the current tenant that best match the question by full-text search: (chunk_id, rank, score = ts_rank_cd). Each chunk is searched in its own language''s configuration unless config is given; see kgrag.lexical_query for the modes. min_coverage keeps chunks holding at least that share of the question''s content words. An empty or stop-word-only question returns no rows.';

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

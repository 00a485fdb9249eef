-- Reciprocal Rank Fusion: ranks from different lists are fused, scores never are.

CREATE OR REPLACE FUNCTION kgrag.rrf(lists jsonb, k integer DEFAULT 60, weights jsonb DEFAULT '{}')
RETURNS TABLE (ref_id text, rank integer, score double precision, ranks jsonb)
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF k IS NULL OR k < 0 THEN
        RAISE EXCEPTION 'the RRF constant k must be >= 0, got %', COALESCE(k::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF lists IS NULL OR jsonb_typeof(lists) <> 'object' THEN
        RAISE EXCEPTION 'lists must be a jsonb object {"list name": ["id1", "id2", ...], ...}'
            USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_each(lists) AS l WHERE jsonb_typeof(l.value) NOT IN ('array', 'null')) THEN
        RAISE EXCEPTION 'every list in lists must be a jsonb array of ids, best first' USING ERRCODE = '22023';
    END IF;
    IF weights IS NULL OR jsonb_typeof(weights) <> 'object'
       OR EXISTS (SELECT 1 FROM jsonb_each(weights) AS w WHERE jsonb_typeof(w.value) <> 'number' OR (w.value)::float8 < 0) THEN
        RAISE EXCEPTION 'weights must be a jsonb object of non-negative numbers {"list name": 2, ...}'
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    WITH entries AS (
        -- The first occurrence of an id in a list is its rank there.
        SELECT l.key AS list, e.id, min(e.pos)::integer AS pos
          FROM jsonb_each(lists) AS l
         CROSS JOIN LATERAL jsonb_array_elements_text(CASE WHEN jsonb_typeof(l.value) = 'array' THEN l.value ELSE '[]' END) WITH ORDINALITY AS e(id, pos)
         GROUP BY l.key, e.id
    ), fused AS (
        SELECT en.id, sum(COALESCE((weights ->> en.list)::float8, 1.0) / (k + en.pos)) AS score,
               jsonb_object_agg(en.list, en.pos) AS ranks
          FROM entries AS en
         GROUP BY en.id
    )
    SELECT f.id, (row_number() OVER (ORDER BY f.score DESC, f.id COLLATE "C"))::integer, f.score, f.ranks
      FROM fused AS f
     ORDER BY f.score DESC, f.id COLLATE "C";
END
$$;
COMMENT ON FUNCTION kgrag.rrf(jsonb, integer, jsonb) IS
'Returns the fusion of ranked lists by Reciprocal Rank Fusion: (ref_id, rank, score = sum over lists of weight / (k + rank in that list), ranks = {"list": rank, ...} so a caller sees why a row ranks where it does). lists is a jsonb object of named arrays of ids, best first; k defaults to 60; weights (default 1 per list) lets a list count more, e.g. {"graph": 2}. Ties go to the smaller ref_id. Example: SELECT * FROM kgrag.rrf(jsonb_build_object(''vector'', (SELECT jsonb_agg(chunk_id ORDER BY rank) FROM kgrag.search_chunks_vector(:q)), ''lexical'', (SELECT jsonb_agg(chunk_id ORDER BY rank) FROM kgrag.search_chunks_lexical(''renewal notice''))));';

-- The reranker the Python driver may call after a search: the tenant's settings, checked.

CREATE OR REPLACE FUNCTION kgrag.reranker()
RETURNS TABLE (url text, api text, model text, timeout_ms integer, candidates integer)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    url := kgrag.setting('rerank_url') #>> '{}';
    IF COALESCE(url, '') = '' THEN
        RETURN;  -- no reranker
    END IF;
    api := kgrag.setting('rerank_api') #>> '{}';
    model := COALESCE(kgrag.setting('rerank_model') #>> '{}', '');
    IF url !~ '^https?://[^[:space:]]+$' OR length(url) > 2000 THEN
        RAISE EXCEPTION 'setting rerank_url must be an http(s) URL, got %', quote_literal(left(url, 200)) USING ERRCODE = '22023';
    END IF;
    IF api IS NULL OR api NOT IN ('tei', 'cohere') THEN
        RAISE EXCEPTION 'setting rerank_api must be tei or cohere, got %', COALESCE(quote_literal(api), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    BEGIN
        timeout_ms := (kgrag.setting('rerank_timeout_ms') #>> '{}')::integer;
        candidates := (kgrag.setting('rerank_candidates') #>> '{}')::integer;
    EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
        timeout_ms := NULL;
    END;
    IF timeout_ms IS NULL OR timeout_ms NOT BETWEEN 1 AND 60000 THEN
        RAISE EXCEPTION 'setting rerank_timeout_ms must be an integer between 1 and 60000' USING ERRCODE = '22023';
    END IF;
    IF candidates IS NULL OR candidates NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'setting rerank_candidates must be an integer between 1 and 1000' USING ERRCODE = '22023';
    END IF;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag.reranker() IS
'Returns the current tenant''s reranker, checked: (url, api: tei | cohere, model, timeout_ms, candidates), or no row while the setting rerank_url is empty (the default). The database does not call it: the Python driver (pgkgrag search, pgkgrag.Client) sends the question and the texts of up to candidates fused chunks and keeps the best k in the reranker''s order, or the fused order when it fails or takes longer than timeout_ms. Raises SQLSTATE 22023 for a setting out of shape.';

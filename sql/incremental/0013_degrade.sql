-- 0013_degrade: degrade, don't fail.
--
-- - kgrag.query_log.fallback: the search's walk ran out of its budget and the route fell back to
--   vector and lexical search (kgrag.search_by_route counts them per route).
-- - Settings (tenant '*', a tenant may override them): whether a search adds the neighbouring
--   chunks of each chunk it returns, and the optional reranker the driver calls after fusion
--   (off while rerank_url is empty).

ALTER TABLE kgrag.query_log ADD COLUMN fallback boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN kgrag.query_log.fallback IS
'True when the walk of the local or mixed route ran out of its budget and vector and lexical search answered instead.';

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'search_neighbours', 'false',
     'Add to each chunk a search returns the chunk before and after it in its document (search option neighbours).'),
    ('*', 'rerank_url', '""',
     'The reranker the driver calls after fusion (POST {url} with the question and the chunk texts); empty: no reranking.'),
    ('*', 'rerank_api', '"tei"',
     'The reranker''s request shape: tei (Text Embeddings Inference: query, texts) or cohere (Cohere, Jina, vLLM, Infinity: model, query, documents).'),
    ('*', 'rerank_model', '""', 'The model named in a cohere-shaped rerank request.'),
    ('*', 'rerank_timeout_ms', '2000',
     'A reranker slower than this (or failing) is skipped: the fused order is kept and the reason says so.'),
    ('*', 'rerank_candidates', '30', 'How many fused chunks the reranker reorders before the best k are kept.');

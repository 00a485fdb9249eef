-- 0013_degrade down.

DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key IN
    ('search_neighbours', 'rerank_url', 'rerank_api', 'rerank_model', 'rerank_timeout_ms', 'rerank_candidates');
ALTER TABLE kgrag.query_log DROP COLUMN fallback;

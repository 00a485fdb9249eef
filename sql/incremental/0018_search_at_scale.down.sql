-- 0018_search_at_scale down.

DROP TABLE kgrag.lexeme_stats;
DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key = 'lexical_candidates';

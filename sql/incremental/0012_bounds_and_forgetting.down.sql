-- 0012_bounds_and_forgetting down.

DROP INDEX kgrag.llm_cache_content_idx;
ALTER TABLE kgrag.llm_cache DROP COLUMN content_hash;
DROP TABLE kgrag.entity_source;
DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key IN
    ('max_question_chars', 'max_paths_walked', 'search_timeout_ms', 'max_aliases_per_entity', 'max_alias_chars',
     'max_quote_chars', 'max_title_chars');

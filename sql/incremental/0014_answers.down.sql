-- 0014_answers down.

DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key IN ('answer_max_chars', 'answer_map_reports');
DROP TABLE kgrag.answer_log;

-- 0015_question_log down.

DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key = 'log_question_text';
ALTER TABLE kgrag.query_log DROP CONSTRAINT query_log_question_bounded;
ALTER TABLE kgrag.query_log DROP COLUMN context_chars;
ALTER TABLE kgrag.query_log DROP COLUMN question;

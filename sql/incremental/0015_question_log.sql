-- 0015_question_log: what each route costs, and which questions came back empty.
--
-- kgrag.query_log keeps the characters kgrag.context packed (NULL for a search alone) and, when
-- the tenant's setting log_question_text allows it (off by default: nothing personal is logged
-- unless asked), the question's text.

ALTER TABLE kgrag.query_log ADD COLUMN question text;
ALTER TABLE kgrag.query_log ADD COLUMN context_chars integer;
ALTER TABLE kgrag.query_log ADD CONSTRAINT query_log_question_bounded
    CHECK (pg_catalog.length(question) <= 2000 AND context_chars >= 0) NOT VALID;
COMMENT ON COLUMN kgrag.query_log.question IS
'The question as asked, kept only while the tenant''s setting log_question_text is true (NULL otherwise).';
COMMENT ON COLUMN kgrag.query_log.context_chars IS
'The characters kgrag.context (or kgrag.context_blocks) packed for this search; NULL for a search alone.';

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'log_question_text', 'false',
     'Keep the question''s text in kgrag.query_log (off: only its md5; turn on per tenant where that is allowed).');

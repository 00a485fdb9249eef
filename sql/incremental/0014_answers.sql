-- 0014_answers: the answer step's log, and its defaults.
--
-- kgrag.answer_log keeps one row per answer (pgkgrag ask, Client.ask, POST /v1/ask, or any client
-- through kgrag.log_answer): the route, whether the sources had it, what it cost (LLM calls, the
-- tokens the endpoint reported, characters of context, time) and its citations kept and dropped.
-- Written by kgrag.log_answer only (SECURITY DEFINER, owned by kgrag_logger), read per tenant.

CREATE TABLE kgrag.answer_log (
    tenant_id         text NOT NULL,
    log_id            uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid(),
    answered_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    question_hash     text NOT NULL,
    route             text NOT NULL,
    not_found         boolean NOT NULL,
    calls             integer NOT NULL,
    prompt_tokens     integer NOT NULL,
    completion_tokens integer NOT NULL,
    context_chars     integer NOT NULL,
    citations         integer NOT NULL,
    dropped           integer NOT NULL,
    ms                double precision NOT NULL,
    PRIMARY KEY (tenant_id, log_id),
    CONSTRAINT answer_log_bounded CHECK (
        pg_catalog.length(question_hash) <= 64 AND pg_catalog.length(route) <= 32 AND calls >= 0
        AND prompt_tokens >= 0 AND completion_tokens >= 0 AND context_chars >= 0 AND citations >= 0
        AND dropped >= 0 AND ms >= 0)
);
COMMENT ON TABLE kgrag.answer_log IS
'One row per answer: a hash of the question, the route, whether the sources had it (not_found), the LLM calls made, the prompt and completion tokens the endpoint reported, the characters of context sent, the citations kept and dropped, the time. Written by kgrag.log_answer.';
CREATE INDEX answer_log_time_idx ON kgrag.answer_log (tenant_id, answered_at);
ALTER TABLE kgrag.answer_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE kgrag.answer_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON kgrag.answer_log
    USING (tenant_id = (SELECT kgrag.current_tenant()))
    WITH CHECK (tenant_id = (SELECT kgrag.current_tenant()));
GRANT SELECT ON kgrag.answer_log TO kgrag_reader;
GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.answer_log TO kgrag_writer;
GRANT INSERT ON kgrag.answer_log TO kgrag_logger;

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'answer_max_chars', '6000', 'The context an answer is given (characters, kgrag.context''s max_chars).'),
    ('*', 'answer_map_reports', '5', 'How many community reports the global route''s map step reads, one LLM call each.');

-- 0018_search_at_scale: lexical search with bounded work on a large corpus.
--
-- kgrag.lexeme_stats holds, per tenant and text search configuration, the lexemes more of the
-- tenant's chunks hold than lexical search scores (setting lexical_candidates), with that count:
-- kgrag.refresh_lexeme_stats() (pgkgrag build) writes it. Lexical search reads the index only for
-- the rarer words of a question, whose lists are short; a word this table names draws no
-- candidates (it still counts in the score of those the rarer words draw).

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'lexical_candidates', '1000', 'Lexical search scores at most this many chunks per text search configuration, drawn by the question''s rarest words; a word more chunks hold than this draws none. Bounds its work on a large corpus (a corpus with fewer matches scores every match).');

CREATE TABLE kgrag.lexeme_stats (
    tenant_id text NOT NULL,
    lang      regconfig NOT NULL,
    lexeme    text NOT NULL,
    chunks    integer NOT NULL CHECK (chunks >= 0),
    PRIMARY KEY (tenant_id, lang, lexeme)
);
COMMENT ON TABLE kgrag.lexeme_stats IS
'The lexemes that more of a tenant''s chunks (in one text search configuration) hold than lexical search scores (setting lexical_candidates when it was counted), and how many chunks hold each: written by kgrag.refresh_lexeme_stats (pgkgrag build), read by lexical search, which draws no candidates from them.';
ALTER TABLE kgrag.lexeme_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE kgrag.lexeme_stats FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON kgrag.lexeme_stats
    USING (tenant_id = (SELECT kgrag.current_tenant()))
    WITH CHECK (tenant_id = (SELECT kgrag.current_tenant()));
GRANT SELECT ON kgrag.lexeme_stats TO kgrag_reader;
GRANT SELECT, INSERT, UPDATE, DELETE ON kgrag.lexeme_stats TO kgrag_writer;

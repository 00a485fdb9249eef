-- 0004_search: the query log, the router's marker rules (English and Portuguese) and the
-- defaults of kgrag_search.

CREATE TABLE kgrag.query_log (
    tenant_id     text NOT NULL,
    log_id        bigint GENERATED ALWAYS AS IDENTITY,
    searched_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    question_hash text NOT NULL,
    route         text NOT NULL,
    reason        text NOT NULL,
    seeds         text[] NOT NULL DEFAULT '{}',
    paths_walked  integer NOT NULL DEFAULT 0,
    rows_returned integer NOT NULL,
    ms            double precision NOT NULL,
    PRIMARY KEY (tenant_id, log_id)
);
COMMENT ON TABLE kgrag.query_log IS
'One row per kgrag_search call (setting query_log): a hash of the question, the route and why, the seeds, the paths the traversal walked, the rows returned and the time taken. An empty answer is logged with the reason it is empty.';
CREATE INDEX query_log_time_idx ON kgrag.query_log (tenant_id, searched_at);

ALTER TABLE kgrag.query_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE kgrag.query_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON kgrag.query_log
    USING (tenant_id = (SELECT kgrag.current_tenant()))
    WITH CHECK (tenant_id = (SELECT kgrag.current_tenant()));

-- Patterns are POSIX regular expressions matched case-insensitively against the question with
-- accents removed (kgrag.fold), so they are written without accents.
INSERT INTO kgrag.router_rule (tenant_id, rule_id, route, pattern, lang, description) VALUES
    ('*', 'en-themes', 'global',
     '\m(main|major|key|dominant|recurring|common|top)\s+(themes?|topics?|subjects?|patterns?|trends?)\M', 'en',
     'asks for the main themes or patterns'),
    ('*', 'en-dominate', 'global', '\m(themes?|topics?|subjects?)\M.*\m(dominate|run through|recur)', 'en',
     'asks what dominates the collection'),
    ('*', 'en-overview', 'global',
     '\m(overview of|summari[sz]e (the|this|these|all)|landscape of|state of the (corpus|collection|documents?))\M', 'en',
     'asks for an overview of the collection'),
    ('*', 'en-whole', 'global',
     '\m(as a whole|across (all|the) (documents?|corpus|collection|notes?|reports?)|whole (corpus|collection))\M', 'en',
     'asks about the collection as a whole'),
    ('*', 'pt-temas', 'global', '\mquais (sao )?(os |as )?(principais )?(temas|assuntos|categorias|padroes|tendencias)\M', 'pt',
     'asks (in Portuguese) for the themes or patterns of the collection'),
    ('*', 'pt-panorama', 'global',
     '\m(tematica|panorama do|padroes|dominam|visao geral|como um todo|resumo (geral|do acervo))\M', 'pt',
     'asks (in Portuguese) for the shape of the collection'),
    ('*', 'en-general', 'mixed',
     '\m(in general|overall|broadly|generally|big picture|broader context|general context|in context)\M', 'en',
     'names a subject and asks for broad context'),
    ('*', 'pt-geral', 'mixed', '\m(de forma geral|no geral|em geral|em termos gerais|no contexto|contexto geral|o panorama)\M', 'pt',
     'names a subject and asks (in Portuguese) for broad context');

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'query_log', 'true', 'Log every kgrag_search call in kgrag.query_log.'),
    ('*', 'search_hops', '2', 'Local route: hops of the traversal from the seeds (option "hops").'),
    ('*', 'search_degree_cap', '4', 'Local route: each node follows only its strongest edges (option "degree_cap"; null for none).'),
    ('*', 'search_entities', '5', 'Local and mixed routes: entity rows returned (option "entities").'),
    ('*', 'search_reports', '5', 'Global route: community reports returned (option "reports").'),
    ('*', 'search_seeds', '3', 'Seeds taken from entity linking and from entity vector search, each (option "seeds").'),
    ('*', 'entity_seed_min_similarity', '0.6', 'An entity found by vector search seeds the traversal only above this cosine similarity.'),
    ('*', 'chunk_min_similarity', '0.3', 'A chunk found by vector search counts as evidence only above this cosine similarity.'),
    ('*', 'report_min_similarity', '0.3', 'A community report matches a question only above this cosine similarity.'),
    ('*', 'lexical_min_coverage', '0.5', 'A lexical hit counts when the chunk holds at least this share of the question''s content words.'),
    ('*', 'router_flat_gap', '0.05', 'Entity similarity profile: top-1 minus top-4 below this is flat, and vector seeds are not trusted.'),
    ('*', 'rrf_k', '60', 'The k of Reciprocal Rank Fusion.'),
    ('*', 'rrf_graph_weight', '2',
     'Local route: the weight of the graph''s chunk list in the fusion. Vector and lexical search are two views of one signal (text similarity), so the graph gets as much say as both (option "graph_weight").');

-- The row type of kgrag_search and of the route functions behind it.
CREATE TYPE kgrag.search_row AS (
    rank    integer,
    ref_id  text,
    kind    text,
    source  text,
    score   double precision,
    route   text,
    reason  text,
    payload jsonb
);
COMMENT ON TYPE kgrag.search_row IS
'One result of kgrag_search: rank, ref_id, kind (chunk | entity | community), source (vector | lexical | graph | community), score (comparable only within one source), route, reason, payload (provenance: seed, hop, path, evidence_refs, answer, via).';

-- 0001_base: the kgrag schema, its tables, keys, indexes and row-level security.
--
-- Incremental DDL: this file runs exactly once per database (Alembic revision 0001) and is
-- frozen by hash once released (see sql/incremental/FROZEN). Later changes go in a new file.
--
-- The embedding dimension D is chosen at install time. The installer binds it with
-- set_config('kgrag.install_dimension', D, true) before this file runs; the DO block at the end
-- reads it back and creates the vector columns and their binary-quantized HNSW indexes.
--
-- Every table carries tenant_id and every key includes it. Row-level security is enabled and
-- forced on every table, with the tenant taken from the transaction-local setting kgrag.tenant.

CREATE SCHEMA kgrag;
COMMENT ON SCHEMA kgrag IS 'pgkgrag: GraphRAG inside PostgreSQL. Tables, retrieval functions and the kgrag_search entry point.';

-- ---------------------------------------------------------------------------------------------
-- Functions that tables, generated columns and policies depend on. They live here, with the
-- tables, because a table cannot be rebuilt around them; everything else is in sql/idempotent.
-- ---------------------------------------------------------------------------------------------

CREATE FUNCTION kgrag.current_tenant() RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t text := pg_catalog.current_setting('kgrag.tenant', true);
BEGIN
    IF t IS NULL OR t = '' THEN
        RAISE EXCEPTION 'kgrag.tenant is not set'
            USING ERRCODE = '28000',
                  HINT = 'Set the tenant for this transaction first: SELECT set_config(''kgrag.tenant'', ''my-tenant'', true);';
    END IF;
    RETURN t;
END
$$;
COMMENT ON FUNCTION kgrag.current_tenant() IS
'Returns the tenant of the current transaction (setting kgrag.tenant). Raises SQLSTATE 28000 when it is unset or empty, so every row-level security policy fails closed.';

CREATE FUNCTION kgrag.fold(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.regexp_replace(pg_catalog.normalize(pg_catalog.lower(t), 'NFKD'), '[\u0300-\u036f]', '', 'g')
$$;
COMMENT ON FUNCTION kgrag.fold(text) IS
'Returns the text lower-cased with accents removed (Unicode NFKD, combining marks dropped): "Serviço" -> "servico". Built in, so no unaccent extension is needed.';

CREATE FUNCTION kgrag.canonical_name(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.btrim(pg_catalog.regexp_replace(kgrag.fold(t),
        '[[:space:][:punct:]\u00a0-\u00bf\u2000-\u206f\u3000-\u303f]+', ' ', 'g'))
$$;
COMMENT ON FUNCTION kgrag.canonical_name(text) IS
'Returns the canonical form of a name: folded (lower case, no accents) with every run of punctuation and space collapsed to one space. "Serviço-de  Autenticação" -> "servico de autenticacao".';

CREATE FUNCTION kgrag.squash(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.replace(kgrag.canonical_name(t), ' ', '')
$$;
COMMENT ON FUNCTION kgrag.squash(text) IS
'Returns the squashed form of a name: canonical with the spaces removed. "Cluster DB" -> "clusterdb", so names written apart and together meet.';

CREATE FUNCTION kgrag.trigrams(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(pg_catalog.array_agg(DISTINCT pg_catalog.substr(p, i, 3) COLLATE "C"
                                          ORDER BY pg_catalog.substr(p, i, 3) COLLATE "C"), '{}')
      FROM (SELECT '  ' || kgrag.squash(t) || ' ' AS p) AS padded,
           pg_catalog.generate_series(1, pg_catalog.length(padded.p) - 2) AS i
$$;
COMMENT ON FUNCTION kgrag.trigrams(text) IS
'Returns the sorted distinct character trigrams of the squashed text (padded as pg_trgm pads a word). Used with a GIN index for typo-tolerant entity linking without the pg_trgm extension.';

CREATE FUNCTION kgrag.entity_key(entity_type text, entity_name text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.replace(kgrag.canonical_name(entity_type), ' ', '_') || ':' || kgrag.canonical_name(entity_name)
$$;
COMMENT ON FUNCTION kgrag.entity_key(text, text) IS
'Returns the stable entity id for a type and a name: canonical type, a colon, canonical name ("Service", "Serviço Autenticação" -> "service:servico autenticacao"). Together with tenant_id it is the entity key; two types with the same name stay apart.';

-- ---------------------------------------------------------------------------------------------
-- Tables
-- ---------------------------------------------------------------------------------------------

CREATE TABLE kgrag.settings (
    tenant_id   text NOT NULL,
    key         text NOT NULL,
    value       jsonb NOT NULL,
    description text NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, key)
);
COMMENT ON TABLE kgrag.settings IS
'Settings as data. tenant_id ''*'' holds the defaults of every tenant; a row for a tenant overrides the default of the same key. Read them with kgrag.setting(key).';

CREATE TABLE kgrag.router_rule (
    tenant_id   text NOT NULL,
    rule_id     text NOT NULL,
    route       text NOT NULL CHECK (route IN ('global', 'mixed')),
    pattern     text NOT NULL,
    lang        text NOT NULL DEFAULT 'en',
    description text NOT NULL DEFAULT '',
    enabled     boolean NOT NULL DEFAULT true,
    PRIMARY KEY (tenant_id, rule_id)
);
COMMENT ON TABLE kgrag.router_rule IS
'Router markers: a case- and accent-insensitive regular expression over the question that sends it to the global route (aggregation) or the mixed route (named subject, broad context). tenant_id ''*'' rules apply to every tenant.';

CREATE TABLE kgrag.document (
    tenant_id    text NOT NULL,
    doc_id       text NOT NULL CHECK (doc_id <> '' AND pg_catalog.strpos(doc_id, '#') = 0),
    title        text NOT NULL DEFAULT '',
    source_uri   text,
    metadata     jsonb NOT NULL DEFAULT '{}',
    lang         regconfig NOT NULL DEFAULT 'simple',
    content_hash text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (tenant_id, doc_id)
);
COMMENT ON TABLE kgrag.document IS 'One row per ingested document; content_hash decides whether a re-ingested document changed.';

CREATE TABLE kgrag.chunk (
    tenant_id    text NOT NULL,
    chunk_id     text NOT NULL,
    doc_id       text NOT NULL,
    ordinal      integer NOT NULL CHECK (ordinal >= 0),
    char_start   integer NOT NULL,
    char_end     integer NOT NULL,
    title        text NOT NULL DEFAULT '',
    text         text NOT NULL,
    content_hash text NOT NULL,
    lang         regconfig NOT NULL DEFAULT 'simple',
    -- Stemmed as written (stemmers want the accents) and stemmed once more with accents folded,
    -- so "renovações" meets "renovação" and "renovacao" meets "renovação".
    tsv          tsvector GENERATED ALWAYS AS
                 (pg_catalog.to_tsvector(lang, title || E'\n' || text)
                  || pg_catalog.to_tsvector(lang, kgrag.fold(title || E'\n' || text))) STORED,
    PRIMARY KEY (tenant_id, chunk_id),
    UNIQUE (tenant_id, doc_id, ordinal),
    CHECK (chunk_id = doc_id || '#' || ordinal),
    CHECK (char_start >= 0 AND char_end >= char_start),
    FOREIGN KEY (tenant_id, doc_id) REFERENCES kgrag.document (tenant_id, doc_id) ON DELETE CASCADE
);
COMMENT ON TABLE kgrag.chunk IS 'A piece of a document with its char offsets, its full-text vector (tsv: stemmed as written and with accents folded) and its embedding. chunk_id = doc_id || ''#'' || ordinal.';

CREATE TABLE kgrag.entity (
    tenant_id        text NOT NULL,
    entity_id        text NOT NULL CHECK (pg_catalog.strpos(entity_id, '|') = 0),
    name             text NOT NULL,
    type             text NOT NULL,
    description      text NOT NULL DEFAULT '',
    degree           integer NOT NULL DEFAULT 0,
    answer           text,
    answer_chunk_id  text,
    answer_hash      text,
    answer_stale     boolean NOT NULL DEFAULT false,
    embedded_hash    text,
    created_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (tenant_id, entity_id),
    FOREIGN KEY (tenant_id, answer_chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id) ON DELETE SET NULL (answer_chunk_id)
);
COMMENT ON TABLE kgrag.entity IS 'A node of the graph. entity_id = kgrag.entity_key(type, name). answer is a short sentence taken from answer_chunk_id when that chunk had hash answer_hash.';

CREATE TABLE kgrag.alias (
    tenant_id  text NOT NULL,
    entity_id  text NOT NULL,
    alias      text NOT NULL CHECK (alias <> ''),
    doc_id     text NOT NULL DEFAULT '',
    alias_fold text GENERATED ALWAYS AS (kgrag.canonical_name(alias)) STORED,
    alias_sq   text GENERATED ALWAYS AS (kgrag.squash(alias)) STORED,
    trigrams   text[] GENERATED ALWAYS AS (kgrag.trigrams(alias)) STORED,
    PRIMARY KEY (tenant_id, entity_id, alias, doc_id),
    FOREIGN KEY (tenant_id, entity_id) REFERENCES kgrag.entity (tenant_id, entity_id) ON DELETE CASCADE
);
COMMENT ON TABLE kgrag.alias IS 'Names an entity is known by, with their canonical (alias_fold) and squashed (alias_sq) forms. doc_id is the document that gave the alias ('''' for the entity''s own name and gazetteer entries).';

CREATE TABLE kgrag.mention (
    tenant_id text NOT NULL,
    entity_id text NOT NULL,
    chunk_id  text NOT NULL,
    PRIMARY KEY (tenant_id, entity_id, chunk_id),
    FOREIGN KEY (tenant_id, entity_id) REFERENCES kgrag.entity (tenant_id, entity_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id) ON DELETE CASCADE
);
COMMENT ON TABLE kgrag.mention IS 'Entity x chunk: the chunk cites the entity. This is where an entity''s citations come from.';

CREATE TABLE kgrag.relation_evidence (
    tenant_id   text NOT NULL,
    src         text NOT NULL,
    dst         text NOT NULL,
    rel         text NOT NULL,
    chunk_id    text NOT NULL,
    quote       text NOT NULL DEFAULT '',
    confidence  double precision NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    negated     boolean NOT NULL DEFAULT false,
    extractor   text NOT NULL,
    valid_from  timestamptz,
    valid_to    timestamptz,
    PRIMARY KEY (tenant_id, src, dst, rel, chunk_id),
    FOREIGN KEY (tenant_id, src) REFERENCES kgrag.entity (tenant_id, entity_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, dst) REFERENCES kgrag.entity (tenant_id, entity_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id) ON DELETE CASCADE,
    CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_to >= valid_from)
);
COMMENT ON TABLE kgrag.relation_evidence IS 'Every extracted typed relation with its provenance (chunk, literal quote, confidence, extractor, validity). Typed edges are aggregated from the non-negated rows; a negated fact is kept here and never becomes an edge.';

CREATE TABLE kgrag.edge (
    tenant_id          text NOT NULL,
    src                text NOT NULL,
    dst                text NOT NULL,
    rel                text NOT NULL,
    weight             double precision NOT NULL CHECK (weight > 0),
    rank               integer NOT NULL DEFAULT 0,
    confidence         double precision NOT NULL DEFAULT 1.0,
    evidence_chunk_id  text,
    evidence_quote     text,
    extractor          text NOT NULL DEFAULT 'cooccurrence',
    valid_from         timestamptz,
    valid_to           timestamptz,
    PRIMARY KEY (tenant_id, src, dst, rel),
    CHECK (src <> dst),
    FOREIGN KEY (tenant_id, src) REFERENCES kgrag.entity (tenant_id, entity_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, dst) REFERENCES kgrag.entity (tenant_id, entity_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, evidence_chunk_id) REFERENCES kgrag.chunk (tenant_id, chunk_id) ON DELETE SET NULL (evidence_chunk_id)
);
COMMENT ON TABLE kgrag.edge IS 'Graph edges. rel = ''CO_OCCURS'' for co-occurrence (weight = chunks citing both, stored in both directions); other rel values are typed relations aggregated from kgrag.relation_evidence. rank = position among the src''s edges by weight desc, ties by dst then rel.';

CREATE TABLE kgrag.community (
    tenant_id    text NOT NULL,
    community_id text NOT NULL,
    level        integer NOT NULL CHECK (level >= 0),
    parent_id    text,
    title        text NOT NULL DEFAULT '',
    size         integer NOT NULL DEFAULT 0,
    weight       integer NOT NULL DEFAULT 0,
    stale        boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, community_id),
    FOREIGN KEY (tenant_id, parent_id) REFERENCES kgrag.community (tenant_id, community_id) ON DELETE CASCADE
);
COMMENT ON TABLE kgrag.community IS 'Hierarchical communities (Leiden): level 0 is the coarsest, parent_id the community one level up. weight = distinct documents behind the community.';

CREATE TABLE kgrag.community_member (
    tenant_id    text NOT NULL,
    community_id text NOT NULL,
    entity_id    text NOT NULL,
    PRIMARY KEY (tenant_id, community_id, entity_id),
    FOREIGN KEY (tenant_id, community_id) REFERENCES kgrag.community (tenant_id, community_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, entity_id) REFERENCES kgrag.entity (tenant_id, entity_id) ON DELETE CASCADE
);
COMMENT ON TABLE kgrag.community_member IS 'Entity x community membership, one row per level the entity belongs to.';

CREATE TABLE kgrag.community_report (
    tenant_id          text NOT NULL,
    community_id       text NOT NULL,
    title              text NOT NULL DEFAULT '',
    report             text NOT NULL,
    evidence_chunk_ids text[] NOT NULL DEFAULT '{}',
    weight             integer NOT NULL DEFAULT 0,
    generator          text NOT NULL DEFAULT 'template',
    generated_hash     text NOT NULL,
    stale              boolean NOT NULL DEFAULT false,
    embedded_hash      text,
    generated_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (tenant_id, community_id),
    FOREIGN KEY (tenant_id, community_id) REFERENCES kgrag.community (tenant_id, community_id) ON DELETE CASCADE
);
COMMENT ON TABLE kgrag.community_report IS 'One report per community: a map of the community, never evidence. What a report cites is the chunks in evidence_chunk_ids. generated_hash is the hash of the inputs it was written from.';

-- ---------------------------------------------------------------------------------------------
-- Indexes (the vector ones are created with the dimension below)
-- ---------------------------------------------------------------------------------------------

CREATE INDEX chunk_tsv_idx ON kgrag.chunk USING gin (tsv);
CREATE INDEX chunk_hash_idx ON kgrag.chunk (tenant_id, content_hash);
CREATE INDEX entity_type_idx ON kgrag.entity (tenant_id, type);
CREATE INDEX alias_fold_idx ON kgrag.alias (tenant_id, alias_fold);
CREATE INDEX alias_sq_idx ON kgrag.alias (tenant_id, alias_sq);
CREATE INDEX alias_trigrams_idx ON kgrag.alias USING gin (trigrams);
CREATE INDEX alias_doc_idx ON kgrag.alias (tenant_id, doc_id) WHERE doc_id <> '';
CREATE INDEX mention_chunk_idx ON kgrag.mention (tenant_id, chunk_id);
CREATE INDEX relation_evidence_chunk_idx ON kgrag.relation_evidence (tenant_id, chunk_id);
CREATE INDEX edge_src_rank_idx ON kgrag.edge (tenant_id, src, rank);
CREATE INDEX edge_dst_idx ON kgrag.edge (tenant_id, dst);
CREATE INDEX community_level_idx ON kgrag.community (tenant_id, level);
CREATE INDEX community_member_entity_idx ON kgrag.community_member (tenant_id, entity_id);

-- ---------------------------------------------------------------------------------------------
-- Embedding columns and binary-quantized HNSW indexes, sized by the install-time dimension
-- ---------------------------------------------------------------------------------------------

DO $$
DECLARE
    d integer := pg_catalog.current_setting('kgrag.install_dimension', true)::integer;
    t text;
BEGIN
    IF d IS NULL OR d < 1 OR d > 16000 THEN
        RAISE EXCEPTION 'embedding dimension must be between 1 and 16000 (pgvector''s vector limit), got %', d;
    END IF;
    FOREACH t IN ARRAY ARRAY['chunk', 'entity', 'community_report'] LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I ADD COLUMN embedding vector(%s)', t, d);
        -- m = 8: a 512-bit code is 64 bytes, so neighbour lists dominate the index size; m = 8
        -- halves them (docs/benchmarks.md: 1/10 of a full-vector HNSW, recall@10 0.98 at 300 candidates).
        EXECUTE pg_catalog.format(
            'CREATE INDEX %I ON kgrag.%I USING hnsw ((binary_quantize(embedding)::bit(%s)) bit_hamming_ops) '
            'WITH (m = 8, ef_construction = 64)',
            t || '_embedding_bq_idx', t, d);
    END LOOP;
END
$$;
CREATE INDEX chunk_unembedded_idx ON kgrag.chunk (tenant_id) WHERE embedding IS NULL;
CREATE INDEX entity_unembedded_idx ON kgrag.entity (tenant_id) WHERE embedding IS NULL;

-- ---------------------------------------------------------------------------------------------
-- Row-level security: enabled and forced everywhere; the tenant is read once per statement
-- (the scalar subquery becomes an InitPlan), never per row.
-- ---------------------------------------------------------------------------------------------

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['document', 'chunk', 'entity', 'alias', 'mention', 'relation_evidence',
                             'edge', 'community', 'community_member', 'community_report'] LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE pg_catalog.format(
            'CREATE POLICY tenant_isolation ON kgrag.%I USING (tenant_id = (SELECT kgrag.current_tenant())) '
            'WITH CHECK (tenant_id = (SELECT kgrag.current_tenant()))', t);
    END LOOP;
    -- settings and router rules: a tenant reads its own rows and the defaults (tenant ''*''),
    -- and writes only its own rows.
    FOREACH t IN ARRAY ARRAY['settings', 'router_rule'] LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE pg_catalog.format(
            'CREATE POLICY tenant_read ON kgrag.%I FOR SELECT '
            'USING (tenant_id IN (''*'', (SELECT kgrag.current_tenant())))', t);
        EXECUTE pg_catalog.format(
            'CREATE POLICY tenant_write ON kgrag.%I FOR ALL '
            'USING (tenant_id = (SELECT kgrag.current_tenant())) '
            'WITH CHECK (tenant_id = (SELECT kgrag.current_tenant()))', t);
    END LOOP;
END
$$;

-- ---------------------------------------------------------------------------------------------
-- Defaults (tenant '*'); the installer runs this file with kgrag.tenant = '*'.
-- ---------------------------------------------------------------------------------------------

INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
    ('*', 'embedding_dimension', pg_catalog.to_jsonb(pg_catalog.current_setting('kgrag.install_dimension')::integer),
     'Dimension of every embedding column, fixed at install time.'),
    ('*', 'text_search_config', '"english"',
     'Default text search configuration for documents that do not name their language.');

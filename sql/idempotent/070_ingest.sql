-- Ingestion writes: Python COPYs a batch into temporary staging tables, then one call applies it
-- set-based, in the caller's transaction. A changed document replaces its own contribution; the
-- graph is brought up to date for the entities the batch touched, never for the whole tenant:
-- co-occurrence weights move by the chunks that came and went (exact counts), typed edges are
-- recomputed, degrees move with the neighbours gained and lost.
--
-- Concurrency: writers lock the documents (their rows, in doc_id order), write the chunks, then
-- lock the entities they touch (transaction-scoped advisory locks, in sorted order), so two
-- batches over overlapping entities overlap while they index chunks, serialize where their
-- entities overlap instead of deadlocking, and each recomputes weights from committed mentions.

CREATE OR REPLACE FUNCTION kgrag_private.lock_keys(kind text, keys text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    stripe integer;
BEGIN
    -- Keys are hashed onto 128 stripes per (tenant, kind), so a batch holds at most 128 locks of a
    -- kind however many keys it touches (the shared lock table is finite); stripes are taken in
    -- ascending order, so writers never wait on each other in a cycle.
    FOR stripe IN
        SELECT DISTINCT (hashtextextended(u.k, 0) & 127)::integer FROM unnest(keys) AS u(k)
         WHERE u.k IS NOT NULL ORDER BY 1
    LOOP
        PERFORM pg_advisory_xact_lock(hashtext('kgrag|' || t || '|' || kind), stripe);
    END LOOP;
END
$$;
COMMENT ON FUNCTION kgrag_private.lock_keys(text, text[]) IS
'Private. Returns nothing; takes transaction-scoped advisory locks on the stripes (128 per tenant and kind) the keys hash to, in ascending order.';

CREATE OR REPLACE FUNCTION kgrag_private.stage_begin() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    PERFORM kgrag.current_tenant();  -- a batch is a tenant's: fail closed before anything
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_document (
        doc_id text PRIMARY KEY, title text NOT NULL DEFAULT '', source_uri text,
        metadata jsonb NOT NULL DEFAULT '{}', lang text NOT NULL DEFAULT 'simple', content_hash text NOT NULL,
        access text[]
    ) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_chunk (
        doc_id text NOT NULL, ordinal integer NOT NULL, char_start integer NOT NULL, char_end integer NOT NULL,
        title text NOT NULL DEFAULT '', text text NOT NULL, content_hash text NOT NULL, embedding vector,
        page integer, headings text[] NOT NULL DEFAULT '{}',
        PRIMARY KEY (doc_id, ordinal)
    ) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_entity (
        doc_id text NOT NULL, name text NOT NULL, type text NOT NULL, description text NOT NULL DEFAULT '',
        answer text, answer_ordinal integer, aliases text[] NOT NULL DEFAULT '{}', ordinals integer[] NOT NULL,
        identifier text, audience text,
        -- the form the identifier is compared in (kgrag_private.screen_staged sets it)
        identifier_form text,
        -- an entity of a document for an audience is the audience's own: its id is marked with it
        -- (kgrag_private.id_access reads the mark, and the graph tables' policies with it)
        entity_id text GENERATED ALWAYS AS (CASE WHEN identifier_form IS NULL THEN kgrag.entity_key(type, name)
                                                 ELSE kgrag_private.identified_key(type, identifier_form) END
                                            || COALESCE('~' || audience, '')) STORED
    ) ON COMMIT DROP;
    CREATE INDEX IF NOT EXISTS kgrag_stage_entity_doc ON pg_temp.kgrag_stage_entity (doc_id);
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_relation (
        doc_id text NOT NULL, ordinal integer NOT NULL, source text NOT NULL, source_type text NOT NULL,
        target text NOT NULL, target_type text NOT NULL, rel text NOT NULL, quote text NOT NULL DEFAULT '', confidence double precision NOT NULL DEFAULT 1,
        negated boolean NOT NULL DEFAULT false, extractor text NOT NULL, valid_from timestamptz, valid_to timestamptz
    ) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_set_aside (
        doc_id text NOT NULL, ordinal integer NOT NULL, what text NOT NULL, reason text NOT NULL,
        quote text NOT NULL DEFAULT '', extractor text NOT NULL DEFAULT ''
    ) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_cluster (
        entity_id text NOT NULL, level integer NOT NULL, cluster integer NOT NULL, parent_cluster integer
    ) ON COMMIT DROP;
END
$$;
COMMENT ON FUNCTION kgrag_private.stage_begin() IS
'Private. Returns nothing; creates the temporary staging tables of one ingestion batch (pg_temp.kgrag_stage_document, _chunk, _entity, _relation, _set_aside, _cluster), dropped at commit. COPY the batch into them, then call kgrag_private.ingest_apply().';

CREATE OR REPLACE FUNCTION kgrag_private.screen_staged() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    max_title integer := kgrag.setting('max_title_chars')::integer;
    max_aliases integer := kgrag.setting('max_aliases_per_entity')::integer;
    max_alias integer := kgrag.setting('max_alias_chars')::integer;
    max_quote integer := kgrag.setting('max_quote_chars')::integer;
    kinds jsonb := kgrag_private.identifier_kinds();
    refused jsonb;
    nameless integer;
BEGIN
    -- What one document may carry; a document past a limit is refused whole, by name, and the
    -- rest of the batch goes on.
    WITH reasons AS (
        SELECT d.doc_id, format('its title is %s characters long, above %s (setting max_title_chars)',
                                length(d.title), max_title) AS reason
          FROM pg_temp.kgrag_stage_document AS d WHERE length(d.title) > max_title
        UNION ALL
        SELECT e.doc_id, format('entity %s has %s aliases, above %s (setting max_aliases_per_entity)',
                                quote_literal(left(e.name, 60)), cardinality(e.aliases), max_aliases)
          FROM pg_temp.kgrag_stage_entity AS e WHERE cardinality(e.aliases) > max_aliases
        UNION ALL
        SELECT e.doc_id, format('a name, type, identifier or alias of entity %s is %s characters long, above %s (setting max_alias_chars)',
                                quote_literal(left(e.name, 60)), max(length(a.alias)), max_alias)
          FROM pg_temp.kgrag_stage_entity AS e
         CROSS JOIN LATERAL unnest(ARRAY[e.name, e.type, e.identifier] || e.aliases) AS a(alias)
         WHERE length(a.alias) > max_alias
         GROUP BY e.doc_id, e.name
        UNION ALL
        SELECT r.doc_id, format('a relation''s type is %s characters long, above %s (setting max_alias_chars)',
                                max(greatest(length(r.rel), length(r.source_type), length(r.target_type))), max_alias)
          FROM pg_temp.kgrag_stage_relation AS r
         WHERE greatest(length(r.rel), length(r.source_type), length(r.target_type)) > max_alias
         GROUP BY r.doc_id
        UNION ALL
        SELECT r.doc_id, format('a relation''s quote is %s characters long, above %s (setting max_quote_chars)',
                                max(length(r.quote)), max_quote)
          FROM pg_temp.kgrag_stage_relation AS r WHERE length(r.quote) > max_quote
         GROUP BY r.doc_id
    )
    SELECT jsonb_object_agg(x.doc_id, x.reason) INTO refused
      FROM (SELECT DISTINCT ON (r.doc_id) r.doc_id, r.reason FROM reasons AS r ORDER BY r.doc_id, r.reason) AS x;
    IF refused IS NOT NULL THEN
        DELETE FROM pg_temp.kgrag_stage_relation AS r WHERE refused ? r.doc_id;
        DELETE FROM pg_temp.kgrag_stage_entity AS e WHERE refused ? e.doc_id;
        DELETE FROM pg_temp.kgrag_stage_chunk AS c WHERE refused ? c.doc_id;
        DELETE FROM pg_temp.kgrag_stage_document AS d WHERE refused ? d.doc_id;
    END IF;
    -- An identifier with no letter or digit identifies nothing: the name decides.
    UPDATE pg_temp.kgrag_stage_entity AS e SET identifier = NULL
     WHERE e.identifier IS NOT NULL AND kgrag.canonical_name(e.identifier) = '';
    -- The others are compared in the form of their kind: "EMP-0042" and "emp 0042" are one.
    UPDATE pg_temp.kgrag_stage_entity AS e
       SET identifier_form = kgrag_private.identifier_form(kgrag_private.identifier_kind(e.type, e.identifier, kinds),
                                                           e.identifier)
     WHERE e.identifier_form IS DISTINCT FROM
           kgrag_private.identifier_form(kgrag_private.identifier_kind(e.type, e.identifier, kinds), e.identifier);
    -- A name (or type) with no letter or digit would make one entity of every such name: dropped.
    DELETE FROM pg_temp.kgrag_stage_entity AS e WHERE kgrag.canonical_name(e.name) = '' OR kgrag.canonical_name(e.type) = '';
    GET DIAGNOSTICS nameless = ROW_COUNT;
    RETURN jsonb_build_object('refused', COALESCE(refused, '{}'),
                              'rejected', CASE WHEN nameless > 0 THEN jsonb_build_object('entity name folds to nothing', nameless)
                                               ELSE '{}' END);
END
$$;
COMMENT ON FUNCTION kgrag_private.screen_staged() IS
'Private. The first step of kgrag_private.ingest_apply: takes out of the staged batch every document past a limit of what one document may carry (settings max_title_chars, max_aliases_per_entity, max_alias_chars for names, identifiers, aliases and types, max_quote_chars) and every entity whose name or type folds to nothing; an identifier that folds to nothing is dropped (the name decides), any other is given the form its kind compares (kgrag_private.identifier_form, the kind of the setting identifier_kinds: kgrag_private.identifier_kind), which its entity''s id is made of. Returns {"refused": {doc_id: why}, "rejected": {reason: n}}.';

CREATE OR REPLACE FUNCTION kgrag_private.said_after(doc text, short text, long_words text[]) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    whole text := ' ' || array_to_string(long_words, ' ') || ' ';
    -- the short form followed by the long name's second word is part of the long name: masked
    -- with as many characters, so places do not move (no pattern is built from the names)
    joined text := ' ' || short || ' ' || long_words[2] || ' ';
    mask text := ' ' || repeat('~', length(joined) - 2) || ' ';
    long_first bigint;
    short_first bigint;
BEGIN
    SELECT min(c.ordinal::bigint * 100000000 + strpos(c.x, whole)) FILTER (WHERE strpos(c.x, whole) > 0),
           min(c.ordinal::bigint * 100000000 + strpos(replace(c.x, joined, mask), ' ' || short || ' '))
               FILTER (WHERE strpos(replace(c.x, joined, mask), ' ' || short || ' ') > 0)
      INTO long_first, short_first
      FROM pg_temp.kgrag_short_text AS c WHERE c.doc_id = doc;
    RETURN long_first < short_first;
END
$$;
COMMENT ON FUNCTION kgrag_private.said_after(text, text, text[]) IS
'Private. Returns whether, in a staged document (its chunks in their words, pg_temp.kgrag_short_text), a short form (a canonical word) is said alone only after the long name (its canonical words) was first said: "Grace Liu opened ... Grace said", not "Grace ... Grace Liu". NULL when either is never said.';

CREATE OR REPLACE FUNCTION kgrag_private.fold_short_forms() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    kinds text[] := ARRAY(SELECT kgrag.canonical_name(x)
                            FROM jsonb_array_elements_text(kgrag.setting('short_form_types')) AS x);
    honorifics constant text[] := ARRAY['mr', 'mrs', 'ms', 'miss', 'dr', 'prof', 'sr', 'sra', 'srta', 'dra', 'dom', 'dona'];
    checked_per_document constant integer := 100;  -- pairs of other types whose places are read
    folded integer;
BEGIN
    -- Within one document, a short form of a name that matches exactly one longer name of the
    -- same type in that document is that entity: its mentions, aliases and relations go to the
    -- longer name, and it becomes an alias of it. A person's short forms: its first or last word,
    -- "Ms. Liu", "G. Liu"; another type's (a name found in the text, which may be a place): only
    -- the first word of a name of two or three, said alone only after the whole name. Two longer
    -- names it could be ("Grace Liu", "Grace Park"; for another type, two it is said after) leave
    -- it as it is. Each name is folded once
    -- and the pairs are found by equal words (hash joins): the work grows with the names, not
    -- with their pairs.
    CREATE TEMP TABLE IF NOT EXISTS kgrag_short_name (doc_id text, name text, type text, kind text, w text[],
                                                      identified boolean) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_short_form (doc_id text, short_name text, short_type text, long_name text,
                                                      long_type text) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_short_text (doc_id text, ordinal integer, x text) ON COMMIT DROP;
    TRUNCATE pg_temp.kgrag_short_name, pg_temp.kgrag_short_form, pg_temp.kgrag_short_text;
    INSERT INTO pg_temp.kgrag_short_name
    SELECT e.doc_id, e.name, e.type, k.kind, string_to_array(kgrag.canonical_name(e.name), ' '), e.identifier IS NOT NULL
      FROM pg_temp.kgrag_stage_entity AS e
     CROSS JOIN LATERAL (SELECT kgrag.canonical_name(e.type) AS kind) AS k
     WHERE k.kind = ANY (kinds);
    CREATE TEMP TABLE IF NOT EXISTS kgrag_short_pair (doc_id text, name text, type text, kind text, long_name text,
                                                      long_type text, long_w text[]) ON COMMIT DROP;
    TRUNCATE pg_temp.kgrag_short_pair;
    WITH longs AS (
        SELECT n.*, n.w[1] AS first, n.w[cardinality(n.w)] AS last FROM pg_temp.kgrag_short_name AS n
         WHERE cardinality(n.w) BETWEEN 2 AND 6 AND length(n.w[1]) > 1 AND n.w[1] <> ALL (honorifics)
    ), shorts AS (  -- (a name given with an identifier is that entity: never folded)
        SELECT n.*, n.w[1] AS first, n.w[cardinality(n.w)] AS last FROM pg_temp.kgrag_short_name AS n
         WHERE cardinality(n.w) <= 2 AND NOT n.identified
    ), pairs AS (
        SELECT s.doc_id, s.name, s.type, s.kind, l.name AS long_name, l.type AS long_type, l.w AS long_w
          FROM shorts AS s JOIN longs AS l ON l.doc_id = s.doc_id AND l.kind = s.kind AND l.first = s.first
         WHERE cardinality(s.w) = 1 AND length(s.first) > 1 AND (s.kind = 'person' OR cardinality(l.w) <= 3)
        UNION ALL
        SELECT s.doc_id, s.name, s.type, s.kind, l.name, l.type, l.w
          FROM shorts AS s JOIN longs AS l ON l.doc_id = s.doc_id AND l.kind = s.kind AND l.last = s.first
         WHERE s.kind = 'person' AND cardinality(s.w) = 1 AND length(s.first) > 1
        UNION ALL
        SELECT s.doc_id, s.name, s.type, s.kind, l.name, l.type, l.w
          FROM shorts AS s JOIN longs AS l ON l.doc_id = s.doc_id AND l.kind = s.kind AND l.last = s.last
         WHERE cardinality(s.w) = 2  -- (a title says a person is meant, whatever the type)
           AND (s.first = ANY (honorifics) OR (s.kind = 'person' AND length(s.first) = 1 AND s.first = left(l.first, 1)))
    )
    INSERT INTO pg_temp.kgrag_short_pair
    SELECT p.doc_id, p.name, p.type, p.kind, p.long_name, p.long_type, p.long_w FROM pairs AS p;
    -- the places of the other types' short forms: the documents' chunks in their words, once each
    INSERT INTO pg_temp.kgrag_short_text
    SELECT c.doc_id, c.ordinal, ' ' || kgrag.canonical_name(c.text) || ' '
      FROM pg_temp.kgrag_stage_chunk AS c
     WHERE c.doc_id IN (SELECT p.doc_id FROM pg_temp.kgrag_short_pair AS p WHERE p.kind <> 'person');
    -- a name of another type matches a longer name only where it is said alone after it (at most
    -- checked_per_document pairs a document are read); then it must match exactly one
    INSERT INTO pg_temp.kgrag_short_form
    SELECT p.doc_id, p.name, p.type, min(p.long_name), min(p.long_type)
      FROM (SELECT x.*, row_number() OVER (PARTITION BY x.doc_id, x.kind = 'person' ORDER BY x.name, x.long_name) AS n
              FROM pg_temp.kgrag_short_pair AS x) AS p
     WHERE p.kind = 'person' OR split_part(kgrag.canonical_name(p.name), ' ', 1) = ANY (honorifics)
        OR (p.n <= checked_per_document AND COALESCE(kgrag_private.said_after(p.doc_id, p.long_w[1], p.long_w), false))
     GROUP BY p.doc_id, p.name, p.type
    HAVING count(DISTINCT array_to_string(p.long_w, ' ')) = 1;
    GET DIAGNOSTICS folded = ROW_COUNT;
    IF folded = 0 THEN
        RETURN 0;
    END IF;
    -- the longer name takes the short one's mentions, aliases, and description where it has none
    UPDATE pg_temp.kgrag_stage_entity AS f
       SET aliases = ARRAY(SELECT DISTINCT a FROM unnest(f.aliases || x.names) AS a ORDER BY a),
           ordinals = ARRAY(SELECT DISTINCT o FROM unnest(f.ordinals || x.ordinals) AS o ORDER BY o),
           description = CASE WHEN f.description = '' THEN x.description ELSE f.description END
      FROM (SELECT k.doc_id, k.long_name, k.long_type,
                   array_agg(DISTINCT a) AS names,
                   array_agg(DISTINCT o) AS ordinals,
                   COALESCE(max(s.description) FILTER (WHERE s.description <> ''), '') AS description
              FROM pg_temp.kgrag_short_form AS k
              JOIN pg_temp.kgrag_stage_entity AS s ON s.doc_id = k.doc_id AND s.name = k.short_name AND s.type = k.short_type
             CROSS JOIN LATERAL unnest(s.aliases || s.name) AS a
             CROSS JOIN LATERAL unnest(s.ordinals) AS o
             GROUP BY k.doc_id, k.long_name, k.long_type) AS x
     WHERE f.doc_id = x.doc_id AND f.name = x.long_name AND f.type = x.long_type;
    -- relations name the longer name, with its type
    UPDATE pg_temp.kgrag_stage_relation AS r SET source = k.long_name, source_type = k.long_type
      FROM pg_temp.kgrag_short_form AS k
     WHERE r.doc_id = k.doc_id AND r.source = k.short_name AND kgrag.canonical_name(r.source_type) = kgrag.canonical_name(k.short_type);
    UPDATE pg_temp.kgrag_stage_relation AS r SET target = k.long_name, target_type = k.long_type
      FROM pg_temp.kgrag_short_form AS k
     WHERE r.doc_id = k.doc_id AND r.target = k.short_name AND kgrag.canonical_name(r.target_type) = kgrag.canonical_name(k.short_type);
    DELETE FROM pg_temp.kgrag_stage_entity AS s
     USING pg_temp.kgrag_short_form AS k
     WHERE s.doc_id = k.doc_id AND s.name = k.short_name AND s.type = k.short_type;
    RETURN folded;
END
$$;
COMMENT ON FUNCTION kgrag_private.fold_short_forms() IS
'Private. A step of kgrag_private.ingest_apply, for every extractor: within one staged document, an entity of a type listed in the setting short_form_types (Person and Name, the keyphrases extractor''s, by default) whose name is a short form of exactly one longer name of the same type in that document is folded into it (a Person: its first or last word, "Ms. Liu", "G. Liu"; never one given with an identifier; another type, such as the names the keyphrases extractor finds, which may be places: a title and the last word, "Ms. Liu", or only the first word of a name of two or three words, said alone only after the whole name, kgrag_private.said_after, at most 100 such pairs read a document): the longer name takes its mentions, aliases (the short name among them) and relations. Each name is folded once and pairs are found by equal words, so the work grows with the names. Returns the number of short forms folded.';

CREATE OR REPLACE FUNCTION kgrag_private.apply_documents(docs text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n_chunks integer;
    old_texts text[];
    centre vector := kgrag_private.tenant_centre();  -- the codes of its vectors
BEGIN
    -- The document rows are the documents' locks: upserted first, in doc_id order, so a second
    -- writer of the same document waits here (new or not) and then sees the first one's chunks.
    INSERT INTO kgrag.document AS d (tenant_id, doc_id, title, source_uri, metadata, lang, content_hash, access,
                                     extraction)
    SELECT t, s.doc_id, s.title, s.source_uri, s.metadata, s.lang::regconfig, s.content_hash, s.access, x.extraction
      FROM pg_temp.kgrag_stage_document AS s LEFT JOIN pg_temp.kgrag_extraction AS x USING (doc_id)
     ORDER BY s.doc_id COLLATE "C"
    ON CONFLICT (tenant_id, doc_id) DO UPDATE
       SET title = excluded.title, source_uri = excluded.source_uri, metadata = excluded.metadata,
           lang = excluded.lang, content_hash = excluded.content_hash, updated_at = excluded.updated_at,
           access = excluded.access, extraction = excluded.extraction;
    -- fresh statistics for the staged rows, so the planner sizes the joins below right
    ANALYZE pg_temp.kgrag_stage_document, pg_temp.kgrag_stage_chunk, pg_temp.kgrag_stage_entity,
            pg_temp.kgrag_stage_relation;
    -- What the previous versions contributed, before they go.
    PERFORM kgrag_private.touch_documents(docs, -1);

    -- Unchanged chunk texts keep their embeddings (looked up before the old chunks go).
    UPDATE pg_temp.kgrag_stage_chunk AS s SET embedding = c.embedding
      FROM (SELECT DISTINCT ON (k.content_hash) k.content_hash, k.embedding FROM kgrag.chunk AS k
             WHERE k.tenant_id = t AND k.embedding IS NOT NULL
               AND k.content_hash IN (SELECT x.content_hash FROM pg_temp.kgrag_stage_chunk AS x WHERE x.embedding IS NULL)
             ORDER BY k.content_hash, k.chunk_id) AS c
     WHERE s.embedding IS NULL AND s.content_hash = c.content_hash;

    -- The documents replace their previous versions: old chunks go (with their mentions and
    -- evidence, and the cached extractions of texts no chunk holds any more). Chunks need no
    -- entity lock, so concurrent writers overlap up to here.
    old_texts := ARRAY(SELECT DISTINCT c.content_hash FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.doc_id = ANY (docs));
    PERFORM kgrag_private.release_chunks(docs);
    DELETE FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.doc_id = ANY (docs);
    DELETE FROM kgrag.ingest_failure AS f WHERE f.tenant_id = t AND f.doc_id = ANY (docs);
    INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, title, text, content_hash,
                             lang, embedding, quantized, page, headings, access)
    SELECT t, s.doc_id || '#' || s.ordinal, s.doc_id, s.ordinal, s.char_start, s.char_end, s.title, s.text,
           s.content_hash, d.lang::regconfig, f.v, kgrag_private.quantize(f.v, centre), s.page, s.headings, d.access
      FROM pg_temp.kgrag_stage_chunk AS s JOIN pg_temp.kgrag_stage_document AS d USING (doc_id)
     CROSS JOIN LATERAL (SELECT kgrag_private.fit_vector(s.embedding) AS v) AS f
     ORDER BY s.doc_id COLLATE "C", s.ordinal
    -- no row conflicts (the documents' chunks were deleted above): the clause makes Citus write
    -- the rows with INSERT, where it would COPY them, which row-level security refuses
    ON CONFLICT (tenant_id, chunk_id) DO NOTHING;
    GET DIAGNOSTICS n_chunks = ROW_COUNT;
    PERFORM kgrag_private.forget_extractions(old_texts);
    RETURN n_chunks;
END
$$;
COMMENT ON FUNCTION kgrag_private.apply_documents(text[]) IS
'Private. The first step of kgrag_private.ingest_apply: upserts the staged documents (their rows are their locks), notes what their previous versions contributed, and replaces their chunks (an unchanged chunk text keeps its embedding). Returns the number of chunks written.';

CREATE OR REPLACE FUNCTION kgrag_private.apply_entities(docs text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    affected text[];
    named text[] := kgrag_private.named_by(docs);  -- whose names the previous versions gave
    kinds text[] := kgrag_private.namesake_kinds();
    n_mentions integer;
BEGIN
    affected := ARRAY(SELECT k.a FROM pg_temp.kgrag_touched AS k WHERE k.rel = 'ENTITY'
                      UNION SELECT s.entity_id FROM pg_temp.kgrag_stage_entity AS s
                      UNION SELECT x FROM unnest(named) AS x
                      UNION SELECT x FROM unnest(kgrag_private.namesakes_of(docs)) AS x);
    PERFORM kgrag_private.lock_keys('entity', affected);  -- the namesakes' name keys among them, in one ascending pass
    -- what the previous versions said goes: the names they gave and their sources
    DELETE FROM kgrag.alias_source AS a WHERE a.tenant_id = t AND a.doc_id = ANY (docs);
    DELETE FROM kgrag.entity_source AS x WHERE x.tenant_id = t AND x.doc_id = ANY (docs);

    -- Entities: one row per key; its name, description and answer are derived from its sources
    -- once the batch is in (kgrag_private.derive_entities).
    INSERT INTO kgrag.entity (tenant_id, entity_id, name, type, description)
    SELECT DISTINCT ON (s.entity_id) t, s.entity_id, s.name, s.type, ''
      FROM pg_temp.kgrag_stage_entity AS s
     ORDER BY s.entity_id, s.doc_id COLLATE "C"
    ON CONFLICT (tenant_id, entity_id) DO NOTHING;
    -- What each document says of each entity; an answer stands in the chunk named, else in the
    -- first chunk of the document that cites the entity.
    -- A namesake type's entity without an identifier notes its name key: kgrag_private.resolve_namesakes
    -- decides which entity it is once the batch is in.
    INSERT INTO kgrag.entity_source (tenant_id, entity_id, doc_id, name, description, answer, answer_chunk_id, name_key)
    SELECT DISTINCT ON (s.entity_id, s.doc_id) t, s.entity_id, s.doc_id, s.name, s.description,
           NULLIF(btrim(s.answer), ''),
           CASE WHEN NULLIF(btrim(s.answer), '') IS NOT NULL THEN
                COALESCE(s.doc_id || '#' || s.answer_ordinal,
                         s.doc_id || '#' || (SELECT min(o.ordinal) FROM unnest(s.ordinals) AS o(ordinal))) END,
           CASE WHEN kgrag_private.is_namesake(s.type, s.identifier, kinds) THEN s.entity_id END
      FROM pg_temp.kgrag_stage_entity AS s
     ORDER BY s.entity_id, s.doc_id, length(s.description) DESC, s.name COLLATE "C"
    ON CONFLICT (tenant_id, entity_id, doc_id) DO NOTHING;  -- as for the chunks: deleted above, and no COPY
    -- every spelling a document gives is an alias of the entity (once), and the document its source
    INSERT INTO kgrag.alias (tenant_id, entity_id, alias, sourced)
    SELECT DISTINCT t, s.entity_id, btrim(a.alias), true
      FROM pg_temp.kgrag_stage_entity AS s CROSS JOIN LATERAL unnest(s.name || s.aliases) AS a(alias)
     WHERE btrim(a.alias) <> ''
    ON CONFLICT DO NOTHING;
    INSERT INTO kgrag.alias_source (tenant_id, entity_id, alias, doc_id)
    SELECT DISTINCT t, s.entity_id, btrim(a.alias), s.doc_id
      FROM pg_temp.kgrag_stage_entity AS s CROSS JOIN LATERAL unnest(s.name || s.aliases) AS a(alias)
     WHERE btrim(a.alias) <> ''
    ON CONFLICT DO NOTHING;
    PERFORM kgrag_private.forget_aliases(named);  -- those no document gives any more

    -- Mentions, as the extractor located them.
    INSERT INTO kgrag.mention (tenant_id, entity_id, chunk_id)
    SELECT DISTINCT t, s.entity_id, s.doc_id || '#' || o.ordinal
      FROM pg_temp.kgrag_stage_entity AS s CROSS JOIN LATERAL unnest(s.ordinals) AS o(ordinal)
      JOIN pg_temp.kgrag_stage_chunk AS c ON c.doc_id = s.doc_id AND c.ordinal = o.ordinal
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n_mentions = ROW_COUNT;
    RETURN n_mentions;
END
$$;
COMMENT ON FUNCTION kgrag_private.apply_entities(text[]) IS
'Private. The second step of kgrag_private.ingest_apply: locks the entities the batch touches (and those the previous versions named), replaces what the documents said of them (kgrag.entity_source) and the aliases they gave (kgrag.alias_source; a name no document gives any more goes), adds the new entities and the mentions the extractor located. Returns the number of mentions written.';

CREATE OR REPLACE FUNCTION kgrag_private.apply_relations() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n_relations integer;
    rejected jsonb;
    dropped jsonb;
BEGIN
    -- Relations: endpoints are entities of the same document (the extractor resolved them).
    CREATE TEMP TABLE kgrag_resolved ON COMMIT DROP AS
    WITH rel_keys AS (
        SELECT DISTINCT x.rel, kgrag.relation_key(x.rel) AS rel_key
          FROM pg_temp.kgrag_stage_relation AS x
    ), ids AS (
        SELECT DISTINCT x.doc_id, x.name, x.type, x.entity_id FROM pg_temp.kgrag_stage_entity AS x
    )
    SELECT r.*, k.rel_key, s.entity_id AS src, d.entity_id AS dst
      FROM pg_temp.kgrag_stage_relation AS r
      JOIN rel_keys AS k USING (rel)
      LEFT JOIN ids AS s ON s.doc_id = r.doc_id AND s.name = r.source AND s.type = r.source_type
      LEFT JOIN ids AS d ON d.doc_id = r.doc_id AND d.name = r.target AND d.type = r.target_type;
    SELECT COALESCE(jsonb_object_agg(x.reason, x.n), '{}') INTO rejected FROM (
        SELECT CASE WHEN r.src IS NULL OR r.dst IS NULL THEN 'relation endpoint is not an entity of the document'
                    WHEN r.src = r.dst THEN 'relation from an entity to itself'
                    WHEN r.rel_key IN ('', 'CO_OCCURS') THEN 'relation type missing or reserved' END AS reason,
               count(*) AS n
          FROM pg_temp.kgrag_resolved AS r GROUP BY 1) AS x
     WHERE x.reason IS NOT NULL;
    -- and which, by document (the driver names the input line): the first 1,000
    SELECT COALESCE(jsonb_agg(x.drop ORDER BY x.doc_id COLLATE "C", x.ordinal, x.drop ->> 'relation'), '[]') INTO dropped
      FROM (SELECT r.doc_id, r.ordinal,
                   jsonb_build_object('doc_id', r.doc_id,
                                      'relation', format('%s -[%s]-> %s', left(r.source, 200), left(r.rel, 100), left(r.target, 200)),
                                      'reason', CASE WHEN r.src IS NULL THEN 'its source is not an entity of the document'
                                                     WHEN r.dst IS NULL THEN 'its target is not an entity of the document'
                                                     WHEN r.src = r.dst THEN 'from an entity to itself'
                                                     ELSE 'relation type missing or reserved' END) AS drop
              FROM pg_temp.kgrag_resolved AS r
             WHERE r.src IS NULL OR r.dst IS NULL OR r.src = r.dst OR r.rel_key IN ('', 'CO_OCCURS')
             ORDER BY r.doc_id COLLATE "C", r.ordinal, r.source, r.target LIMIT 1000) AS x;
    WITH placed AS (
        SELECT r.*, r.doc_id || '#' || r.ordinal AS chunk_id
          FROM pg_temp.kgrag_resolved AS r
         WHERE r.src IS NOT NULL AND r.dst IS NOT NULL AND r.src <> r.dst AND r.rel_key NOT IN ('', 'CO_OCCURS')
    ), ins AS (
        INSERT INTO kgrag.relation_evidence AS e (tenant_id, src, dst, rel, chunk_id, quote, confidence, negated,
                                                  extractor, valid_from, valid_to)
        SELECT DISTINCT ON (p.src, p.dst, p.rel_key, p.chunk_id) t, p.src, p.dst, p.rel_key, p.chunk_id, p.quote,
               p.confidence, p.negated, p.extractor, p.valid_from, p.valid_to
          FROM placed AS p
         ORDER BY p.src, p.dst, p.rel_key, p.chunk_id, p.negated DESC, p.confidence DESC
        ON CONFLICT (tenant_id, src, dst, rel, chunk_id) DO NOTHING
        RETURNING e.src, e.dst, e.chunk_id
    ), endpoints AS (
        -- where a relation is stated, both of its entities are cited
        INSERT INTO kgrag.mention (tenant_id, entity_id, chunk_id)
        SELECT DISTINCT t, x.entity_id, i.chunk_id FROM ins AS i CROSS JOIN LATERAL (VALUES (i.src), (i.dst)) AS x(entity_id)
        ON CONFLICT DO NOTHING
    )
    SELECT count(*) INTO n_relations FROM ins;
    DROP TABLE pg_temp.kgrag_resolved;
    -- what the extractor set aside for a person to check, with its chunk (the old went with the old chunks)
    INSERT INTO kgrag.set_aside AS a (tenant_id, chunk_id, what, reason, quote, extractor)
    SELECT DISTINCT ON (s.doc_id, s.ordinal, left(s.what, 200)) t, s.doc_id || '#' || s.ordinal, left(s.what, 200),
           left(s.reason, 200), left(s.quote, kgrag.setting('max_quote_chars')::integer), left(s.extractor, 100)
      FROM pg_temp.kgrag_stage_set_aside AS s
      JOIN pg_temp.kgrag_stage_chunk AS c ON c.doc_id = s.doc_id AND c.ordinal = s.ordinal
     WHERE btrim(s.what) <> ''
     ORDER BY s.doc_id, s.ordinal, left(s.what, 200)
    ON CONFLICT (tenant_id, chunk_id, what) DO NOTHING;
    RETURN jsonb_build_object('relations', n_relations, 'rejected', rejected, 'dropped', dropped);
END
$$;
COMMENT ON FUNCTION kgrag_private.apply_relations() IS
'Private. The third step of kgrag_private.ingest_apply: the staged relations whose endpoints are entities of their document become evidence (their endpoints cited where they are stated); the others are counted by reason, and the first 1,000 listed with their document. What the extractor set aside (pg_temp.kgrag_stage_set_aside) goes into kgrag.set_aside with its chunk. Returns {"relations": n, "rejected": {reason: n}, "dropped": [{doc_id, relation, reason}]}.';

CREATE OR REPLACE FUNCTION kgrag_private.hold_extractions() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    staged text[] := ARRAY(SELECT d.doc_id FROM pg_temp.kgrag_stage_document AS d ORDER BY 1);
BEGIN
    -- a document is written only for audiences its writer holds, and one stored for several
    -- audiences is replaced (or moved) only by a writer holding every one of them
    PERFORM kgrag_private.check_audiences(
        ARRAY(SELECT DISTINCT g FROM pg_temp.kgrag_stage_document AS d CROSS JOIN LATERAL unnest(d.access) AS a(g))
        || ARRAY(SELECT DISTINCT g FROM kgrag.document AS s CROSS JOIN LATERAL unnest(s.access) AS a(g)
                  WHERE s.tenant_id = t AND s.doc_id = ANY (staged) AND s.access IS NOT NULL
                    AND kgrag_private.sees(s.access, kgrag_private.groups_for(t))));
    -- every document keeps what was extracted from it (kgrag.set_access moves it with that)
    CREATE TEMP TABLE IF NOT EXISTS kgrag_extraction (doc_id text PRIMARY KEY, extraction jsonb NOT NULL) ON COMMIT DROP;
    TRUNCATE pg_temp.kgrag_extraction;
    INSERT INTO pg_temp.kgrag_extraction (doc_id, extraction)
    SELECT d.doc_id, jsonb_build_object(
           'entities', COALESCE((SELECT jsonb_agg(to_jsonb(e) - 'entity_id' - 'audience' - 'identifier_form' ORDER BY e.name, e.type, e.identifier)
                                   FROM pg_temp.kgrag_stage_entity AS e WHERE e.doc_id = d.doc_id), '[]'),
           'relations', COALESCE((SELECT jsonb_agg(to_jsonb(r) ORDER BY r.ordinal, r.source, r.target, r.rel)
                                    FROM pg_temp.kgrag_stage_relation AS r WHERE r.doc_id = d.doc_id), '[]'),
           'set_aside', COALESCE((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.ordinal, a.what)
                                    FROM pg_temp.kgrag_stage_set_aside AS a WHERE a.doc_id = d.doc_id), '[]'))
      FROM pg_temp.kgrag_stage_document AS d;
    -- and one for an audience gives the shared graph nothing of it: its entities (and so its
    -- relations, resolved to them) are the audience's own, and what it set aside is not queued
    -- (every staged entity's, whatever the session wrote into the staging table: NULL for everyone)
    UPDATE pg_temp.kgrag_stage_entity AS e SET audience = kgrag_private.audience_key(d.access)
      FROM pg_temp.kgrag_stage_document AS d
     WHERE d.doc_id = e.doc_id AND e.audience IS DISTINCT FROM kgrag_private.audience_key(d.access);
    DELETE FROM pg_temp.kgrag_stage_set_aside AS a
     USING pg_temp.kgrag_stage_document AS d WHERE d.doc_id = a.doc_id AND d.access IS NOT NULL;
END
$$;
COMMENT ON FUNCTION kgrag_private.hold_extractions() IS
'Private. A step of kgrag_private.ingest_apply: refuses (42501) a staged document for a group the transaction does not hold, or replacing a stored one for such a group (kgrag_private.check_audiences), keeps what was extracted from each staged document (pg_temp.kgrag_extraction, stored in kgrag.document.extraction: its entities, relations and what was set aside, as staged), and marks the entities of a document for an audience as that audience''s own (their ids end in ''~'' and its groups: read by their holders alone, kgrag_private.id_access), so it gives the shared graph nothing; what such a document set aside is not queued for review.';

CREATE OR REPLACE FUNCTION kgrag_private.check_batch_embedder() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    batch text := NULLIF(current_setting('kgrag.batch_embedder', true), '');
    own text := kgrag.setting('embedder') #>> '{}';
BEGIN
    -- a move to another embedder (kgrag.reembed_switch, which takes this lock alone) is either
    -- committed, and seen below, or waits for this batch
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('kgrag.embedder:' || t, 0));
    IF batch IS DISTINCT FROM own AND batch IS NOT NULL THEN
        RAISE EXCEPTION 'tenant % embeds with % now, and this batch''s vectors are of %', quote_literal(t), own, batch
            USING ERRCODE = '55000', HINT = format('Ingest again with --embedder %s.', own);
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.check_batch_embedder() IS
'Private. Returns nothing; waits while the current tenant moves to another embedder (kgrag.reembed_switch) and raises SQLSTATE 55000 when the batch''s vectors (the setting kgrag.batch_embedder, set by the driver) are of another embedder than the tenant''s.';

CREATE OR REPLACE FUNCTION kgrag_private.ingest_apply() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    docs text[];
    names text[];  -- the name keys of namesakes the previous versions gave
    screened jsonb;
    counts jsonb;
BEGIN
    PERFORM kgrag.current_tenant();  -- fails closed before anything is read
    PERFORM kgrag_private.check_batch_embedder();
    screened := kgrag_private.screen_staged();
    PERFORM kgrag_private.fold_short_forms();
    PERFORM kgrag_private.hold_extractions();
    SELECT array_agg(d.doc_id ORDER BY d.doc_id COLLATE "C") INTO docs FROM pg_temp.kgrag_stage_document AS d;
    IF docs IS NULL THEN
        RETURN jsonb_build_object('documents', 0, 'refused', screened -> 'refused', 'rejected', screened -> 'rejected');
    END IF;
    -- Namesakes are locked by name key before anything else (a writer of any document of a name
    -- waits here, holding nothing): the names the batch gives and those its previous versions gave.
    PERFORM kgrag_private.lock_keys('namesake', kgrag_private.staged_namesakes() || kgrag_private.namesakes_of(docs));
    counts := jsonb_build_object('documents', cardinality(docs), 'chunks', kgrag_private.apply_documents(docs));
    -- the previous versions' again, under the documents' locks (one written meanwhile: locked now)
    names := kgrag_private.namesakes_of(docs);
    PERFORM kgrag_private.lock_keys('namesake', names);
    counts := counts || jsonb_build_object('mentions', kgrag_private.apply_entities(docs)) || kgrag_private.apply_relations();
    -- the names the previous versions and the new ones give to namesakes: which entity each is
    counts := counts || jsonb_build_object('namesakes_moved',
                                           kgrag_private.resolve_namesakes(names || kgrag_private.namesakes_of(docs), docs));
    counts := counts || jsonb_build_object('refused', screened -> 'refused',
                                           'rejected', (counts -> 'rejected') || (screened -> 'rejected'));
    PERFORM kgrag_private.touch_documents(docs, 1);  -- and what the new versions contribute
    RETURN counts || kgrag_private.refresh_graph();
END
$$;
COMMENT ON FUNCTION kgrag_private.ingest_apply() IS
'Private. Applies the staged batch (see kgrag_private.stage_begin) in the current transaction and returns counts as jsonb: a document past a limit of what one document may carry is refused (under "refused", with why), the short forms of a name within a document are folded into it (kgrag_private.fold_short_forms), each other staged document replaces its previous version (chunks, mentions, evidence, aliases it gave), entities are upserted by key with the mentions the extractor located, relations are kept when both endpoints are entities of their document (the rest are counted under "rejected" with the reason), the namesakes of the documents are resolved into entities (kgrag_private.resolve_namesakes; "namesakes_moved" counts the documents whose namesake changed entity), then the graph is refreshed for what changed.';

CREATE OR REPLACE FUNCTION kgrag_private.stored_documents(doc_ids text[])
RETURNS TABLE (doc_id text, content_hash text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN QUERY
    SELECT d.doc_id, d.content_hash FROM kgrag.document AS d
     WHERE d.tenant_id = t AND d.doc_id = ANY (doc_ids)
     ORDER BY d.doc_id COLLATE "C";
END
$$;
COMMENT ON FUNCTION kgrag_private.stored_documents(text[]) IS
'Private. Returns (doc_id, content_hash) of those of the given documents the current tenant holds: ingestion skips a document whose hash is unchanged.';

CREATE OR REPLACE FUNCTION kgrag_private.record_ingest_failure(doc_id text, content_hash text, reason text,
                                                               access text[] DEFAULT NULL) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
    PERFORM kgrag_private.check_audiences(COALESCE(record_ingest_failure.access, '{}'));
    INSERT INTO kgrag.ingest_failure AS f (tenant_id, doc_id, content_hash, reason, access)
    VALUES (kgrag.current_tenant(), record_ingest_failure.doc_id, record_ingest_failure.content_hash,
            record_ingest_failure.reason, NULLIF(kgrag_private.checked_groups(COALESCE(record_ingest_failure.access, '{}')), '{}'))
    ON CONFLICT (tenant_id, doc_id) DO UPDATE
       SET content_hash = excluded.content_hash, reason = excluded.reason, failed_at = excluded.failed_at,
           access = excluded.access;
END
$$;
COMMENT ON FUNCTION kgrag_private.record_ingest_failure(text, text, text, text[]) IS
'Private. Records that a document could not be ingested, and why (kgrag.ingest_failure), for the groups the document was for (access: read by their holders alone; the writer must hold them, 42501). Returns nothing.';

CREATE OR REPLACE FUNCTION kgrag_private.failed_sources() RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    RETURN ARRAY(SELECT DISTINCT f.source FROM kgrag.ingest_failure AS f
                  WHERE f.tenant_id = t AND left(f.doc_id, 1) = '#' AND f.source IS NOT NULL ORDER BY 1);
END
$$;
COMMENT ON FUNCTION kgrag_private.failed_sources() IS
'Private. Returns the files of the current tenant''s failed input lines (kept in kgrag.ingest_failure under ''#'' || file || '':'' || line): an ingestion that reads one of them again passes it to kgrag_private.record_input_failures, which clears the lines that no longer fail.';

CREATE OR REPLACE FUNCTION kgrag_private.record_input_failures(sources text[], kept text[], failures jsonb,
                                                               access text[] DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n integer;
BEGIN
    IF cardinality(sources) > 100000 OR cardinality(kept) > 1000000 OR jsonb_typeof(failures) IS DISTINCT FROM 'array'
       OR jsonb_array_length(failures) > 100000 THEN
        RAISE EXCEPTION 'at most 100,000 sources and failures and 1,000,000 kept lines, as arrays' USING ERRCODE = '22023';
    END IF;
    PERFORM kgrag_private.check_audiences(COALESCE(access, '{}'));
    access := NULLIF(kgrag_private.checked_groups(COALESCE(access, '{}')), '{}');
    -- the lines of the files read again that failed before: fixed, unless they fail again below
    -- (but for the lines of the documents skipped as unchanged, which were not looked at again)
    DELETE FROM kgrag.ingest_failure AS f
     WHERE f.tenant_id = t AND f.source = ANY (sources) AND left(f.doc_id, 1) = '#' AND f.doc_id <> ALL (kept);
    -- one row per key: the reasons of one line (several dropped relations) together
    INSERT INTO kgrag.ingest_failure AS f (tenant_id, doc_id, content_hash, reason, source, line, access)
    SELECT t, x.key, '', left(string_agg(x.reason, '; ' ORDER BY x.o), 2000), min(x.source), min(x.line),
           record_input_failures.access
      FROM (SELECT COALESCE(NULLIF(e ->> 'doc_id', ''), '#' || left(e ->> 'source', 1000) || COALESCE(':' || (e ->> 'line'), '')) AS key,
                   left(COALESCE(e ->> 'reason', ''), 2000) AS reason, left(e ->> 'source', 1000) AS source,
                   (e ->> 'line')::integer AS line, u.o
              FROM jsonb_array_elements(failures) WITH ORDINALITY AS u(e, o)) AS x
     GROUP BY x.key
    ON CONFLICT (tenant_id, doc_id) DO UPDATE
       SET reason = excluded.reason, source = excluded.source, line = excluded.line, failed_at = excluded.failed_at,
           access = excluded.access;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION kgrag_private.record_input_failures(text[], text[], jsonb, text[]) IS
'Private. Records what an ingestion run could not take, for the groups the run was for (access, pgkgrag ingest --access: read by their holders alone; the writer must hold them, 42501), each with its file (source), line and reason: failures = [{source, line, doc_id, reason}] (at most 100,000). One with a doc_id is kept under it, until that document is ingested (or deleted); a line without one (not JSON, no doc_id, a duplicate, a dropped relation) is kept under ''#'' || source || '':'' || line, until a run reads that file again without that failure at that line (sources: the files this run read; kept: the keys of the lines it skipped as unchanged, left as they were). The reasons of one line (several dropped relations) are one row. Returns the rows written; kgrag.purge deletes them after ingest_failure_days.';

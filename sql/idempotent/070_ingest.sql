-- Ingestion writes: Python COPYs a batch into temporary staging tables, then one call applies it
-- set-based, in the caller's transaction. A changed document replaces its own contribution; the
-- graph (co-occurrence weights, typed edges, ranks, degrees) is recomputed for the entities the
-- batch touched, never incremented and never for the whole tenant.
--
-- Concurrency: writers lock the documents, then the entities they touch, with transaction-scoped
-- advisory locks taken in sorted order, so two batches over overlapping entities serialize where
-- they overlap instead of deadlocking, and each recomputes weights from committed mentions.

CREATE OR REPLACE FUNCTION kgrag._lock_keys(kind text, keys text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    k text;
BEGIN
    FOR k IN SELECT DISTINCT u.k COLLATE "C" FROM unnest(keys) AS u(k) WHERE u.k IS NOT NULL ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended(t || '|' || kind || '|' || k, 0));
    END LOOP;
END
$$;
COMMENT ON FUNCTION kgrag._lock_keys(text, text[]) IS
'Private. Returns nothing; takes a transaction-scoped advisory lock per (tenant, kind, key), in sorted key order.';

CREATE OR REPLACE FUNCTION kgrag.stage_begin() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_document (
        doc_id text PRIMARY KEY, title text NOT NULL DEFAULT '', source_uri text,
        metadata jsonb NOT NULL DEFAULT '{}', lang text NOT NULL DEFAULT 'simple', content_hash text NOT NULL
    ) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_chunk (
        doc_id text NOT NULL, ordinal integer NOT NULL, char_start integer NOT NULL, char_end integer NOT NULL,
        title text NOT NULL DEFAULT '', text text NOT NULL, content_hash text NOT NULL, embedding vector,
        canon text GENERATED ALWAYS AS (' ' || kgrag.canonical_name(text) || ' ') STORED,
        PRIMARY KEY (doc_id, ordinal)
    ) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_entity (
        doc_id text NOT NULL, name text NOT NULL, type text NOT NULL, description text NOT NULL DEFAULT '',
        answer text, answer_ordinal integer, aliases text[] NOT NULL DEFAULT '{}', ordinals integer[],
        entity_id text GENERATED ALWAYS AS (kgrag.entity_key(type, name)) STORED
    ) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_relation (
        doc_id text NOT NULL, ordinal integer, source text NOT NULL, source_type text, target text NOT NULL,
        target_type text, rel text NOT NULL, quote text NOT NULL DEFAULT '', confidence double precision NOT NULL DEFAULT 1,
        negated boolean NOT NULL DEFAULT false, extractor text NOT NULL, valid_from timestamptz, valid_to timestamptz
    ) ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_stage_cluster (
        entity_id text NOT NULL, level integer NOT NULL, cluster integer NOT NULL, parent_cluster integer
    ) ON COMMIT DROP;
END
$$;
COMMENT ON FUNCTION kgrag.stage_begin() IS
'Returns nothing; creates the temporary staging tables of one ingestion batch (pg_temp.kgrag_stage_document, _chunk, _entity, _relation, _cluster), dropped at commit. COPY the batch into them, then call kgrag.ingest_apply().';

CREATE OR REPLACE FUNCTION kgrag._refresh_graph(affected text[]) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    removed integer;
BEGIN
    -- Co-occurrence: weight = chunks citing both. Only pairs inside the affected set can change,
    -- because a pair changes only through a chunk that cites both of its entities.
    WITH want AS (
        SELECT m1.entity_id AS src, m2.entity_id AS dst, count(*)::float8 AS weight
          FROM kgrag.mention AS m1
          JOIN kgrag.mention AS m2 ON m2.tenant_id = t AND m2.chunk_id = m1.chunk_id AND m2.entity_id <> m1.entity_id
         WHERE m1.tenant_id = t AND m1.entity_id = ANY (affected) AND m2.entity_id = ANY (affected)
         GROUP BY m1.entity_id, m2.entity_id
    ), gone AS (
        DELETE FROM kgrag.edge AS g
         WHERE g.tenant_id = t AND g.rel = 'CO_OCCURS' AND g.src = ANY (affected) AND g.dst = ANY (affected)
           AND NOT EXISTS (SELECT 1 FROM want AS w WHERE w.src = g.src AND w.dst = g.dst)
    )
    INSERT INTO kgrag.edge AS g (tenant_id, src, dst, rel, weight, extractor)
    SELECT t, w.src, w.dst, 'CO_OCCURS', w.weight, 'cooccurrence' FROM want AS w
     ORDER BY w.src COLLATE "C", w.dst COLLATE "C"
    ON CONFLICT (tenant_id, src, dst, rel) DO UPDATE SET weight = excluded.weight
     WHERE g.weight <> excluded.weight;

    -- Typed edges: aggregated from the non-negated evidence; the best-supported quote is shown.
    -- Both endpoints of a piece of evidence are cited by its chunk, so again only pairs inside
    -- the affected set can change (and two writers touching a pair both hold both locks).
    WITH ev AS (
        SELECT r.* FROM kgrag.relation_evidence AS r
         WHERE r.tenant_id = t AND NOT r.negated AND r.src = ANY (affected) AND r.dst = ANY (affected)
    ), agg AS (
        SELECT ev.src, ev.dst, ev.rel, count(*)::float8 AS weight, max(ev.confidence) AS confidence,
               CASE WHEN bool_or(ev.valid_from IS NULL) THEN NULL ELSE min(ev.valid_from) END AS valid_from,
               CASE WHEN bool_or(ev.valid_to IS NULL) THEN NULL ELSE max(ev.valid_to) END AS valid_to
          FROM ev GROUP BY ev.src, ev.dst, ev.rel
    ), best AS (
        SELECT DISTINCT ON (ev.src, ev.dst, ev.rel) ev.src, ev.dst, ev.rel, ev.chunk_id, ev.quote, ev.extractor
          FROM ev ORDER BY ev.src, ev.dst, ev.rel, ev.confidence DESC, ev.chunk_id COLLATE "C"
    ), want AS (
        SELECT a.*, b.chunk_id, b.quote, b.extractor FROM agg AS a JOIN best AS b USING (src, dst, rel)
    ), gone AS (
        DELETE FROM kgrag.edge AS g
         WHERE g.tenant_id = t AND g.rel <> 'CO_OCCURS' AND g.src = ANY (affected) AND g.dst = ANY (affected)
           AND NOT EXISTS (SELECT 1 FROM want AS w WHERE w.src = g.src AND w.dst = g.dst AND w.rel = g.rel)
    )
    INSERT INTO kgrag.edge AS g (tenant_id, src, dst, rel, weight, confidence, evidence_chunk_id, evidence_quote,
                                 extractor, valid_from, valid_to)
    SELECT t, w.src, w.dst, w.rel, w.weight, w.confidence, w.chunk_id, w.quote, w.extractor, w.valid_from, w.valid_to
      FROM want AS w
     ORDER BY w.src COLLATE "C", w.dst COLLATE "C", w.rel COLLATE "C"
    ON CONFLICT (tenant_id, src, dst, rel) DO UPDATE
       SET weight = excluded.weight, confidence = excluded.confidence, evidence_chunk_id = excluded.evidence_chunk_id,
           evidence_quote = excluded.evidence_quote, extractor = excluded.extractor,
           valid_from = excluded.valid_from, valid_to = excluded.valid_to
     WHERE (g.weight, g.confidence, g.evidence_chunk_id, g.evidence_quote, g.extractor, g.valid_from, g.valid_to)
           IS DISTINCT FROM (excluded.weight, excluded.confidence, excluded.evidence_chunk_id, excluded.evidence_quote,
                             excluded.extractor, excluded.valid_from, excluded.valid_to);

    -- What was built from these entities is stale now: their communities, reports and answers.
    UPDATE kgrag.community AS c SET stale = true
     WHERE c.tenant_id = t AND NOT c.stale
       AND EXISTS (SELECT 1 FROM kgrag.community_member AS cm
                    WHERE cm.tenant_id = t AND cm.community_id = c.community_id AND cm.entity_id = ANY (affected));
    UPDATE kgrag.community_report AS r SET stale = true
      FROM kgrag.community AS c
     WHERE r.tenant_id = t AND c.tenant_id = t AND c.community_id = r.community_id AND c.stale AND NOT r.stale;
    UPDATE kgrag.entity AS e SET answer_stale = true
     WHERE e.tenant_id = t AND e.entity_id = ANY (affected) AND NOT e.answer_stale
       AND (e.answer_chunk_id IS NULL OR e.answer_hash IS DISTINCT FROM
            (SELECT c.content_hash FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.chunk_id = e.answer_chunk_id));

    -- An entity no chunk cites any more is gone (its aliases, edges and memberships with it).
    DELETE FROM kgrag.entity AS e
     WHERE e.tenant_id = t AND e.entity_id = ANY (affected)
       AND NOT EXISTS (SELECT 1 FROM kgrag.mention AS m WHERE m.tenant_id = t AND m.entity_id = e.entity_id);
    GET DIAGNOSTICS removed = ROW_COUNT;

    PERFORM kgrag.refresh_edge_ranks(affected);
    RETURN jsonb_build_object('affected_entities', cardinality(affected), 'removed_entities', removed);
END
$$;
COMMENT ON FUNCTION kgrag._refresh_graph(text[]) IS
'Private. Recomputes co-occurrence and typed edges among the affected entities, marks their communities, reports and answers stale, removes those no chunk cites any more, and re-ranks their edges. Returns counts as jsonb.';

CREATE OR REPLACE FUNCTION kgrag._entities_of_documents(doc_ids text[]) RETURNS text[]
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT COALESCE(array_agg(DISTINCT m.entity_id), '{}')
      FROM kgrag.chunk AS c
      JOIN kgrag.mention AS m ON m.tenant_id = c.tenant_id AND m.chunk_id = c.chunk_id
     WHERE c.tenant_id = kgrag.current_tenant() AND c.doc_id = ANY (doc_ids)
$$;
COMMENT ON FUNCTION kgrag._entities_of_documents(text[]) IS
'Private. Returns the ids of the entities the chunks of these documents mention.';

CREATE OR REPLACE FUNCTION kgrag.ingest_apply() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    docs text[];
    affected text[];
    n_chunks integer;
    n_mentions integer := 0;
    n integer;
    n_relations integer;
    rejected jsonb;
    graph jsonb;
BEGIN
    SELECT array_agg(d.doc_id ORDER BY d.doc_id COLLATE "C") INTO docs FROM pg_temp.kgrag_stage_document AS d;
    IF docs IS NULL THEN
        RETURN jsonb_build_object('documents', 0);
    END IF;
    PERFORM kgrag._lock_keys('document', docs);
    affected := kgrag._entities_of_documents(docs)
                || ARRAY(SELECT DISTINCT s.entity_id FROM pg_temp.kgrag_stage_entity AS s);
    affected := ARRAY(SELECT DISTINCT a FROM unnest(affected) AS a ORDER BY 1);
    PERFORM kgrag._lock_keys('entity', affected);

    -- Unchanged chunk texts keep their embeddings (looked up before the old chunks go).
    UPDATE pg_temp.kgrag_stage_chunk AS s SET embedding = c.embedding
      FROM (SELECT DISTINCT ON (k.content_hash) k.content_hash, k.embedding FROM kgrag.chunk AS k
             WHERE k.tenant_id = t AND k.embedding IS NOT NULL
               AND k.content_hash IN (SELECT x.content_hash FROM pg_temp.kgrag_stage_chunk AS x WHERE x.embedding IS NULL)
             ORDER BY k.content_hash, k.chunk_id) AS c
     WHERE s.embedding IS NULL AND s.content_hash = c.content_hash;

    -- The documents replace their previous versions: old chunks (with their mentions and
    -- evidence) and the aliases they gave go.
    DELETE FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.doc_id = ANY (docs);
    DELETE FROM kgrag.alias AS a WHERE a.tenant_id = t AND a.doc_id = ANY (docs);
    DELETE FROM kgrag.ingest_failure AS f WHERE f.tenant_id = t AND f.doc_id = ANY (docs);
    INSERT INTO kgrag.document AS d (tenant_id, doc_id, title, source_uri, metadata, lang, content_hash)
    SELECT t, s.doc_id, s.title, s.source_uri, s.metadata, s.lang::regconfig, s.content_hash
      FROM pg_temp.kgrag_stage_document AS s ORDER BY s.doc_id COLLATE "C"
    ON CONFLICT (tenant_id, doc_id) DO UPDATE
       SET title = excluded.title, source_uri = excluded.source_uri, metadata = excluded.metadata,
           lang = excluded.lang, content_hash = excluded.content_hash, updated_at = now();
    INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, title, text, content_hash,
                             lang, embedding)
    SELECT t, s.doc_id || '#' || s.ordinal, s.doc_id, s.ordinal, s.char_start, s.char_end, s.title, s.text,
           s.content_hash, d.lang::regconfig, s.embedding
      FROM pg_temp.kgrag_stage_chunk AS s JOIN pg_temp.kgrag_stage_document AS d USING (doc_id)
     ORDER BY s.doc_id COLLATE "C", s.ordinal;
    GET DIAGNOSTICS n_chunks = ROW_COUNT;

    -- Entities: one row per key; a non-empty description updates it (and drops the embedding).
    INSERT INTO kgrag.entity AS e (tenant_id, entity_id, name, type, description)
    SELECT DISTINCT ON (s.entity_id) t, s.entity_id, s.name, s.type, s.description
      FROM pg_temp.kgrag_stage_entity AS s
     ORDER BY s.entity_id, length(s.description) DESC, s.doc_id COLLATE "C"
    ON CONFLICT (tenant_id, entity_id) DO UPDATE
       SET description = excluded.description, embedding = NULL, embedded_hash = NULL, updated_at = now()
     WHERE excluded.description <> '' AND e.description IS DISTINCT FROM excluded.description;
    INSERT INTO kgrag.alias (tenant_id, entity_id, alias, doc_id)
    SELECT DISTINCT t, s.entity_id, btrim(a.alias), CASE WHEN a.alias = s.name THEN '' ELSE s.doc_id END
      FROM pg_temp.kgrag_stage_entity AS s CROSS JOIN LATERAL unnest(s.name || s.aliases) AS a(alias)
     WHERE btrim(a.alias) <> ''
    ON CONFLICT DO NOTHING;

    -- Mentions the extractor located, then those found by name in the text (word-bounded,
    -- case and accent insensitive), and for an entity found nowhere, every chunk of its document.
    INSERT INTO kgrag.mention (tenant_id, entity_id, chunk_id)
    SELECT DISTINCT t, s.entity_id, s.doc_id || '#' || o.ordinal
      FROM pg_temp.kgrag_stage_entity AS s CROSS JOIN LATERAL unnest(s.ordinals) AS o(ordinal)
      JOIN pg_temp.kgrag_stage_chunk AS c ON c.doc_id = s.doc_id AND c.ordinal = o.ordinal
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    n_mentions := n_mentions + n;
    WITH wanted AS (
        SELECT DISTINCT s.doc_id, s.entity_id, ' ' || kgrag.canonical_name(a.alias) || ' ' AS needle
          FROM pg_temp.kgrag_stage_entity AS s CROSS JOIN LATERAL unnest(s.name || s.aliases) AS a(alias)
         WHERE s.ordinals IS NULL AND kgrag.canonical_name(a.alias) <> ''
    ), found AS (
        SELECT DISTINCT w.entity_id, w.doc_id, c.ordinal
          FROM wanted AS w JOIN pg_temp.kgrag_stage_chunk AS c ON c.doc_id = w.doc_id AND strpos(c.canon, w.needle) > 0
    ), fallback AS (
        SELECT DISTINCT w.entity_id, w.doc_id, c.ordinal
          FROM wanted AS w JOIN pg_temp.kgrag_stage_chunk AS c ON c.doc_id = w.doc_id
         WHERE NOT EXISTS (SELECT 1 FROM found AS f WHERE f.entity_id = w.entity_id AND f.doc_id = w.doc_id)
    )
    INSERT INTO kgrag.mention (tenant_id, entity_id, chunk_id)
    SELECT t, x.entity_id, x.doc_id || '#' || x.ordinal FROM (SELECT * FROM found UNION SELECT * FROM fallback) AS x
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    n_mentions := n_mentions + n;

    -- Entity answers given with the input: taken from the named chunk, else the first one citing it.
    UPDATE kgrag.entity AS e
       SET answer = a.answer, answer_chunk_id = a.chunk_id, answer_hash = c.content_hash, answer_stale = false
      FROM (SELECT DISTINCT ON (s.entity_id) s.entity_id, s.answer,
                   COALESCE(s.doc_id || '#' || s.answer_ordinal,
                            (SELECT min(m.chunk_id COLLATE "C") FROM kgrag.mention AS m
                              WHERE m.tenant_id = t AND m.entity_id = s.entity_id
                                AND m.chunk_id LIKE s.doc_id || '#%')) AS chunk_id
              FROM pg_temp.kgrag_stage_entity AS s
             WHERE s.answer IS NOT NULL AND btrim(s.answer) <> ''
             ORDER BY s.entity_id, s.doc_id COLLATE "C") AS a
      JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = a.chunk_id
     WHERE e.tenant_id = t AND e.entity_id = a.entity_id;

    -- Relations: endpoints resolve to an entity of the same document by name or alias.
    CREATE TEMP TABLE kgrag_resolved ON COMMIT DROP AS
    SELECT r.*, upper(replace(kgrag.canonical_name(r.rel), ' ', '_')) AS rel_key,
           (SELECT s.entity_id FROM pg_temp.kgrag_stage_entity AS s
             WHERE s.doc_id = r.doc_id
               AND (r.source_type IS NULL OR kgrag.canonical_name(s.type) = kgrag.canonical_name(r.source_type))
               AND kgrag.canonical_name(r.source) IN (SELECT kgrag.canonical_name(x) FROM unnest(s.name || s.aliases) AS x)
             ORDER BY s.entity_id COLLATE "C" LIMIT 1) AS src,
           (SELECT s.entity_id FROM pg_temp.kgrag_stage_entity AS s
             WHERE s.doc_id = r.doc_id
               AND (r.target_type IS NULL OR kgrag.canonical_name(s.type) = kgrag.canonical_name(r.target_type))
               AND kgrag.canonical_name(r.target) IN (SELECT kgrag.canonical_name(x) FROM unnest(s.name || s.aliases) AS x)
             ORDER BY s.entity_id COLLATE "C" LIMIT 1) AS dst
      FROM pg_temp.kgrag_stage_relation AS r;
    SELECT COALESCE(jsonb_object_agg(x.reason, x.n), '{}') INTO rejected FROM (
        SELECT CASE WHEN r.src IS NULL OR r.dst IS NULL THEN 'relation endpoint is not an entity of the document'
                    WHEN r.src = r.dst THEN 'relation from an entity to itself'
                    WHEN r.rel_key IN ('', 'CO_OCCURS') THEN 'relation type missing or reserved' END AS reason,
               count(*) AS n
          FROM pg_temp.kgrag_resolved AS r GROUP BY 1) AS x
     WHERE x.reason IS NOT NULL;
    WITH placed AS (
        SELECT r.*, r.doc_id || '#' || COALESCE(r.ordinal,
               (SELECT min(c.ordinal) FROM pg_temp.kgrag_stage_chunk AS c
                 WHERE c.doc_id = r.doc_id
                   AND EXISTS (SELECT 1 FROM kgrag.mention AS m WHERE m.tenant_id = t AND m.entity_id = r.src
                                  AND m.chunk_id = c.doc_id || '#' || c.ordinal)
                   AND EXISTS (SELECT 1 FROM kgrag.mention AS m WHERE m.tenant_id = t AND m.entity_id = r.dst
                                  AND m.chunk_id = c.doc_id || '#' || c.ordinal)),
               0) AS chunk_id
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

    graph := kgrag._refresh_graph(affected);
    RETURN jsonb_build_object('documents', cardinality(docs), 'chunks', n_chunks, 'mentions', n_mentions,
                              'relations', n_relations, 'rejected', rejected) || graph;
END
$$;
COMMENT ON FUNCTION kgrag.ingest_apply() IS
'Applies the staged batch (see kgrag.stage_begin) in the current transaction and returns counts as jsonb: each staged document replaces its previous version (chunks, mentions, evidence, aliases it gave), entities are upserted by key, mentions located, relations resolved to entities of their document (the rest are counted under "rejected" with the reason), then the graph is refreshed for the touched entities.';

CREATE OR REPLACE FUNCTION kgrag.delete_documents(doc_ids text[]) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    affected text[];
    deleted integer;
BEGIN
    PERFORM kgrag._lock_keys('document', doc_ids);
    affected := ARRAY(SELECT a FROM unnest(kgrag._entities_of_documents(doc_ids)) AS a ORDER BY 1);
    PERFORM kgrag._lock_keys('entity', affected);
    DELETE FROM kgrag.alias AS a WHERE a.tenant_id = t AND a.doc_id = ANY (doc_ids);
    DELETE FROM kgrag.ingest_failure AS f WHERE f.tenant_id = t AND f.doc_id = ANY (doc_ids);
    DELETE FROM kgrag.document AS d WHERE d.tenant_id = t AND d.doc_id = ANY (doc_ids);
    GET DIAGNOSTICS deleted = ROW_COUNT;
    RETURN jsonb_build_object('documents', deleted) || kgrag._refresh_graph(affected);
END
$$;
COMMENT ON FUNCTION kgrag.delete_documents(text[]) IS
'Deletes documents of the current tenant with everything that came from them (chunks, mentions, evidence, the aliases they gave); edges are recomputed and entities no chunk cites any more disappear. Returns counts as jsonb; unknown ids are ignored.';

-- The graph after a change: what a batch's or a delete's documents contribute (before and after),
-- co-occurrence weights moved by what changed and typed edges recomputed for it, what was built
-- from it marked stale, entities no chunk cites removed; and deleting documents.

CREATE OR REPLACE FUNCTION kgrag_private.document_chunks(doc_ids text[]) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    -- One index range per document ((tenant_id, doc_id, ordinal)), whatever the statistics say:
    -- for a tenant new to a large table they say it has no row, and a plan built on that read
    -- every chunk of the tenant once per document.
    RETURN ARRAY(SELECT c.chunk_id
                   FROM unnest(doc_ids) AS d(doc_id)
                  CROSS JOIN LATERAL (SELECT x.chunk_id, x.ordinal FROM kgrag.chunk AS x
                                       WHERE x.tenant_id = t AND x.doc_id = d.doc_id OFFSET 0) AS c
                  ORDER BY c.chunk_id COLLATE "C");
END
$$;
COMMENT ON FUNCTION kgrag_private.document_chunks(text[]) IS
'Private. Returns the ids of the chunks of these documents (current tenant), in byte order.';

CREATE OR REPLACE FUNCTION kgrag_private.own_scratch() RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    made text;
BEGIN
    -- a SECURITY DEFINER caller writes through the scratch tables it creates if missing: one the
    -- session's own role made first would put that role's rows into its work
    SELECT string_agg(c.relname, ', ' ORDER BY c.relname) INTO made
      FROM pg_catalog.pg_class AS c
     WHERE c.relnamespace = pg_catalog.pg_my_temp_schema() AND c.relname LIKE 'kgrag\_%'
       AND c.relowner <> pg_catalog.to_regrole(current_user);
    IF made IS NOT NULL THEN
        RAISE EXCEPTION 'scratch tables of another role are in the way: %', made
            USING ERRCODE = '55000', HINT = 'Delete documents in a transaction of their own.';
    END IF;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.own_scratch() FROM PUBLIC;
COMMENT ON FUNCTION kgrag_private.own_scratch() IS
'Private. Returns nothing; raises SQLSTATE 55000 when this session''s temporary schema holds a scratch table (pg_temp.kgrag_*) that the role acting (a SECURITY DEFINER function''s owner) does not own: kgrag.delete_documents calls it first, so a caller cannot prepare the scratch tables it writes through.';

CREATE OR REPLACE FUNCTION kgrag_private.touched_scratch() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS kgrag_touched (
        a text NOT NULL, b text, rel text NOT NULL, n integer NOT NULL DEFAULT 0
    ) ON COMMIT DROP;
END
$$;
COMMENT ON FUNCTION kgrag_private.touched_scratch() IS
'Private. Returns nothing; creates (if missing) pg_temp.kgrag_touched, what a change touches for kgrag_private.refresh_graph to recompute: entities (b NULL, rel ENTITY), co-occurring pairs (rel CO_OCCURS, n = chunks that came minus chunks that went) and stated relations (a, b, rel). Dropped at commit, and by refresh_graph.';

CREATE OR REPLACE FUNCTION kgrag_private.touch_documents(doc_ids text[], sign integer) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    IF sign IS NULL OR sign NOT IN (-1, 1) THEN
        RAISE EXCEPTION 'sign must be -1 (before the chunks go) or 1 (after they came), got %', sign
            USING ERRCODE = '22023';
    END IF;
    -- pg_temp.kgrag_touched: what the chunks of these documents contribute to the graph right
    -- now: their entities (b IS NULL), co-occurring pairs (a < b, n = sign x the chunks citing
    -- both) and typed relations. Called before the chunks change (sign -1) and again after (+1),
    -- so it holds everything whose edges may change, and by how much each pair's weight does.
    PERFORM kgrag_private.touched_scratch();
    -- Each step is a lookup through an index from the step before (lateral, OFFSET 0 keeps the
    -- planner from making it a join): the planner's statistics of a table every tenant shares
    -- know nothing of a new tenant, and from their estimate of one row it paired every mention of
    -- the tenant with every chunk (15 s for a batch of 600 chunks beside 100k of other tenants).
    WITH docs AS (
        SELECT c.chunk_id FROM unnest(kgrag_private.document_chunks(doc_ids)) AS c(chunk_id)
    ), cited AS MATERIALIZED (
        SELECT c.chunk_id, m.entity_id
          FROM docs AS c
         CROSS JOIN LATERAL (SELECT x.entity_id FROM kgrag.mention AS x
                              WHERE x.tenant_id = t AND x.chunk_id = c.chunk_id OFFSET 0) AS m
    )
    INSERT INTO pg_temp.kgrag_touched (a, b, rel, n)
    SELECT DISTINCT m.entity_id, NULL::text, 'ENTITY', 0 FROM cited AS m
    UNION ALL
    SELECT m1.entity_id, m2.entity_id, 'CO_OCCURS', sign * count(*)::integer
      FROM cited AS m1 JOIN cited AS m2 ON m2.chunk_id = m1.chunk_id AND m1.entity_id < m2.entity_id
     GROUP BY m1.entity_id, m2.entity_id
    UNION ALL
    SELECT DISTINCT r.src, r.dst, r.rel, 0
      FROM docs AS c
     CROSS JOIN LATERAL (SELECT x.src, x.dst, x.rel FROM kgrag.relation_evidence AS x
                          WHERE x.tenant_id = t AND x.chunk_id = c.chunk_id OFFSET 0) AS r
    UNION ALL  -- and the relations whose evidence a person chose in them (kgrag.correct_evidence)
    SELECT DISTINCT split_part(c.target, '|', 1), split_part(c.target, '|', 3), split_part(c.target, '|', 2), 0
      FROM kgrag.curation AS c
     WHERE c.tenant_id = t AND c.kind = 'correct_evidence' AND c.doc_id = ANY (doc_ids);
    ANALYZE pg_temp.kgrag_touched;
END
$$;
COMMENT ON FUNCTION kgrag_private.touch_documents(text[], integer) IS
'Private. Returns nothing; adds to pg_temp.kgrag_touched the entities, co-occurring pairs (with sign x the number of chunks citing both) and typed relations the chunks of these documents currently contribute, and the relations whose evidence a person chose in them (kgrag.correct_evidence): sign -1 before the chunks go, 1 after they came.';

CREATE OR REPLACE FUNCTION kgrag_private.release_chunks(doc_ids text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    ids text[] := kgrag_private.document_chunks(doc_ids);
BEGIN
    -- The chunks are locked first (in chunk_id order): a concurrent writer that points an entity
    -- or an edge at one of them has then either committed (and the updates below see it) or
    -- waits, in its foreign-key check, until this transaction ends. Without the lock a reference
    -- committed between the updates and the DELETE of the chunks broke the foreign key (found by
    -- test_forgetting's two concurrent writers).
    PERFORM 1 FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.chunk_id = ANY (ids)
      ORDER BY c.chunk_id COLLATE "C" FOR UPDATE;
    -- what a foreign key's ON DELETE SET NULL did before revision 0019 (Citus refuses it on a
    -- key holding the distribution column); the graph refresh after the change fills them again
    -- (the answer stays until derive_entities; the one a person saw is noted first, with its document)
    UPDATE kgrag.entity AS e
       SET answer_chunk_id = NULL,
           answer_before = COALESCE(e.answer_before, e.answer),
           answer_before_doc = CASE WHEN e.answer_before IS NULL AND e.answer IS NOT NULL
                                    THEN regexp_replace(e.answer_chunk_id, '#[0-9]+$', '') ELSE e.answer_before_doc END
     WHERE e.tenant_id = t AND e.answer_chunk_id = ANY (ids);
    UPDATE kgrag.edge AS g SET evidence_chunk_id = NULL
     WHERE g.tenant_id = t AND g.evidence_chunk_id = ANY (ids);
END
$$;
COMMENT ON FUNCTION kgrag_private.release_chunks(text[]) IS
'Private. Returns nothing; locks the chunks of these documents and clears the references to them that entities (answer_chunk_id) and edges (evidence_chunk_id) hold, so the chunks can be deleted.';

CREATE OR REPLACE FUNCTION kgrag_private.named_by(doc_ids text[]) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN ARRAY(SELECT DISTINCT s.entity_id FROM kgrag.alias_source AS s
                  WHERE s.tenant_id = t AND s.doc_id = ANY (doc_ids) ORDER BY 1);
END
$$;
COMMENT ON FUNCTION kgrag_private.named_by(text[]) IS
'Private. Returns the entities (ids, sorted) whose names these documents gave (kgrag.alias_source): the ones to lock, and to pass to kgrag_private.forget_aliases once the documents'' sources are gone.';

CREATE OR REPLACE FUNCTION kgrag_private.forget_aliases(entity_ids text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    -- The caller holds the entities' locks (kgrag_private.lock_keys), as every writer of their
    -- names does: no source can be added between this check and the DELETE.
    DELETE FROM kgrag.alias AS a
     WHERE a.tenant_id = t AND a.entity_id = ANY (entity_ids) AND a.sourced
       AND NOT EXISTS (SELECT 1 FROM kgrag.alias_source AS s
                        WHERE s.tenant_id = t AND s.entity_id = a.entity_id AND s.alias = a.alias);
END
$$;
COMMENT ON FUNCTION kgrag_private.forget_aliases(text[]) IS
'Private. Returns nothing; deletes the names of these entities that documents gave (sourced) and no document gives any more (no kgrag.alias_source row). A name written by hand (not sourced) stays.';

CREATE OR REPLACE FUNCTION kgrag_private.derive_entities(entity_ids text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    -- From what the documents that remain say (kgrag.entity_source), in doc_id order, so the
    -- result does not depend on the order they came in: the name is the first document's
    -- spelling, the description the longest, the answer the first given one whose chunk exists.
    -- Without a given answer the entity has none until kgrag_private.refresh_answers writes one from the
    -- chunks that cite it now; an embedding of text that changed goes.
    -- The sources are read once for all the entities (entity_id = ANY: one index condition),
    -- then picked from in memory: per entity, the planner chose by statistics that, for a
    -- tenant new to a large table, say it has no row, and read the tenant's every source once
    -- per entity.
    WITH sources AS MATERIALIZED (
        SELECT x.entity_id, x.doc_id, x.name, x.description, x.answer, x.answer_chunk_id
          FROM kgrag.entity_source AS x
         WHERE x.tenant_id = t AND x.entity_id = ANY (entity_ids)
    ), answers AS MATERIALIZED (  -- the given answers whose chunk exists, with that chunk's hash
        SELECT x.entity_id, x.doc_id, x.answer, x.answer_chunk_id, k.content_hash
          FROM sources AS x
         CROSS JOIN LATERAL (SELECT c.content_hash FROM kgrag.chunk AS c
                              WHERE c.tenant_id = t AND c.chunk_id = x.answer_chunk_id OFFSET 0) AS k
         WHERE x.answer IS NOT NULL
    ), derived AS (
        SELECT e.entity_id, n.name, COALESCE(d.description, '') AS description, g.answer, g.answer_chunk_id,
               g.content_hash AS answer_hash
          FROM (SELECT DISTINCT u.entity_id FROM unnest(entity_ids) AS u(entity_id)) AS e
          LEFT JOIN (SELECT DISTINCT ON (x.entity_id) x.entity_id, x.name FROM sources AS x
                      ORDER BY x.entity_id, x.doc_id COLLATE "C") AS n USING (entity_id)
          LEFT JOIN (SELECT DISTINCT ON (x.entity_id) x.entity_id, x.description FROM sources AS x
                      ORDER BY x.entity_id, length(x.description) DESC, x.doc_id COLLATE "C") AS d USING (entity_id)
          LEFT JOIN (SELECT DISTINCT ON (x.entity_id) x.* FROM answers AS x
                      ORDER BY x.entity_id, x.doc_id COLLATE "C") AS g USING (entity_id)
    )
    UPDATE kgrag.entity AS e  -- a name a person decided (kgrag.rename_entity) before the documents' one
       SET name = COALESCE(d.decided, d.name, e.name), description = d.description,
           embedding = CASE WHEN (COALESCE(d.decided, d.name, e.name), d.description) IS DISTINCT FROM (e.name, e.description)
                            THEN NULL ELSE e.embedding END,
           quantized = CASE WHEN (COALESCE(d.decided, d.name, e.name), d.description) IS DISTINCT FROM (e.name, e.description)
                            THEN NULL ELSE e.quantized END,
           answer = d.answer, answer_chunk_id = d.answer_chunk_id, answer_hash = d.answer_hash,
           answer_stale = d.answer IS NULL, updated_at = now(),
           -- the answer a person saw, noted when it changes (kgrag.review_queue, answer_changed)
           answer_before = CASE WHEN e.answer_before IS NULL AND e.answer_chunk_id IS NOT NULL AND e.answer IS NOT NULL
                                     AND e.answer IS DISTINCT FROM d.answer THEN e.answer ELSE e.answer_before END,
           answer_before_doc = CASE WHEN e.answer_before IS NULL AND e.answer_chunk_id IS NOT NULL AND e.answer IS NOT NULL
                                         AND e.answer IS DISTINCT FROM d.answer
                                    THEN regexp_replace(e.answer_chunk_id, '#[0-9]+$', '') ELSE e.answer_before_doc END
      FROM (SELECT x.*, (SELECT c.value FROM kgrag.curation AS c
                          WHERE c.tenant_id = t AND c.kind = 'rename_entity' AND c.target = x.entity_id
                          ORDER BY c.decided_at DESC LIMIT 1) AS decided
              FROM derived AS x) AS d
     WHERE e.tenant_id = t AND e.entity_id = d.entity_id
       AND (COALESCE(d.decided, d.name, e.name), d.description, d.answer, d.answer_chunk_id, d.answer_hash, d.answer IS NULL)
           IS DISTINCT FROM (e.name, e.description, e.answer, e.answer_chunk_id, e.answer_hash, e.answer_stale);
END
$$;
COMMENT ON FUNCTION kgrag_private.derive_entities(text[]) IS
'Private. Returns nothing; derives the name, description and given answer of these entities from what the documents that remain say of them (kgrag.entity_source, in doc_id order: the same whatever the order they came in), drops an embedding whose text changed, and leaves an entity without a given answer without one until kgrag_private.refresh_answers.';

CREATE OR REPLACE FUNCTION kgrag_private.refresh_graph() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    affected text[];
    removed integer;
    fixes jsonb;  -- the relations people corrected: {"src|OLD|dst": "NEW"}
BEGIN
    -- Only what pg_temp.kgrag_touched names can have changed: a co-occurrence weight changes only
    -- through a chunk that cites both entities, a typed edge only through its evidence.
    affected := ARRAY(SELECT DISTINCT x.e FROM pg_temp.kgrag_touched AS k
                       CROSS JOIN LATERAL (VALUES (k.a), (k.b)) AS x(e) WHERE x.e IS NOT NULL ORDER BY 1);

    PERFORM kgrag_private.edge_scratch();

    -- Co-occurrence: weight = chunks citing both, both directions. Only the batch's documents'
    -- chunks changed, so the new weight is the stored one plus the chunks that came, minus those
    -- that went (kgrag_touched.n): exact counts, the same weight whatever the history, and the
    -- work is the batch's own mentions, never all the mentions of the entities it touches (a hub's
    -- grow with the corpus). A pair whose count did not change is left as it is.
    INSERT INTO pg_temp.kgrag_edge_want (src, dst, rel, weight)
    WITH delta AS MATERIALIZED (
        SELECT k.a, k.b, sum(k.n) AS d FROM pg_temp.kgrag_touched AS k
         WHERE k.rel = 'CO_OCCURS' GROUP BY k.a, k.b HAVING sum(k.n) <> 0
    ), counted AS (
        SELECT d.a, d.b, greatest(COALESCE(g.weight, 0) + d.d, 0)::float8 AS weight
          FROM delta AS d
          LEFT JOIN kgrag.edge AS g ON g.tenant_id = t AND g.src = d.a AND g.dst = d.b AND g.rel = 'CO_OCCURS'
    )
    SELECT c.a, c.b, 'CO_OCCURS', c.weight FROM counted AS c
    UNION ALL
    SELECT c.b, c.a, 'CO_OCCURS', c.weight FROM counted AS c;

    -- A relation a person corrected (kgrag.correct_relation) is built as the relation decided,
    -- from its evidence: a pair with a correction has all its typed relations recomputed when one
    -- of them is touched (kgrag_private.pair_relations).
    fixes := kgrag_private.corrections(t);
    IF fixes <> '{}' THEN
        INSERT INTO pg_temp.kgrag_touched (a, b, rel, n)
        SELECT DISTINCT p.a, p.b, r.rel, 0
          FROM (SELECT DISTINCT k.a, k.b FROM pg_temp.kgrag_touched AS k
                 WHERE k.rel NOT IN ('CO_OCCURS', 'ENTITY')
                   AND EXISTS (SELECT 1 FROM jsonb_object_keys(fixes) AS f(key)
                                WHERE split_part(f.key, '|', 1) = k.a AND split_part(f.key, '|', 3) = k.b)) AS p
         CROSS JOIN LATERAL unnest(kgrag_private.pair_relations(t, p.a, p.b, fixes)) AS r(rel);
    END IF;

    -- Typed edges: aggregated from the non-negated evidence of each touched triple (one index
    -- range each), its own unless a person rejected or corrected it, and that of the relations
    -- corrected into it; the quote of the most confident evidence is shown, unless a person chose
    -- the evidence (kgrag.correct_evidence); a triple left without evidence gets weight 0 (removed).
    INSERT INTO pg_temp.kgrag_edge_want (src, dst, rel, weight, confidence, evidence_chunk_id, evidence_quote,
                                         extractor, valid_from, valid_to)
    SELECT x.src, x.dst, x.rel, COALESCE(e.weight, 0), COALESCE(e.confidence, 1),
           COALESCE(v.chunk_id, e.chunk_id), COALESCE(v.quote, e.quote),
           COALESCE(e.extractor, ''), e.valid_from, e.valid_to
      FROM (SELECT y.*, kgrag_private.relation_sources(t, y.src, y.rel, y.dst, fixes) AS sources
              FROM (SELECT DISTINCT k.a AS src, k.b AS dst, k.rel FROM pg_temp.kgrag_touched AS k
                     WHERE k.rel NOT IN ('CO_OCCURS', 'ENTITY')) AS y) AS x
      LEFT JOIN LATERAL (
           SELECT (count(*) OVER w)::float8 AS weight, max(r.confidence) OVER w AS confidence,
                  CASE WHEN bool_or(r.valid_from IS NULL) OVER w THEN NULL ELSE min(r.valid_from) OVER w END AS valid_from,
                  CASE WHEN bool_or(r.valid_to IS NULL) OVER w THEN NULL ELSE max(r.valid_to) OVER w END AS valid_to,
                  r.chunk_id, r.quote, r.extractor
             FROM kgrag.relation_evidence AS r
            WHERE r.tenant_id = t AND r.src = x.src AND r.dst = x.dst AND r.rel = ANY (x.sources) AND NOT r.negated
           WINDOW w AS ()
            ORDER BY r.confidence DESC, r.chunk_id COLLATE "C"
            LIMIT 1) AS e ON true
      LEFT JOIN LATERAL kgrag_private.decided_evidence(t, x.src, x.rel, x.dst) AS v ON e.weight > 0;

    PERFORM kgrag_private.rewrite_edges();

    -- What was built from these entities is stale now: their communities, reports and answers.
    UPDATE kgrag.community AS c SET stale = true
     WHERE c.tenant_id = t AND NOT c.stale
       AND EXISTS (SELECT 1 FROM kgrag.community_member AS cm
                    WHERE cm.tenant_id = t AND cm.community_id = c.community_id AND cm.entity_id = ANY (affected));
    UPDATE kgrag.community_report AS r SET stale = true
      FROM kgrag.community AS c
     WHERE r.tenant_id = t AND c.tenant_id = t AND c.community_id = r.community_id AND c.stale AND NOT r.stale;
    PERFORM kgrag_private.derive_entities(affected);

    -- An entity no chunk cites any more is gone (its aliases, edges and memberships with it).
    -- (the ids without a mention first, each a lookup: as one anti-join, a tenant new to a large
    -- table got a plan that read the tenant's mentions once per entity)
    DELETE FROM kgrag.entity AS e
     WHERE e.tenant_id = t
       AND e.entity_id = ANY (ARRAY(SELECT a.id FROM unnest(affected) AS a(id)
                                     WHERE NOT EXISTS (SELECT 1 FROM kgrag.mention AS m
                                                        WHERE m.tenant_id = t AND m.entity_id = a.id)));
    GET DIAGNOSTICS removed = ROW_COUNT;

    DROP TABLE pg_temp.kgrag_touched;
    RETURN jsonb_build_object('affected_entities', cardinality(affected), 'removed_entities', removed);
END
$$;
COMMENT ON FUNCTION kgrag_private.refresh_graph() IS
'Private. For what pg_temp.kgrag_touched names: moves co-occurrence weights by the chunks that came and went (kgrag_touched.n) and recomputes typed edges, marks communities, reports and answers stale, removes entities no chunk cites any more; only the edges that change are written, and the degrees they move (kgrag_private.rewrite_edges). Returns counts as jsonb.';

CREATE OR REPLACE FUNCTION kgrag_private.retract_documents(doc_ids text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    -- decisions about them go (kgrag_private.end_decisions, after): the relations of the pairs they
    -- corrected are recomputed without them at the next kgrag_private.refresh_graph
    PERFORM kgrag_private.touched_scratch();
    INSERT INTO pg_temp.kgrag_touched (a, b, rel, n)
    SELECT DISTINCT p.src, p.dst, r.rel, 0
      FROM (SELECT DISTINCT split_part(c.target, '|', 1) AS src, split_part(c.target, '|', 3) AS dst
              FROM kgrag.curation AS c
             WHERE c.tenant_id = t AND c.doc_id = ANY (doc_ids) AND c.kind = 'correct_relation') AS p
     CROSS JOIN LATERAL unnest(kgrag_private.pair_relations(t, p.src, p.dst, kgrag_private.corrections(t))) AS r(rel);
    -- the answers a person saw that came from them go too (kgrag_private.release_chunks noted them)
    UPDATE kgrag.entity AS e SET answer_before = NULL, answer_before_doc = NULL
     WHERE e.tenant_id = t AND e.answer_before_doc = ANY (doc_ids);
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.retract_documents(text[]) FROM PUBLIC;
COMMENT ON FUNCTION kgrag_private.retract_documents(text[]) IS
'Private. Returns nothing; for documents leaving the shared graph (deleted, or gone into an audience): notes the pairs whose relations their correct_relation decisions changed (pg_temp.kgrag_touched, recomputed by the next kgrag_private.refresh_graph once kgrag_private.end_decisions ended those decisions) and clears the answers a person saw that came from them (kgrag.entity.answer_before). For kgrag.delete_documents and kgrag.set_access (SECURITY DEFINER, owned by the schema owner) alone.';

CREATE OR REPLACE FUNCTION kgrag.delete_documents(doc_ids text[]) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    deleted integer;
    named text[];  -- the entities whose names the documents gave
    names text[];  -- and the name keys of their namesakes
    texts text[];
    counts jsonb;
    noted jsonb;  -- what the query log may name, forgotten there if the graph loses it
    held text[];  -- the caller's groups (kgrag.current_groups answers for session_user)
    waited integer;
    waited_bytes bigint;
BEGIN
    -- As the schema owner (SECURITY DEFINER): the decisions about the documents and what the query
    -- log says of them change here, which no tenant role may change itself; the caller names
    -- documents, nothing else. The scratch tables it writes through are its own.
    PERFORM kgrag_private.check_writing(t);
    PERFORM kgrag_private.own_scratch();
    IF cardinality(doc_ids) > 100000 THEN
        RAISE EXCEPTION 'delete at most 100,000 documents a call, got %', cardinality(doc_ids) USING ERRCODE = '22023';
    END IF;
    doc_ids := ARRAY(SELECT DISTINCT x FROM unnest(doc_ids) AS x WHERE x IS NOT NULL ORDER BY 1);
    -- as the owner every row is visible: a document for an audience the caller does not hold is not
    -- the caller's to delete (ignored, as an unknown id)
    held := kgrag_private.groups_for(t);
    doc_ids := ARRAY(SELECT x FROM unnest(doc_ids) AS x
                      WHERE NOT EXISTS (SELECT 1 FROM kgrag.document AS d
                                         WHERE d.tenant_id = t AND d.doc_id = x AND NOT kgrag_private.sees(d.access, held))
                      ORDER BY 1);
    noted := kgrag_private.forgettable(doc_ids);
    -- namesakes by name key first, then the document rows (the documents' locks), as in
    -- kgrag_private.ingest_apply(); the names read again under them
    PERFORM kgrag_private.lock_keys('namesake', kgrag_private.namesakes_of(doc_ids));
    PERFORM 1 FROM kgrag.document AS d WHERE d.tenant_id = t AND d.doc_id = ANY (doc_ids)
      ORDER BY d.doc_id COLLATE "C" FOR UPDATE;
    names := kgrag_private.namesakes_of(doc_ids);
    PERFORM kgrag_private.lock_keys('namesake', names);
    PERFORM kgrag_private.touch_documents(doc_ids, -1);
    named := kgrag_private.named_by(doc_ids);
    PERFORM kgrag_private.lock_keys('entity', ARRAY(SELECT k.a FROM pg_temp.kgrag_touched AS k WHERE k.rel = 'ENTITY'
                                                    UNION SELECT x FROM unnest(named) AS x
                                                    UNION SELECT x FROM unnest(names) AS x));
    texts := ARRAY(SELECT DISTINCT c.content_hash FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.doc_id = ANY (doc_ids));
    PERFORM kgrag_private.release_chunks(doc_ids);
    DELETE FROM kgrag.alias_source AS a WHERE a.tenant_id = t AND a.doc_id = ANY (doc_ids);
    PERFORM kgrag_private.forget_aliases(named);
    DELETE FROM kgrag.ingest_failure AS f WHERE f.tenant_id = t AND f.doc_id = ANY (doc_ids);
    -- and their tickets in the ingestion queue, payloads with them (what waited no longer counts)
    WITH gone AS (
        DELETE FROM kgrag.ingest_ticket AS i
         WHERE i.tenant_id = t AND i.doc_id = ANY (doc_ids) AND kgrag_private.sees(i.access, held)
        RETURNING i.state, i.bytes
    )
    SELECT count(*) FILTER (WHERE g.state IN ('queued', 'working')),
           COALESCE(sum(g.bytes) FILTER (WHERE g.state IN ('queued', 'working')), 0)
      INTO waited, waited_bytes FROM gone AS g;
    IF waited > 0 THEN
        PERFORM kgrag_private.queue_room(t, -waited, -waited_bytes);
    END IF;
    PERFORM kgrag_private.retract_documents(doc_ids);
    DELETE FROM kgrag.document AS d WHERE d.tenant_id = t AND d.doc_id = ANY (doc_ids);
    GET DIAGNOSTICS deleted = ROW_COUNT;
    -- the decisions about them end, each with an entry of who, when and why
    PERFORM kgrag_private.end_decisions(doc_ids);
    -- the namesakes the documents joined or kept apart are resolved again without them
    counts := jsonb_build_object('documents', deleted, 'namesakes_moved', kgrag_private.resolve_namesakes(names, '{}'))
              || kgrag_private.refresh_graph();
    -- and a name decided for an entity that went with them
    PERFORM kgrag_private.end_entity_decisions(ARRAY(SELECT jsonb_array_elements_text(noted -> 'entities')));
    -- Nothing of the deleted text survives this transaction: the communities it fed (their titles
    -- and reports) go until the next build, and so do the cached extractions of its chunks.
    PERFORM kgrag_private.delete_communities(ARRAY(SELECT c.community_id FROM kgrag.community AS c WHERE c.tenant_id = t AND c.stale));
    PERFORM kgrag_private.forget_extractions(texts);
    -- nor in the query log: the entities, names and chunks noted first that the graph no longer holds
    PERFORM kgrag_private.forget_in_logs(noted);
    RETURN counts;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.delete_documents(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.delete_documents(text[]) TO kgrag_writer;
COMMENT ON FUNCTION kgrag.delete_documents(text[]) IS
'Deletes documents of the current tenant with everything that came from them, in one transaction: chunks, mentions, evidence, the aliases they gave and what they said of entities (names, descriptions and answers are derived again from the documents that remain; an embedding of changed text goes), the cached extractions of their chunks, their tickets in the ingestion queue (kgrag.ingest_ticket, payloads with them), the decisions about them (kgrag.curation.doc_id: each ends with an entry in kgrag.curation_ended, kgrag_private.end_decisions) and the names decided for entities that went with them (kgrag_private.end_entity_decisions), the answers a person saw that came from them (kgrag.entity.answer_before), the communities they fed (titles and reports, until the next build), and what the query log says of the entities, names and chunks the graph no longer holds (kgrag_private.forget_in_logs). Namesakes the documents joined or kept apart are resolved again without them (kgrag_private.resolve_namesakes). Edges are recomputed and entities no chunk cites any more disappear. Returns counts as jsonb; unknown ids are ignored, and so are documents for an audience the caller does not hold (kgrag.current_groups); more than 100,000 ids a call are refused (22023), and so is a reader''s API key (42501, kgrag_private.check_writing). SECURITY DEFINER, owned by the schema owner, on the allow-list: it ends decisions and redacts the query log, which no tenant role may write; the caller names documents of its tenant and nothing else. For kgrag_writer.';

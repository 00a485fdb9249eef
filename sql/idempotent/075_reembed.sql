-- Moving a tenant to another embedder (pgkgrag reembed): its chunks, entities and reports are
-- embedded with the new model beside the vectors in use (kgrag.reembedding), a page at a time,
-- while searches go on; then one transaction puts the new vectors in place and records the
-- embedder (kgrag.reembed_switch). A run that stops keeps what it made; one that fails before the
-- switch leaves the tenant on its embedder.

CREATE OR REPLACE FUNCTION kgrag_private.check_reembed_kind(kind text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF kind IS NULL OR kind NOT IN ('chunk', 'entity', 'report') THEN
        RAISE EXCEPTION 'kind must be chunk, entity or report, got %', COALESCE(quote_literal(kind), 'NULL')
            USING ERRCODE = '22023';
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.check_reembed_kind(text) IS
'Private. Returns nothing; raises SQLSTATE 22023 unless kind is chunk, entity or report.';

CREATE OR REPLACE FUNCTION kgrag_private.reembed_bodies(kind text, ids text[], after text, max_rows integer,
                                                         embedder text)
RETURNS TABLE (ref_id text, body text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    -- ids given: those rows; else, in id order after `after`, the first max_rows with no vector of
    -- the embedder for their text now (max_rows NULL: all of them)
    IF kind = 'chunk' THEN
        RETURN QUERY SELECT c.chunk_id, c.text FROM kgrag.chunk AS c
                      WHERE c.tenant_id = t AND (ids IS NULL OR c.chunk_id = ANY (ids))
                        AND (ids IS NOT NULL OR kgrag_private.reembed_missing(t, 'chunk', c.chunk_id, c.text, embedder))
                        AND (after IS NULL OR c.chunk_id COLLATE "C" > after)
                      ORDER BY c.chunk_id COLLATE "C" LIMIT max_rows;
    ELSIF kind = 'entity' THEN
        RETURN QUERY SELECT e.entity_id, x.body FROM kgrag.entity AS e
                      CROSS JOIN LATERAL (SELECT kgrag.embedding_text(e.name, e.description)) AS x(body)
                      WHERE e.tenant_id = t AND (ids IS NULL OR e.entity_id = ANY (ids))
                        AND (ids IS NOT NULL OR kgrag_private.reembed_missing(t, 'entity', e.entity_id, x.body, embedder))
                        AND (after IS NULL OR e.entity_id COLLATE "C" > after)
                      ORDER BY e.entity_id COLLATE "C" LIMIT max_rows;
    ELSE
        RETURN QUERY SELECT r.community_id, x.body FROM kgrag.community_report AS r
                      CROSS JOIN LATERAL (SELECT kgrag.report_embedding_text(r.report)) AS x(body)
                      WHERE r.tenant_id = t AND (ids IS NULL OR r.community_id = ANY (ids))
                        AND (ids IS NOT NULL OR kgrag_private.reembed_missing(t, 'report', r.community_id, x.body, embedder))
                        AND (after IS NULL OR r.community_id COLLATE "C" > after)
                      ORDER BY r.community_id COLLATE "C" LIMIT max_rows;
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.reembed_bodies(text, text[], text, integer, text) IS
'Private. Returns chunks, entities or reports (kind) of the current tenant with the text each is embedded from (a chunk''s text, kgrag.embedding_text, kgrag.report_embedding_text): those of ids when given, else, in id order after `after`, the first max_rows (NULL: all) with no vector of the embedder for the text they hold now (kgrag_private.reembed_missing).';

CREATE OR REPLACE FUNCTION kgrag_private.reembed_missing(t text, kind text, ref_id text, body text, embedder text)
RETURNS boolean
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT NOT EXISTS (SELECT 1 FROM kgrag.reembedding AS r  -- its primary key
                        WHERE r.tenant_id = t AND r.kind = reembed_missing.kind AND r.ref_id = reembed_missing.ref_id
                          AND r.embedder = reembed_missing.embedder AND r.body_hash = md5(body))
$$;
COMMENT ON FUNCTION kgrag_private.reembed_missing(text, text, text, text, text) IS
'Private. Returns whether, for tenant t (the current one), a chunk, entity or report (kind, ref_id) holding the text body has no vector of the embedder yet (kgrag.reembedding, the md5 of the text).';

CREATE OR REPLACE FUNCTION kgrag.reembed_todo(embedder text, kind text, after text DEFAULT NULL, max_rows integer DEFAULT 256)
RETURNS TABLE (ref_id text, body text, body_hash text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    PERFORM kgrag_private.check_embedder(embedder, kgrag.dimension());  -- the name (any dimension fits)
    PERFORM kgrag_private.check_reembed_kind(kind);
    IF max_rows IS NULL OR max_rows NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 10000, got %', COALESCE(max_rows::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    SELECT b.ref_id, b.body, md5(b.body) FROM kgrag_private.reembed_bodies(kind, NULL, after, max_rows, embedder) AS b;
END
$$;
COMMENT ON FUNCTION kgrag.reembed_todo(text, text, text, integer) IS
'Returns up to max_rows (1..10000) chunks, entities or reports (kind) of the current tenant that have no vector of the embedder it is moving to yet (kgrag.reembedding, for the text they hold now), after the id `after` in C order: (ref_id, body = the text to embed, body_hash = its md5, for kgrag.reembed_store). What pgkgrag reembed embeds, a page at a time.';

CREATE OR REPLACE FUNCTION kgrag.reembed_store(embedder text, dimension integer, kind text, ids text[], vectors vector[],
                                               text_hashes text[])
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n integer;
BEGIN
    PERFORM kgrag_private.check_embedder(embedder, dimension);
    PERFORM kgrag_private.check_reembed_kind(kind);
    PERFORM kgrag_private.check_embedding_arrays(ids, vectors, text_hashes);
    IF EXISTS (SELECT 1 FROM unnest(vectors) AS v WHERE vector_dims(v) <> dimension) THEN
        RAISE EXCEPTION 'every vector must have the embedder''s % dimensions', dimension USING ERRCODE = '22000';
    END IF;
    -- only what still holds the text that was embedded
    INSERT INTO kgrag.reembedding AS r (tenant_id, kind, ref_id, embedder, body_hash, embedding)
    SELECT t, kind, u.id, embedder, u.h, kgrag_private.pad_vector(u.v)
      FROM unnest(ids, vectors, text_hashes) AS u(id, v, h)
      JOIN kgrag_private.reembed_bodies(kind, ids, NULL, NULL, embedder) AS b ON b.ref_id = u.id AND md5(b.body) = u.h
    ON CONFLICT ON CONSTRAINT reembedding_pkey DO UPDATE
       SET embedder = excluded.embedder, body_hash = excluded.body_hash, embedding = excluded.embedding;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION kgrag.reembed_store(text, integer, text, text[], vector[], text[]) IS
'Stores vectors of the embedder the current tenant is moving to (embedder, its dimension: at most kgrag.dimension(), stored zero-padded) for chunks, entities or reports (kind): ids, vectors and text_hashes (the body_hash kgrag.reembed_todo gave) are arrays of one length, at most 10,000. A row whose text no longer has that hash is left alone. Returns the number stored.';

CREATE OR REPLACE FUNCTION kgrag.reembed_switch(embedder text, dimension integer) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    missing jsonb;
    chunks integer;
    entities integer;
    reports integer;
    centre vector := kgrag_private.centre(embedder);  -- the codes of the new model's vectors
BEGIN
    PERFORM kgrag_private.check_embedder(embedder, dimension);
    -- no ingestion batch writes vectors of the old model meanwhile (kgrag_private.ingest_apply
    -- takes this lock shared, and checks the embedder it embedded with), and no search reads the
    -- two models' state at once (kgrag_private.search_at takes it shared too)
    PERFORM pg_advisory_xact_lock(hashtextextended('kgrag.embedder:' || t, 0));
    SELECT jsonb_object_agg(k.kind, k.n) INTO missing
      FROM (SELECT x.kind, (SELECT count(*) FROM kgrag_private.reembed_bodies(x.kind, NULL, NULL, NULL, embedder)) AS n
              FROM unnest(ARRAY['chunk', 'entity', 'report']) AS x(kind)) AS k
     WHERE k.n > 0;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'tenant % has texts with no % vector yet: %', quote_literal(t), embedder, missing
            USING ERRCODE = '55000',
                  HINT = format('Run pgkgrag reembed --tenant %s --embedder %s again: it embeds only what is missing.', t, embedder);
    END IF;
    UPDATE kgrag.chunk AS c SET embedding = r.embedding, quantized = kgrag_private.quantize(r.embedding, centre)
      FROM kgrag.reembedding AS r
     WHERE c.tenant_id = t AND r.tenant_id = t AND r.kind = 'chunk' AND r.ref_id = c.chunk_id;
    GET DIAGNOSTICS chunks = ROW_COUNT;
    PERFORM kgrag_private.lock_keys('entity', ARRAY(SELECT r.ref_id FROM kgrag.reembedding AS r
                                                     WHERE r.tenant_id = t AND r.kind = 'entity'));
    -- an entity or report whose text changed since the check (a build beside this) has no vector
    -- of either model after it: the next build embeds it with the new one
    UPDATE kgrag.entity AS e
       SET embedding = CASE WHEN md5(kgrag.embedding_text(e.name, e.description)) = r.body_hash THEN r.embedding END,
           quantized = CASE WHEN md5(kgrag.embedding_text(e.name, e.description)) = r.body_hash
                            THEN kgrag_private.quantize(r.embedding, centre) END
      FROM kgrag.reembedding AS r
     WHERE e.tenant_id = t AND r.tenant_id = t AND r.kind = 'entity' AND r.ref_id = e.entity_id;
    GET DIAGNOSTICS entities = ROW_COUNT;
    UPDATE kgrag.community_report AS x
       SET embedding = CASE WHEN md5(kgrag.report_embedding_text(x.report)) = r.body_hash THEN r.embedding END,
           quantized = CASE WHEN md5(kgrag.report_embedding_text(x.report)) = r.body_hash
                            THEN kgrag_private.quantize(r.embedding, centre) END
      FROM kgrag.reembedding AS r
     WHERE x.tenant_id = t AND r.tenant_id = t AND r.kind = 'report' AND r.ref_id = x.community_id;
    GET DIAGNOSTICS reports = ROW_COUNT;
    PERFORM kgrag_private.record_embedder(embedder, dimension);
    DELETE FROM kgrag.reembedding AS r WHERE r.tenant_id = t;
    RETURN jsonb_build_object('embedder', embedder, 'dimension', dimension, 'chunks', chunks, 'entities', entities,
                              'reports', reports);
END
$$;
COMMENT ON FUNCTION kgrag.reembed_switch(text, integer) IS
'Moves the current tenant to another embedder (its name and dimension) in one transaction: every chunk, entity and report takes the vector of that embedder made for it (kgrag.reembed_store), the tenant''s embedder becomes that one, and kgrag.reembedding is emptied. Raises SQLSTATE 55000, leaving everything as it was, while a text has no such vector (a text that changed meanwhile: run pgkgrag reembed again). Searches keep answering from the vectors in use until it commits (on one node it waits for those in flight, and a search never sees the two models at once); ingestion batches wait for it, and one that embedded with the old model meanwhile is refused. Returns {embedder, dimension, chunks, entities, reports}.';

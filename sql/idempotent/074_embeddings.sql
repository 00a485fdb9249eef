-- Embeddings computed by the driver: what to embed (and from which text), and storing the
-- vectors only for rows whose text is still the one that was embedded.

CREATE OR REPLACE FUNCTION kgrag_private.check_embedding_kind(kind text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF kind IS NULL OR kind NOT IN ('entity', 'report') THEN
        RAISE EXCEPTION 'kind must be ''entity'' or ''report'', got %', COALESCE(quote_literal(kind), 'NULL')
            USING ERRCODE = '22023';
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.check_embedding_kind(text) IS
'Private. Returns nothing; raises SQLSTATE 22023 unless kind is ''entity'' or ''report''.';

CREATE OR REPLACE FUNCTION kgrag.embedding_text(name text, description text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT CASE WHEN COALESCE(description, '') <> '' THEN name || ': ' || description ELSE name END
$$;
COMMENT ON FUNCTION kgrag.embedding_text(text, text) IS
'Returns the text an entity is embedded from: "name: description", or the name alone when it has no description. A question embedded by any client meets entities embedded this way.';

CREATE OR REPLACE FUNCTION kgrag.report_embedding_text(report text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- a report opens with its title and its subjects, strongest first: its vector is of that head.
    -- A sentence encoder's vector of a list of hundreds of subjects names none of them, its cost
    -- grows with the text (e5 embedded MuSiQue's 128 report heads in 27 s at 1,000 characters, 80 s
    -- at 4,000), and a longer head found no more: the documents the first 3 reports cite held as
    -- many of a question's supporting paragraphs (docs/benchmarks.md, "How much of a report e5 reads")
    SELECT left(report, 1000)
$$;
COMMENT ON FUNCTION kgrag.report_embedding_text(text) IS
'Returns the text a community report is embedded from: its first 1,000 characters (its title, its size and its strongest subjects with what the corpus says of each). A report rewritten with the same head keeps its vector (kgrag_private.refresh_reports).';

CREATE OR REPLACE FUNCTION kgrag.embedding_todo(kind text, after text DEFAULT NULL, max_rows integer DEFAULT 256)
RETURNS TABLE (ref_id text, body text, body_hash text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    PERFORM kgrag_private.check_embedding_kind(kind);
    IF max_rows IS NULL OR max_rows NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 10000, got %', COALESCE(max_rows::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF kind = 'entity' THEN
        RETURN QUERY
        SELECT e.entity_id, x.body, md5(x.body)
          FROM kgrag.entity AS e CROSS JOIN LATERAL (SELECT kgrag.embedding_text(e.name, e.description)) AS x(body)
         WHERE e.tenant_id = t AND e.embedding IS NULL AND (after IS NULL OR e.entity_id COLLATE "C" > after)
         ORDER BY e.entity_id COLLATE "C" LIMIT max_rows;
    ELSE
        RETURN QUERY
        SELECT r.community_id, x.body, md5(x.body)
          FROM kgrag.community_report AS r CROSS JOIN LATERAL (SELECT kgrag.report_embedding_text(r.report)) AS x(body)
         WHERE r.tenant_id = t AND r.embedding IS NULL AND (after IS NULL OR r.community_id COLLATE "C" > after)
         ORDER BY r.community_id COLLATE "C" LIMIT max_rows;
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag.embedding_todo(text, text, integer) IS
'Returns up to max_rows (1..10000) entities (kind ''entity'') or community reports (kind ''report'') of the current tenant that have no embedding, after the id `after` in C order: (ref_id, body = the text to embed: kgrag.embedding_text of an entity, kgrag.report_embedding_text of a report; body_hash = md5 of it, for kgrag.store_embeddings).';

CREATE OR REPLACE FUNCTION kgrag_private.check_embedding_arrays(ids text[], vectors vector[], text_hashes text[])
RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF ids IS NULL OR vectors IS NULL OR text_hashes IS NULL OR cardinality(ids) > 10000
       OR cardinality(ids) <> cardinality(vectors) OR cardinality(ids) <> cardinality(text_hashes) THEN
        RAISE EXCEPTION 'ids, vectors and text_hashes must be arrays of one length (at most 10,000), got %, % and %',
            COALESCE(cardinality(ids)::text, 'NULL'), COALESCE(cardinality(vectors)::text, 'NULL'),
            COALESCE(cardinality(text_hashes)::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(vectors) AS v WHERE v IS NULL) THEN
        RAISE EXCEPTION 'vectors must not hold NULL' USING ERRCODE = '22004';
    END IF;
    PERFORM kgrag.check_embedding(v) FROM unnest(vectors) AS v;  -- a zero vector has no direction
END
$$;
COMMENT ON FUNCTION kgrag_private.check_embedding_arrays(text[], vector[], text[]) IS
'Private. Returns nothing; raises SQLSTATE 22023 unless ids, vectors and text_hashes are arrays of one length of at most 10,000, 22004 for a NULL vector, and what kgrag.check_embedding raises for a zero or NaN one. What kgrag.store_embeddings and kgrag.reembed_store take.';

CREATE OR REPLACE FUNCTION kgrag.store_embeddings(kind text, ids text[], vectors vector[], text_hashes text[])
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n integer;
    centre vector := kgrag_private.tenant_centre();  -- the codes of its vectors
BEGIN
    PERFORM kgrag_private.check_embedding_kind(kind);
    PERFORM kgrag_private.check_embedding_arrays(ids, vectors, text_hashes);
    vectors := ARRAY(SELECT kgrag_private.fit_vector(v) FROM unnest(vectors) WITH ORDINALITY AS u(v, o) ORDER BY u.o);
    -- A row whose text changed since it was read (another writer) keeps no embedding of the old text.
    IF kind = 'entity' THEN
        -- the entity stripes first, in order, as an ingestion batch takes them before its row
        -- locks: a batch and this update never wait on each other in a cycle
        PERFORM kgrag_private.lock_keys('entity', ids);
        UPDATE kgrag.entity AS e SET embedding = u.v, quantized = kgrag_private.quantize(u.v, centre)
          FROM unnest(ids, vectors, text_hashes) AS u(id, v, h)
         WHERE e.tenant_id = t AND e.entity_id = u.id AND md5(kgrag.embedding_text(e.name, e.description)) = u.h;
    ELSE
        UPDATE kgrag.community_report AS r SET embedding = u.v, quantized = kgrag_private.quantize(u.v, centre)
          FROM unnest(ids, vectors, text_hashes) AS u(id, v, h)
         WHERE r.tenant_id = t AND r.community_id = u.id AND md5(kgrag.report_embedding_text(r.report)) = u.h;
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION kgrag.store_embeddings(text, text[], vector[], text[]) IS
'Stores embeddings computed by a client for entities or community reports (kind ''entity'' or ''report''): ids, vectors and text_hashes (the body_hash kgrag.embedding_todo gave) are arrays of one length (at most 10,000); a vector of a model narrower than the columns is stored zero-padded (kgrag_private.fit_vector). A row whose text no longer has that hash is left alone. Entities are locked as an ingestion batch locks them (kgrag_private.lock_keys), so the two never deadlock. Returns the number of rows updated.';

CREATE OR REPLACE FUNCTION kgrag_private.chunk_texts_with_vectors(content_hashes text[]) RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN QUERY
    SELECT DISTINCT c.content_hash FROM kgrag.chunk AS c
     WHERE c.tenant_id = t AND c.content_hash = ANY (content_hashes) AND c.embedding IS NOT NULL;
END
$$;
COMMENT ON FUNCTION kgrag_private.chunk_texts_with_vectors(text[]) IS
'Private. Returns those of the given chunk content hashes for which the current tenant already holds an embedded chunk: ingestion embeds only the others (an unchanged text keeps its vector).';

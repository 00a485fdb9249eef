-- Vector search in two phases: candidates from an HNSW index on a compact form of the vectors,
-- then an exact cosine re-rank of the candidates on the full vectors.
--
-- The index (kgrag.vector_index(), chosen when revision 0024 ran) is on the column quantized
-- (Hamming; the default): the binary quantization of each embedding less its embedder's centre
-- (kgrag.quantize, revision 0038), or on embedding::halfvec(D) (cosine; asked for, up to 4,000
-- dimensions), D fixed at install time. A query only uses the index when it repeats its
-- expression exactly: kgrag_private.nearest writes it, with D, into the statement it runs, for the
-- chunks, the entities and the reports.

CREATE OR REPLACE FUNCTION kgrag.vector_index() RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT COALESCE((SELECT s.value #>> '{}' FROM kgrag.settings AS s
                      WHERE s.tenant_id = '*' AND s.key = 'vector_index'), 'bq')
$$;
COMMENT ON FUNCTION kgrag.vector_index() IS
'Returns the kind of the vector indexes of this database (setting vector_index of tenant ''*'', chosen when revision 0024 ran: pgkgrag db upgrade --vector-index, bq unless halfvec was asked for): bq (HNSW on their binary quantization, Hamming) or halfvec (HNSW on the vectors cast to halfvec, cosine). Every vector search draws its candidates from it, then re-ranks them on the full vectors.';

CREATE OR REPLACE FUNCTION kgrag_private.check_k(k integer) RETURNS void
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF k IS NULL OR k < 1 OR k > 1000 THEN
        RAISE EXCEPTION 'k must be between 1 and 1000, got %', COALESCE(k::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.check_k(integer) IS
'Private. Returns nothing; raises SQLSTATE 22023 unless 1 <= k <= 1000.';

CREATE OR REPLACE FUNCTION kgrag_private.pad_vector(v vector) RETURNS vector
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT CASE WHEN vector_dims(v) >= kgrag.dimension() THEN v
                ELSE (v::real[] || array_fill(0::real, ARRAY[kgrag.dimension() - vector_dims(v)]))::vector END
$$;
COMMENT ON FUNCTION kgrag_private.pad_vector(vector) IS
'Private. Returns the vector zero-padded to kgrag.dimension() (as given when it has that many dimensions or more).';

CREATE OR REPLACE FUNCTION kgrag_private.centre(embedder text) RETURNS vector
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT kgrag_private.pad_vector((s.value -> embedder)::text::vector)
      FROM kgrag.settings AS s
     WHERE s.tenant_id = '*' AND s.key = 'embedder_centres' AND s.value ? embedder
$$;
COMMENT ON FUNCTION kgrag_private.centre(text) IS
'Private. Returns the centre of the embedder''s vectors (setting embedder_centres of tenant ''*'', which only the schema owner writes), zero-padded to kgrag.dimension(); NULL for an embedder with none.';

CREATE OR REPLACE FUNCTION kgrag_private.tenant_centre() RETURNS vector
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- the embedder the tenant recorded: vectors a client wrote with none recorded are its own model's
    SELECT kgrag_private.centre(s.value #>> '{}')
      FROM kgrag.settings AS s
     WHERE s.tenant_id = kgrag.current_tenant() AND s.key = 'embedder'
$$;
COMMENT ON FUNCTION kgrag_private.tenant_centre() IS
'Private. Returns the centre of the embedder the current tenant recorded (kgrag.use_embedder), zero-padded to kgrag.dimension(); NULL when it recorded none (a client writing its own vectors) or its embedder has none.';

CREATE OR REPLACE FUNCTION kgrag_private.quantize(v vector, centre vector) RETURNS bit
LANGUAGE sql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT binary_quantize(CASE WHEN centre IS NULL THEN v ELSE v - centre END)
$$;
COMMENT ON FUNCTION kgrag_private.quantize(vector, vector) IS
'Private. Returns the binary quantization of v less centre (of v where centre is NULL): what the quantized columns store, with the centre kgrag_private.centre gives.';

CREATE OR REPLACE FUNCTION kgrag.quantize(v vector, embedder text DEFAULT NULL) RETURNS bit
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT kgrag_private.quantize(v, CASE WHEN embedder IS NULL THEN kgrag_private.tenant_centre()
                                          ELSE kgrag_private.centre(embedder) END)
$$;
COMMENT ON FUNCTION kgrag.quantize(vector, text) IS
'Returns the code the binary-quantized index holds for v: its binary quantization less the centre of the embedder (default: the one the current tenant recorded, none if it recorded none; setting embedder_centres), as the column quantized of kgrag.chunk, kgrag.entity and kgrag.community_report stores it beside the embedding (NULL exactly when the embedding is). The ingestion and kgrag.store_embeddings write it; a client that writes embeddings into those tables itself writes quantized = kgrag.quantize(embedding) with them.';

CREATE OR REPLACE FUNCTION kgrag_private.fit_vector(v vector) RETURNS vector
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    d integer;  -- the columns' (kgrag.dimension())
    recorded integer;  -- the tenant's own, recorded by kgrag.use_embedder
    own integer;  -- that (where the tenant has the row), else the default embedder's, else the columns'
    given integer := vector_dims(v);
BEGIN
    -- one statement for the three (every search passes its vector here, on a Citus worker each
    -- statement costs a plan of its own); own: the tenant's row where it has one (a JSON null in it
    -- means the columns' width), else the default's
    SELECT max((s.value #>> '{}')::integer) FILTER (WHERE s.tenant_id = '*' AND s.key = 'embedding_dimension'),
           max((s.value #>> '{}')::integer) FILTER (WHERE s.tenant_id <> '*' AND s.key = 'embedder_dimension'),
           CASE WHEN bool_or(s.tenant_id <> '*' AND s.key = 'embedder_dimension')
                THEN max((s.value #>> '{}')::integer) FILTER (WHERE s.tenant_id <> '*' AND s.key = 'embedder_dimension')
                ELSE max((s.value #>> '{}')::integer) FILTER (WHERE s.tenant_id = '*' AND s.key = 'embedder_dimension') END
      INTO d, recorded, own
      FROM kgrag.settings AS s
     WHERE s.tenant_id IN ('*', pg_catalog.current_setting('kgrag.tenant', true))
       AND s.key IN ('embedding_dimension', 'embedder_dimension');
    own := COALESCE(own, d);
    -- A model narrower than the columns is stored zero-padded: the zeros change no dot product
    -- and no norm (cosine stays exact) and quantize to 0 bits on both sides (Hamming distances
    -- stay exact), so tenants of several models share the columns and their indexes. A vector
    -- of the columns' width is taken as given where the tenant recorded no embedder (a client
    -- writing its own vectors), or recorded one that wide, or its tail past the model's is zero.
    IF v IS NULL OR (given = d AND (recorded IS NULL OR own = d OR NOT EXISTS (
            SELECT 1 FROM unnest((v::real[])[own + 1:d]) AS x WHERE x <> 0))) THEN
        RETURN v;
    END IF;
    IF given <> own THEN
        RAISE EXCEPTION 'the vector has % dimensions, but tenant % embeds with % (% dimensions)', given,
            quote_literal(kgrag.current_tenant()), COALESCE(kgrag.setting('embedder') #>> '{}', 'its embedder'), own
            USING ERRCODE = '22000',
                  HINT = 'Embed with the tenant''s embedder: SELECT kgrag.setting(''embedder'');';
    END IF;
    RETURN kgrag_private.pad_vector(v);
END
$$;
COMMENT ON FUNCTION kgrag_private.fit_vector(vector) IS
'Private. Returns a vector of the tenant''s embedder (its setting embedder_dimension, else the default embedder''s, else kgrag.dimension()) as the columns store it: zero-padded to kgrag.dimension() when the model is narrower (cosine similarity and binary quantization stay exact); as given when it has the columns'' dimension and the tenant recorded no embedder (a client that writes its own vectors), or one of that dimension, or its values past the model''s are zero. Another dimension raises SQLSTATE 22000 naming the tenant''s embedder. Every function that takes a vector passes it through here.';

CREATE OR REPLACE FUNCTION kgrag_private.check_question_vector(q vector) RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    d integer := kgrag.dimension();
BEGIN
    IF q IS NULL THEN
        RAISE EXCEPTION 'the question vector is NULL' USING ERRCODE = '22004';
    END IF;
    IF vector_dims(q) <> d THEN
        RAISE EXCEPTION 'the question vector has % dimensions, but this database stores %-dimensional embeddings',
            vector_dims(q), d
            USING ERRCODE = '22000',
                  HINT = 'Embed the question with the embedder that embedded the documents.';
    END IF;
    PERFORM kgrag.check_embedding(q);  -- a zero vector has no direction
END
$$;
COMMENT ON FUNCTION kgrag_private.check_question_vector(vector) IS
'Private. Returns nothing; raises a clear error when the question vector is NULL, its dimension is not kgrag.dimension(), or it has zero length (kgrag.check_embedding).';

CREATE OR REPLACE FUNCTION kgrag_private.vector_scan_begin(k integer, overfetch integer, ef_search integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    candidates integer;
    -- one statement for the four (on a Citus worker each statement costs a plan of its own)
    given jsonb := kgrag_private.settings_of(ARRAY['vector_overfetch', 'vector_min_candidates', 'hnsw_ef_search',
                                                   'hnsw_max_scan_tuples']);
BEGIN
    PERFORM kgrag_private.check_k(k);
    IF overfetch IS NOT NULL AND overfetch < 1 THEN
        RAISE EXCEPTION 'overfetch must be >= 1, got %', overfetch USING ERRCODE = '22023';
    END IF;
    candidates := greatest(k * COALESCE(overfetch, (given -> 'vector_overfetch')::integer),
                           (given -> 'vector_min_candidates')::integer);
    -- Remember the caller's values; kgrag_private.vector_scan_end puts them back.
    PERFORM set_config('kgrag.saved_ef_search', COALESCE(current_setting('hnsw.ef_search', true), ''), true);
    PERFORM set_config('kgrag.saved_iterative_scan', COALESCE(current_setting('hnsw.iterative_scan', true), ''), true);
    PERFORM set_config('kgrag.saved_max_scan_tuples', COALESCE(current_setting('hnsw.max_scan_tuples', true), ''), true);
    PERFORM set_config('kgrag.saved_enable_sort', current_setting('enable_sort'), true);
    PERFORM set_config('hnsw.ef_search',
        least(greatest(candidates, COALESCE(ef_search, (given -> 'hnsw_ef_search')::integer)), 1000)::text, true);
    -- Iterative scans keep walking the index until enough rows pass the tenant filter.
    PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
    PERFORM set_config('hnsw.max_scan_tuples', given -> 'hnsw_max_scan_tuples' #>> '{}', true);
    -- The index, whatever the planner thinks of a small table: the other plans sort every row of
    -- the tenant by distance, and their cost leaves out the cast of each vector (to halfvec: 2,800
    -- rows of 512 dimensions, 8.7 ms sorted, about 1 ms through the index).
    PERFORM set_config('enable_sort', 'off', true);
    RETURN candidates;
END
$$;
COMMENT ON FUNCTION kgrag_private.vector_scan_begin(integer, integer, integer) IS
'Private. Returns the candidate count of a vector search (k * overfetch, at least vector_min_candidates) after setting hnsw.ef_search to at least that count, turning on iterative scans and turning off sorts (the index is taken whatever the table''s size) for the rest of the call.';

CREATE OR REPLACE FUNCTION kgrag_private.vector_scan_end() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    saved text;
BEGIN
    saved := current_setting('kgrag.saved_ef_search', true);
    PERFORM set_config('hnsw.ef_search', CASE WHEN saved <> '' THEN saved ELSE '40' END, true);
    saved := current_setting('kgrag.saved_iterative_scan', true);
    PERFORM set_config('hnsw.iterative_scan', CASE WHEN saved <> '' THEN saved ELSE 'off' END, true);
    saved := current_setting('kgrag.saved_max_scan_tuples', true);
    PERFORM set_config('hnsw.max_scan_tuples', CASE WHEN saved <> '' THEN saved ELSE '20000' END, true);
    PERFORM set_config('enable_sort', COALESCE(NULLIF(current_setting('kgrag.saved_enable_sort', true), ''), 'on'), true);
END
$$;
COMMENT ON FUNCTION kgrag_private.vector_scan_end() IS
'Private. Returns nothing; puts back the settings that kgrag_private.vector_scan_begin changed.';

CREATE OR REPLACE FUNCTION kgrag_private.audience_nearest(kind text, q vector, coded bit, candidates integer, halfvec boolean)
RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
SET plan_cache_mode = force_custom_plan  -- see kgrag_private.search_at: no generic plan of a one-shard read
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    most constant integer := 10000;  -- the rows a session may see for them to be read whole
    source text;
    id_column text;
    keys text[];
    open_rows integer;
    seen_rows integer;
    ids text[];
    vector_schema name;
BEGIN
    -- A session that sees few of the tenant's chunks or entities (its audiences') would walk the
    -- vector index through all the others; its own are counted in chunk_audience_idx (or
    -- entity_audience_idx: an entity's audience is its document's) reading the index alone and,
    -- when at most `most`, ranked whole by the index's expression.
    SELECT x.source, x.id_column INTO source, id_column
      FROM (VALUES ('chunk', 'chunk', 'chunk_id'), ('entity', 'entity', 'entity_id')) AS x(kind, source, id_column)
     WHERE x.kind = audience_nearest.kind;
    IF source IS NULL THEN
        RAISE EXCEPTION 'kind must be chunk or entity, got %', COALESCE(pg_catalog.quote_literal(kind), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.audience IS NOT NULL) THEN
        RETURN NULL;  -- no audience in the tenant: the index
    END IF;
    keys := kgrag_private.seen_audiences(t);
    IF keys IS NULL THEN
        RETURN NULL;  -- every audience (or too many to list): the index
    END IF;
    EXECUTE pg_catalog.format('SELECT count(*) FROM (SELECT FROM kgrag.%I AS c WHERE c.tenant_id = $1'
                              ' AND c.audience IS NULL LIMIT $2) AS s', source)
       INTO open_rows USING t, most + 1;
    IF open_rows > most THEN
        RETURN NULL;
    END IF;
    EXECUTE pg_catalog.format('SELECT count(*) FROM (SELECT FROM kgrag.%I AS c WHERE c.tenant_id = $1'
                              ' AND c.audience = ANY ($2) LIMIT $3) AS s', source)
       INTO seen_rows USING t, keys, most + 1 - open_rows;
    IF open_rows + seen_rows > most THEN
        RETURN NULL;
    END IF;
    SELECT n.nspname INTO vector_schema  -- (the bare name: %I quotes it)
      FROM pg_catalog.pg_extension AS x JOIN pg_catalog.pg_namespace AS n ON n.oid = x.extnamespace
     WHERE x.extname = 'vector';
    EXECUTE pg_catalog.format($q$
        WITH seen AS MATERIALIZED (  -- (materialized: never the vector index, which lists every row)
            SELECT c.%2$I AS id, %1$s AS d
              FROM kgrag.%3$I AS c
             WHERE c.tenant_id = $1 AND c.audience IS NULL AND c.quantized IS NOT NULL
            UNION ALL  -- (two index-only scans of the audience index, which holds quantized)
            SELECT c.%2$I, %1$s
              FROM kgrag.%3$I AS c
             WHERE c.tenant_id = $1 AND c.audience = ANY ($3) AND c.quantized IS NOT NULL
        )
        SELECT pg_catalog.array_agg(b.id ORDER BY b.d, b.id)
          FROM (SELECT s.id, s.d FROM seen AS s ORDER BY s.d, s.id LIMIT $4) AS b$q$,
        -- the expression of the installed index, as kgrag_private.nearest orders by it
        -- (pgvector's operators and types named in its schema, which this path leaves out)
        CASE WHEN halfvec
             THEN pg_catalog.format('c.embedding::%1$I.halfvec(%2$s) OPERATOR(%1$I.<=>) $2::%1$I.halfvec(%2$s)',
                                    vector_schema, pg_catalog.length(coded))
             ELSE pg_catalog.format('c.quantized OPERATOR(%I.<~>) $5', vector_schema) END,
        id_column, source)
      INTO ids USING t, q, keys, candidates, coded;
    RETURN COALESCE(ids, '{}');
END
$$;
GRANT CREATE ON SCHEMA kgrag_private TO kgrag_probe;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag_private.audience_nearest(text, vector, bit, integer, boolean) OWNER TO kgrag_probe;
REVOKE CREATE ON SCHEMA kgrag_private FROM kgrag_probe;
REVOKE EXECUTE ON FUNCTION kgrag_private.audience_nearest(text, vector, bit, integer, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.audience_nearest(text, vector, bit, integer, boolean) TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag_private.audience_nearest(text, vector, bit, integer, boolean) IS
'Private. Returns the ids of the current tenant''s chunks or entities (kind chunk | entity) the current transaction sees (for everyone, or of an audience it holds a group of: kgrag_private.seen_audiences; an entity''s audience is that of the documents whose graph it is of, kgrag.entity.audience) nearest to q by the vector index''s expression (halfvec: cosine on halfvec, else Hamming distance to coded, as the binary-quantized index), at most candidates, best first, ties by id; NULL when the tenant has no audience, the session sees every audience, or it sees more than 10,000 of them: then kgrag_private.nearest walks the vector index as before. Read whole, the few chunks of a session that sees 5% of them cost what the index walk costs a session that sees them all (docs/benchmarks.md, audiences), where the walk through the others cost 8 times as much. SECURITY DEFINER, owned by kgrag_probe (on the allow-list), because counting a session''s rows through chunk_audience_idx and entity_audience_idx reads past the audience policy; it returns ids of rows the session sees only, and kgrag_private.nearest reads them under the policy.';

CREATE OR REPLACE FUNCTION kgrag_private.nearest(
    kind text, q vector, k integer, overfetch integer, ef_search integer, level integer DEFAULT NULL)
RETURNS TABLE (ref_id text, rank integer, similarity double precision)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    candidates integer;
    source text;
    id_column text;
    filter text;
    n bigint;
    coded bit varying;
    seen text[];
    halfvec boolean := kgrag.vector_index() = 'halfvec';
BEGIN
    q := kgrag_private.fit_vector(q);
    PERFORM kgrag_private.check_question_vector(q);
    SELECT x.source, x.id_column INTO source, id_column
      FROM (VALUES ('chunk', 'chunk', 'chunk_id'), ('entity', 'entity', 'entity_id'),
                   ('report', 'community_report', 'community_id')) AS x(kind, source, id_column)
     WHERE x.kind = nearest.kind;
    IF source IS NULL OR (level IS NOT NULL AND kind <> 'report') THEN
        RAISE EXCEPTION 'kind must be chunk, entity or report (level: reports only), got %',
            COALESCE(quote_literal(kind), 'NULL') USING ERRCODE = '22023';
    END IF;
    candidates := kgrag_private.vector_scan_begin(k, overfetch, ef_search);
    filter := CASE WHEN level IS NOT NULL THEN
        'AND EXISTS (SELECT 1 FROM kgrag.community AS c'
        ' WHERE c.tenant_id = $1 AND c.community_id = x.community_id AND c.level = $4)' ELSE '' END;
    -- the question coded as the tenant's rows are (kgrag.quantize), for the bq index
    coded := kgrag_private.quantize(q, kgrag_private.tenant_centre());
    IF kind IN ('chunk', 'entity') THEN
        -- a session that sees few of the chunks or entities (audiences): its own, ranked whole,
        -- not the index (nor the count below, which would read the others under the policy)
        seen := kgrag_private.audience_nearest(kind, q, coded, candidates, halfvec);
    END IF;
    -- A set no larger than the candidate count is read whole and ranked exactly: the index would
    -- return all of it anyway, and an approximate graph shared with other tenants can leave a row
    -- unreachable (many equal Hamming distances), so a small tenant's answer would depend on its
    -- neighbours' rows. Counting stops at candidates + 1 entries of the tenant's primary key, embedded
    -- or not (the index leaves out rows without an embedding; so does the exact reading).
    IF seen IS NULL THEN
        EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM kgrag.%1$I AS x WHERE x.tenant_id = $1 %2$s LIMIT $3) AS s',
                       source, filter)
           INTO n USING t, q, candidates + 1, level;
    END IF;
    RETURN QUERY EXECUTE format($q$
        WITH candidates AS MATERIALIZED (
            SELECT x.%2$I AS ref_id, x.embedding
              FROM kgrag.%1$I AS x
             WHERE x.tenant_id = $1 %4$s %3$s
             LIMIT $3
        )
        SELECT h.ref_id, (row_number() OVER (ORDER BY h.embedding <=> $2, h.ref_id))::integer,
               1 - (h.embedding <=> $2)
          FROM candidates AS h
         ORDER BY h.embedding <=> $2, h.ref_id
         LIMIT $5$q$,
        source, id_column,
        -- the expression of the installed index, repeated exactly
        CASE WHEN seen IS NOT NULL THEN format('AND x.%I = ANY ($7)', id_column)
             WHEN n <= candidates THEN 'AND x.embedding IS NOT NULL'
             WHEN halfvec
             THEN format('ORDER BY x.embedding::halfvec(%1$s) <=> $2::halfvec(%1$s)', kgrag.dimension())
             ELSE format('ORDER BY x.quantized <~> $6::bit(%s)', kgrag.dimension()) END,
        filter)
    USING t, q, candidates, level, k, coded, seen;
    PERFORM kgrag_private.vector_scan_end();
END
$$;
COMMENT ON FUNCTION kgrag_private.nearest(text, vector, integer, integer, integer, integer) IS
'Private. Returns the k chunks, entities or community reports (kind chunk | entity | report) of the current tenant nearest to q: (ref_id, rank, similarity = 1 - cosine distance), best first, ties by id. Candidates (k * overfetch, at least vector_min_candidates) come from the vector index (kgrag.vector_index(): halfvec or binary-quantized HNSW) with iterative scans, then are re-ranked by exact cosine on the full vectors; a tenant with no more rows than that candidate count is ranked exactly, whole, and so are the chunks and entities of a session that sees few of them (kgrag_private.audience_nearest: a tenant with audiences). level (reports only) keeps reports of communities of that level.';

CREATE OR REPLACE FUNCTION kgrag.search_chunks_vector(
    q vector, k integer DEFAULT 10, overfetch integer DEFAULT NULL, ef_search integer DEFAULT NULL)
RETURNS TABLE (chunk_id text, rank integer, similarity double precision)
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT n.ref_id, n.rank, n.similarity
      FROM kgrag_private.nearest('chunk', q, k, overfetch, ef_search) AS n
     ORDER BY n.rank
$$;
COMMENT ON FUNCTION kgrag.search_chunks_vector(vector, integer, integer, integer) IS
'Returns the k chunks of the current tenant nearest to q: (chunk_id, rank, similarity = 1 - cosine distance). Candidates (k * overfetch, at least vector_min_candidates) come from the vector index (kgrag.vector_index(): halfvec or binary-quantized HNSW) with iterative scans, then are re-ranked by exact cosine on the full vectors.';

CREATE OR REPLACE FUNCTION kgrag.search_entities_vector(
    q vector, k integer DEFAULT 10, min_similarity double precision DEFAULT NULL, profile boolean DEFAULT false,
    overfetch integer DEFAULT NULL, ef_search integer DEFAULT NULL)
RETURNS TABLE (entity_id text, rank integer, similarity double precision)
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT n.ref_id, n.rank, n.similarity
      FROM kgrag_private.nearest('entity', q, k, overfetch, ef_search) AS n
     WHERE profile OR n.similarity >= COALESCE(min_similarity, kgrag_private.floor('entity_min_similarity')::float8)
     ORDER BY n.rank
$$;
COMMENT ON FUNCTION kgrag.search_entities_vector(vector, integer, double precision, boolean, integer, integer) IS
'Returns the k entities nearest to q with similarity >= min_similarity (default: setting entity_min_similarity, for the tenant''s embedder: kgrag_private.floor): (entity_id, rank, similarity). With profile => true the floor is ignored and the top-k similarity profile comes back, whose shape (a peak or a flat line) the router reads.';

CREATE OR REPLACE FUNCTION kgrag.search_reports_vector(
    q vector, k integer DEFAULT 10, level integer DEFAULT NULL,
    overfetch integer DEFAULT NULL, ef_search integer DEFAULT NULL)
RETURNS TABLE (community_id text, rank integer, similarity double precision)
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT n.ref_id, n.rank, n.similarity
      FROM kgrag_private.nearest('report', q, k, overfetch, ef_search, level) AS n
     ORDER BY n.rank
$$;
COMMENT ON FUNCTION kgrag.search_reports_vector(vector, integer, integer, integer, integer) IS
'Returns the k community reports nearest to q, optionally of one community level: (community_id, rank, similarity). Same two phases as search_chunks_vector.';

CREATE OR REPLACE FUNCTION kgrag.refresh_chunk_spread() RETURNS double precision
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    model text := kgrag.setting('embedder') #>> '{}';
    sampled integer;
    middle double precision;
BEGIN
    -- Every pair of up to 256 of the tenant's chunks for everyone (no audience: the figure is the
    -- same whoever builds, and says nothing of a group's documents), picked by a hash of their ids
    -- (the same chunks give the same figure, whatever the order they came in), two chunks of one
    -- document aside (neighbours overlap: they say how alike a document is to itself). Too few
    -- to say: fewer than 8 chunks, or of fewer than 3 documents.
    WITH picked AS (
        SELECT c.chunk_id, c.doc_id, c.embedding
          FROM kgrag.chunk AS c
         WHERE c.tenant_id = t AND c.audience IS NULL AND c.embedding IS NOT NULL
         ORDER BY pg_catalog.md5(c.chunk_id), c.chunk_id
         LIMIT 256
    )
    SELECT CASE WHEN (SELECT count(DISTINCT p.doc_id) FROM picked AS p) >= 3 THEN (SELECT count(*) FROM picked) ELSE 0 END,
           (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY 1 - (a.embedding <=> b.embedding))
              FROM picked AS a JOIN picked AS b ON a.chunk_id < b.chunk_id AND a.doc_id <> b.doc_id)
      INTO sampled, middle;
    IF model IS NULL OR sampled < 8 THEN
        DELETE FROM kgrag.settings AS s WHERE s.tenant_id = t AND s.key = 'chunk_spread';
        RETURN NULL;
    END IF;
    INSERT INTO kgrag.settings AS s (tenant_id, key, value, description)
    VALUES (t, 'chunk_spread',
            jsonb_build_object('embedder', model, 'median', round(middle::numeric, 4), 'chunks', sampled),
            'Measured by pgkgrag build (kgrag.refresh_chunk_spread): the median similarity of two of this tenant''s '
            'passages; a vector chunk nothing else supports must be nearer the question than that.')
    ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value WHERE s.value IS DISTINCT FROM excluded.value;
    RETURN round(middle::numeric, 4);
END
$$;
COMMENT ON FUNCTION kgrag.refresh_chunk_spread() IS
'Measures how alike the current tenant''s passages are to one another, for its embedder: the median cosine similarity of every pair of up to 256 of its chunks for everyone (no audience; picked by a hash of their ids, so the same chunks give the same figure), two of one document aside, stored as its setting chunk_spread ({"embedder", "median", "chunks"}) and returned (NULL, and the setting removed, with fewer than 8 such chunks, fewer than 3 documents, or no embedder recorded). pgkgrag build runs it. A search whose question names nothing of the graph and matches no passage by its words keeps only the vector chunks above that median (search option chunk_alone_min_similarity): an unrelated question in the collection''s language sits near the similarity two unrelated passages have, whatever the model''s scale.';

CREATE OR REPLACE FUNCTION kgrag_private.chunk_spread_floor(spread jsonb, embedder jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- a median measured with another embedder says nothing of this one's scale
    SELECT CASE WHEN jsonb_typeof(spread -> 'median') = 'number' AND spread -> 'embedder' = embedder
                THEN least(greatest((spread ->> 'median')::numeric, -1), 1)::float8 END  -- (1e400 is a number)
$$;
COMMENT ON FUNCTION kgrag_private.chunk_spread_floor(jsonb, jsonb) IS
'Private. Returns the median of the setting chunk_spread (kgrag.refresh_chunk_spread) within -1..1 when it was measured with the embedder given (the tenant''s), else NULL.';

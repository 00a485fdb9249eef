-- Chunk lists and their fusion: the vector and lexical lists of a question, RRF over named lists
-- with pinned chunks first, and the neighbours of each chunk in its document. Every route's chunk
-- rows come through kgrag_private.fused_chunks.

CREATE OR REPLACE FUNCTION kgrag_private.fused_chunks(lists jsonb, k integer, opts jsonb) RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    -- the pinned chunks: the list own_page, then bridge_page, each in its order
    pinned text[] := ARRAY(SELECT jsonb_array_elements_text(COALESCE(lists -> 'own_page', '[]')))
                     || ARRAY(SELECT jsonb_array_elements_text(COALESCE(lists -> 'bridge_page', '[]')));
BEGIN
    RETURN QUERY
    -- RRF over the named chunk lists, the pinned chunks first in their order; each row says which
    -- other list ranked it best.
    SELECT NULL::integer, f.ref_id, 'chunk', COALESCE(b.source, 'graph'), f.score, NULL, NULL,
           jsonb_build_object('ranks', f.ranks, 'evidence_refs', jsonb_build_array(f.ref_id),
                              'doc_id', c.doc_id, 'title', c.title) || kgrag_private.chunk_place(c.page, c.headings)
      FROM (SELECT r.* FROM kgrag.rrf(lists, (opts ->> 'rrf_k')::integer,
                                      jsonb_build_object('graph', (opts ->> 'graph_weight')::float8,
                                                         'pagerank', (opts ->> 'graph_weight')::float8)) AS r
             ORDER BY array_position(pinned, r.ref_id), r.rank
             LIMIT k) AS f  -- the k best only are read further
      JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = f.ref_id
      LEFT JOIN LATERAL (SELECT r.key AS source FROM jsonb_each_text(f.ranks) AS r
                          WHERE r.key NOT IN ('own_page', 'bridge_page')
                          ORDER BY r.value::integer, array_position(ARRAY['graph', 'pagerank', 'vector', 'lexical'], r.key)
                          LIMIT 1) AS b ON true
     ORDER BY array_position(pinned, f.ref_id), f.rank
     LIMIT k;
END
$$;
COMMENT ON FUNCTION kgrag_private.fused_chunks(jsonb, integer, jsonb) IS
'Private. Returns the k best chunks of the RRF fusion of named chunk lists as search rows, the chunks of the lists own_page then bridge_page (if given) first in their order; source = the list other than those two that ranked the chunk best (graph when none did), payload.ranks = its rank in every list.';

CREATE OR REPLACE FUNCTION kgrag_private.chunk_lists(question_vec vector, question text, k integer, opts jsonb,
                                                     seeded boolean)
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT jsonb_build_object(
        'vector', COALESCE((SELECT jsonb_agg(v.chunk_id ORDER BY v.rank)
                              FROM kgrag.search_chunks_vector(question_vec, k) AS v
                             WHERE question_vec IS NOT NULL
                               AND v.similarity >= (opts ->> 'chunk_min_similarity')::float8
                               -- a vector nothing else supports: nearer than two of the
                               -- collection's passages are to each other
                               AND (seeded OR l.ids <> '[]'
                                    OR v.similarity >= (opts ->> 'chunk_alone_min_similarity')::float8)), '[]'),
        'lexical', l.ids)
      FROM (SELECT COALESCE((SELECT jsonb_agg(x.chunk_id ORDER BY x.rank)
                               FROM kgrag_private.search_chunks_lexical_at(  -- (kgrag.search_chunks_lexical)
                                        kgrag.current_tenant(), question, k, 'any', NULL,
                                        (opts ->> 'lexical_min_coverage')::float8) AS x
                              WHERE question IS NOT NULL), '[]') AS ids
             OFFSET 0) AS l  -- (a fence: once)
$$;
COMMENT ON FUNCTION kgrag_private.chunk_lists(vector, text, integer, jsonb, boolean) IS
'Private. Returns {"vector": [...], "lexical": [...]}: the chunk ids of vector search above the similarity floor (chunk_min_similarity; where the search has no seed and lexical search found nothing, also above chunk_alone_min_similarity: the collection''s median passage-to-passage similarity) and of lexical search above the coverage floor, best first (a list is empty when its input, the vector or the text, is NULL).';

CREATE OR REPLACE FUNCTION kgrag_private.with_neighbours(given_rows kgrag.search_row[]) RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN QUERY
    -- After each chunk row, the chunk before and the chunk after it in its document, once each
    -- (a chunk already found, or already added as a neighbour of a better one, is not repeated).
    WITH given AS (
        SELECT x.rank, x.ref_id, x.kind, x.source, x.score, x.route, x.reason, x.payload, x.o
          FROM unnest(given_rows) WITH ORDINALITY AS x(rank, ref_id, kind, source, score, route, reason, payload, o)
    ), near AS (
        SELECT DISTINCT ON (n.chunk_id) n.chunk_id, n.doc_id, n.title, n.page, n.headings, g.ref_id AS neighbour_of,
               g.score, g.o,
               side.name AS side, side.o AS side_o
          FROM given AS g
          JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = g.ref_id
         CROSS JOIN LATERAL (VALUES (1, 'before', -1), (2, 'after', 1)) AS side(o, name, step)
          JOIN kgrag.chunk AS n ON n.tenant_id = c.tenant_id AND n.doc_id = c.doc_id AND n.ordinal = c.ordinal + side.step
         WHERE g.kind = 'chunk'
           AND NOT EXISTS (SELECT 1 FROM given AS f WHERE f.kind = 'chunk' AND f.ref_id = n.chunk_id)
         ORDER BY n.chunk_id, g.o, side.o
    )
    SELECT u.rank, u.ref_id, u.kind, u.source, u.score, u.route, u.reason, u.payload
      FROM (SELECT g.rank, g.ref_id, g.kind, g.source, g.score, g.route, g.reason, g.payload, g.o, 0 AS side_o
              FROM given AS g
            UNION ALL
            SELECT NULL, n.chunk_id, 'chunk', 'neighbour', n.score, NULL, NULL,
                   jsonb_build_object('neighbour_of', n.neighbour_of, 'side', n.side,
                                      'evidence_refs', jsonb_build_array(n.chunk_id), 'doc_id', n.doc_id,
                                      'title', n.title) || kgrag_private.chunk_place(n.page, n.headings),
                   n.o, n.side_o
              FROM near AS n) AS u
     ORDER BY u.o, u.side_o;
END
$$;
COMMENT ON FUNCTION kgrag_private.with_neighbours(kgrag.search_row[]) IS
'Private. Returns the search rows given with, after each chunk row, the chunk before and the chunk after it in the same document (search option neighbours): kind chunk, source neighbour, the score of the chunk they stand beside, payload.neighbour_of and payload.side (before | after). A chunk already among the rows, or beside a better ranked one, comes once. At most two rows more per chunk row.';

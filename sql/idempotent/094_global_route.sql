-- The global route: community reports as the map, then the chunks they cite.

CREATE OR REPLACE FUNCTION kgrag_private.global_rows(
    question_vec vector, question text, whole_collection boolean, k integer, opts jsonb, map_of text[] DEFAULT NULL)
RETURNS SETOF kgrag.search_row
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n integer := (opts ->> 'reports')::integer;
    lvl integer := (opts ->> 'level')::integer;
    maps jsonb;  -- the chosen reports, held in the function (no temporary table: it runs on a standby)
BEGIN
    IF whole_collection THEN
        -- the shape of the collection: every report of the level, by weight (distinct documents)
        SELECT COALESCE(jsonb_agg(jsonb_build_object('community_id', x.community_id, 'score', x.weight,
                                                     'position', x.position) ORDER BY x.position), '[]')
          INTO maps
          FROM (SELECT r.community_id, r.weight,
                       row_number() OVER (ORDER BY r.weight DESC, r.community_id COLLATE "C") AS position
                  FROM kgrag.community_report AS r
                  JOIN kgrag.community AS c ON c.tenant_id = t AND c.community_id = r.community_id AND c.level = lvl
                 WHERE r.tenant_id = t AND NOT r.stale
                 ORDER BY r.weight DESC, r.community_id COLLATE "C" LIMIT n) AS x;
    ELSIF question_vec IS NOT NULL AND map_of IS NOT NULL THEN
        -- the mixed route's map: of the reports of the communities its subject (the seeds the
        -- question names, map_of) is in, the nearest to the question (no floor: the name ties it
        -- to the question)
        SELECT COALESCE(jsonb_agg(jsonb_build_object('community_id', x.community_id, 'score', x.similarity,
                                                     'position', x.position) ORDER BY x.position), '[]')
          INTO maps
          FROM (SELECT r.community_id, 1 - (r.embedding <=> question_vec) AS similarity,
                       row_number() OVER (ORDER BY r.embedding <=> question_vec, r.community_id COLLATE "C") AS position
                  FROM kgrag.community_report AS r
                  JOIN kgrag.community AS c ON c.tenant_id = t AND c.community_id = r.community_id AND c.level = lvl
                 WHERE r.tenant_id = t AND NOT r.stale AND r.embedding IS NOT NULL
                   AND EXISTS (SELECT 1 FROM kgrag.community_member AS m
                                WHERE m.tenant_id = t AND m.community_id = r.community_id
                                  AND m.entity_id = ANY (map_of))
                 ORDER BY r.embedding <=> question_vec, r.community_id COLLATE "C" LIMIT n) AS x;
    END IF;
    IF whole_collection OR maps <> '[]' THEN
        NULL;  -- (chosen above: the whole collection, or the mixed route's map)
    ELSIF question_vec IS NOT NULL THEN
        SELECT COALESCE(jsonb_agg(jsonb_build_object('community_id', x.community_id, 'score', x.similarity,
                                                     'position', x.rank) ORDER BY x.rank), '[]')
          INTO maps
          FROM kgrag.search_reports_vector(question_vec, n, lvl) AS x
         WHERE x.similarity >= (opts ->> 'report_min_similarity')::float8
           AND NOT EXISTS (SELECT 1 FROM kgrag.community_report AS r  -- a stale report is not served
                            WHERE r.tenant_id = t AND r.community_id = x.community_id AND r.stale);
    ELSE
        -- the question as text only: reports ranked by its words
        SELECT COALESCE(jsonb_agg(jsonb_build_object('community_id', x.community_id, 'score', x.score,
                                                     'position', x.rank) ORDER BY x.rank), '[]')
          INTO maps
          FROM kgrag.search_reports_lexical(question, n, lvl, (opts ->> 'lexical_min_coverage')::float8) AS x
         WHERE NOT EXISTS (SELECT 1 FROM kgrag.community_report AS r
                            WHERE r.tenant_id = t AND r.community_id = x.community_id AND r.stale);
    END IF;
    -- the reports are the map; what they cite (the chunks that exist) is the evidence
    RETURN QUERY
    SELECT NULL::integer, m.community_id, 'community', 'community', m.score, NULL::text, NULL::text,
           jsonb_build_object('title', r.title, 'report', r.report, 'weight', r.weight, 'level', c.level,
                              'stale', r.stale, 'generator', r.generator,
                              'evidence_refs', to_jsonb(ARRAY(
                                  SELECT x.id FROM unnest(r.evidence_chunk_ids) WITH ORDINALITY AS x(id, o)
                                   WHERE EXISTS (SELECT 1 FROM kgrag.chunk AS ch WHERE ch.tenant_id = t AND ch.chunk_id = x.id)
                                   ORDER BY x.o)))
      FROM jsonb_to_recordset(maps) AS m(community_id text, score float8, position integer)
      JOIN kgrag.community_report AS r ON r.tenant_id = t AND r.community_id = m.community_id
      JOIN kgrag.community AS c ON c.tenant_id = t AND c.community_id = m.community_id
     ORDER BY m.position;
    RETURN QUERY
    SELECT NULL::integer, x.chunk_id, 'chunk', 'community', x.score, NULL::text, NULL::text,
           jsonb_build_object('via', x.community_id, 'evidence_refs', jsonb_build_array(x.chunk_id),
                              'doc_id', ch.doc_id, 'title', ch.title) || kgrag_private.chunk_place(ch.page, ch.headings)
      FROM (SELECT DISTINCT ON (e.id) e.id AS chunk_id, m.community_id, m.score, m.position, e.o
              FROM jsonb_to_recordset(maps) AS m(community_id text, score float8, position integer)
              JOIN kgrag.community_report AS r ON r.tenant_id = t AND r.community_id = m.community_id
             CROSS JOIN LATERAL unnest(r.evidence_chunk_ids) WITH ORDINALITY AS e(id, o)
             ORDER BY e.id, m.position, e.o) AS x
      JOIN kgrag.chunk AS ch ON ch.tenant_id = t AND ch.chunk_id = x.chunk_id
     ORDER BY x.position, x.o
     LIMIT global_rows.k;
END
$$;
COMMENT ON FUNCTION kgrag_private.global_rows(vector, text, boolean, integer, jsonb, text[]) IS
'Private. The global route: community reports of the chosen level (option level) ranked against the question above the report floor (by its vector, or by its words when the vector is NULL), or, for a question about the whole collection (whole_collection), every report by weight, or, for the mixed route (map_of: the seeds the question names), the reports of the communities they are in, nearest the question first, whatever their similarity (else ranked as above); each report as the map (kind community), then up to k chunks they cite as evidence (kind chunk, payload.via = the community).';

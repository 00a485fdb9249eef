-- Where a chunk stands in its source, as the rows, the context and the citations say it: the
-- document, the page a PDF chunk starts on, the headings above it.

CREATE OR REPLACE FUNCTION kgrag.source_tag(doc_id text, page integer DEFAULT NULL, headings text[] DEFAULT '{}')
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- brackets and bars would end the tag an answer cites ([source | chunk_id]): they become ( ) /
    SELECT translate(doc_id || COALESCE(' p.' || page, '')
                     || CASE WHEN cardinality(headings) > 0 THEN ' § ' || array_to_string(headings, ' > ') ELSE '' END,
                     '[]|', '()/')
$$;
COMMENT ON FUNCTION kgrag.source_tag(text, integer, text[]) IS
'Returns how a chunk''s source is named in the context an LLM gets and in the answers that cite it: the document id, then " p.N" where the chunk has a page (a PDF''s physical page, 1-based), then " § " and its headings joined by " > " where it has some ("handbook.pdf p.3 § On call > Escalation"), brackets and bars replaced. The context tags a chunk [source_tag | chunk_id].';

CREATE OR REPLACE FUNCTION kgrag_private.chunk_place(page integer, headings text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'page', page, 'headings', CASE WHEN cardinality(headings) > 0 THEN to_jsonb(headings) END))
$$;
COMMENT ON FUNCTION kgrag_private.chunk_place(integer, text[]) IS
'Private. Returns the page and headings of a chunk as the payload of a search row carries them: {"page": N, "headings": [...]}, each only where the chunk has it ({} for a chunk of a source without pages or headings).';

CREATE OR REPLACE VIEW kgrag.chunks WITH (security_invoker = true) AS
SELECT c.chunk_id, c.doc_id, d.title AS document_title, c.ordinal, c.page, c.headings, c.title AS section_title,
       c.char_start, c.char_end, c.text, c.embedding IS NOT NULL AS embedded
  FROM kgrag.chunk AS c
  JOIN kgrag.document AS d ON d.tenant_id = c.tenant_id AND d.doc_id = c.doc_id
 WHERE c.tenant_id = kgrag.current_tenant();
GRANT SELECT ON kgrag.chunks TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.chunks IS
'The current tenant''s chunks as an analyst reads them: chunk_id, its document and the document''s title, its ordinal, the page it starts on (PDF) and the headings above it, its section''s title, its span in the document''s converted text (char_start, char_end), its text and whether it has a vector. E.g. SELECT chunk_id, page, headings FROM kgrag.chunks WHERE doc_id = ''handbook.pdf'' ORDER BY ordinal;';

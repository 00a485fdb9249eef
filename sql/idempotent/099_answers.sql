-- The answer step's rules: which citations an answer may keep, and its log.

CREATE OR REPLACE FUNCTION kgrag.check_citations(cited text[], sent text[])
RETURNS TABLE (chunk_id text, status text, doc_id text, title text, quote text, page integer, headings text[],
               source text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    IF cited IS NULL OR sent IS NULL THEN
        RAISE EXCEPTION 'cited and sent must be arrays (empty, not NULL)' USING ERRCODE = '22004';
    END IF;
    IF cardinality(cited) > 1000 OR cardinality(sent) > 10000 THEN
        RAISE EXCEPTION 'at most 1,000 citations against 10,000 chunks sent, got % and %', cardinality(cited),
            cardinality(sent) USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    SELECT x.id,
           CASE WHEN c.chunk_id IS NULL THEN 'unknown'
                WHEN x.id <> ALL (sent) THEN 'not sent'
                ELSE 'ok' END,
           c.doc_id, d.title, left(c.text, 300), c.page, c.headings,
           CASE WHEN c.chunk_id IS NOT NULL THEN kgrag.source_tag(c.doc_id, c.page, c.headings) END
      FROM (SELECT u.id, min(u.o) AS o FROM unnest(cited) WITH ORDINALITY AS u(id, o)
             WHERE u.id IS NOT NULL GROUP BY u.id) AS x
      LEFT JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = x.id
      LEFT JOIN kgrag.document AS d ON d.tenant_id = c.tenant_id AND d.doc_id = c.doc_id
     ORDER BY x.o;
END
$$;
COMMENT ON FUNCTION kgrag.check_citations(text[], text[]) IS
'Returns, for each chunk id an answer cites (once each, in order), whether it may stay: status ok (a chunk of the current tenant that was in the context sent, the ids in sent), not sent (a real chunk the answer was not given) or unknown (no chunk of the tenant: a typo, a report id, another tenant''s chunk); with its document, title, a quote (its first 300 characters), its page and headings and how an answer names its source (kgrag.source_tag: "handbook.pdf p.3 § On call") when it is a chunk. An answer keeps only ok citations, tagged [source | chunk_id]. At most 1,000 citations against 10,000 chunks.';

CREATE OR REPLACE FUNCTION kgrag.report_context(community_id text, max_chars integer DEFAULT 8000)
RETURNS TABLE (body text, chunk_ids text[])
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
    cited text[];
    c record;
    block text;
    used integer := 0;
BEGIN
    IF max_chars IS NULL OR max_chars NOT BETWEEN 1 AND 1000000 THEN
        RAISE EXCEPTION 'max_chars must be between 1 and 1000000, got %', COALESCE(max_chars::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    SELECT format('[map %s] %s', r.community_id, r.report), r.evidence_chunk_ids INTO body, cited
      FROM kgrag.community_report AS r
     WHERE r.tenant_id = t AND r.community_id = report_context.community_id AND NOT r.stale;
    IF NOT FOUND THEN
        RETURN;  -- no report, or a stale one: never served
    END IF;
    chunk_ids := '{}';
    FOR c IN SELECT * FROM kgrag.cited_chunks(cited) LOOP  -- in the report's order, real chunks only
        block := format('[%s | %s] %s', kgrag.source_tag(c.doc_id, c.page, c.headings), c.chunk_id, c.text);
        EXIT WHEN used + length(block) > max_chars;
        used := used + length(block);
        body := body || E'\n\n' || block;
        chunk_ids := chunk_ids || c.chunk_id;
    END LOOP;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag.report_context(text, integer) IS
'Returns the context one map step of a global answer reads: (body, chunk_ids) = the community''s report tagged [map community_id], then the chunks it cites, in its order, each tagged [source | chunk_id] (kgrag.source_tag: the document, page and headings), while they fit in max_chars (the report aside; 1..1,000,000), and the ids of those chunks (what its citations may name, see kgrag.check_citations). No row for a community without a report or with a stale one.';

CREATE OR REPLACE FUNCTION kgrag_private.log_answer_at(
    tenant text, question text, route text, not_found boolean, calls integer, prompt_tokens integer, completion_tokens integer,
    context_chars integer, citations integer, dropped integer, ms double precision)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag_private.check_delegated_tenant(tenant);
BEGIN
    IF route IS NULL OR route NOT IN (SELECT r.route FROM kgrag.routes() AS r) THEN
        RAISE EXCEPTION 'unknown route %', COALESCE(quote_literal(route), 'NULL') USING ERRCODE = '22023';
    END IF;
    INSERT INTO kgrag.answer_log (tenant_id, route, not_found, calls, prompt_tokens, completion_tokens,
                                  context_chars, citations, dropped, ms)
    VALUES (t, route, COALESCE(not_found, false),
            greatest(COALESCE(calls, 0), 0), greatest(COALESCE(prompt_tokens, 0), 0),
            greatest(COALESCE(completion_tokens, 0), 0), greatest(COALESCE(context_chars, 0), 0),
            greatest(COALESCE(citations, 0), 0), greatest(COALESCE(dropped, 0), 0), greatest(COALESCE(ms, 0), 0));
END
$$;
GRANT CREATE ON SCHEMA kgrag_private TO kgrag_logger;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag_private.log_answer_at(text, text, text, boolean, integer, integer, integer, integer, integer, integer, double precision)
    OWNER TO kgrag_logger;
REVOKE CREATE ON SCHEMA kgrag_private FROM kgrag_logger;
REVOKE EXECUTE ON FUNCTION kgrag_private.log_answer_at(text, text, text, boolean, integer, integer, integer, integer, integer, integer, double precision)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.log_answer_at(text, text, text, boolean, integer, integer, integer, integer, integer, integer, double precision)
    TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag_private.log_answer_at(text, text, text, boolean, integer, integer, integer, integer, integer, integer, double precision) IS
'Private. What kgrag.log_answer does, for the tenant the transaction acts for (tenant: checked against it): adds the answer log row. SECURITY DEFINER, owned by kgrag_logger (which may insert into the logs and nothing else), on the allow-list. On a Citus cluster a delegated function (kgrag_private.delegate_calls): it runs, as kgrag_logger, on the worker holding the tenant''s shards, so that the coordinator never writes them as another role than the caller''s.';

CREATE OR REPLACE FUNCTION kgrag.log_answer(
    question text, route text, not_found boolean, calls integer, prompt_tokens integer, completion_tokens integer,
    context_chars integer, citations integer, dropped integer, ms double precision)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- one statement, its values bound (EXECUTE ... USING): on Citus, one call to the tenant's worker
    EXECUTE 'SELECT FROM kgrag_private.log_answer_at($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)'
      USING kgrag.current_tenant(), question, route, not_found, calls, prompt_tokens, completion_tokens, context_chars,
            citations, dropped, ms;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.log_answer(text, text, boolean, integer, integer, integer, integer, integer, integer, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.log_answer(text, text, boolean, integer, integer, integer, integer, integer, integer, double precision) TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag.log_answer(text, text, boolean, integer, integer, integer, integer, integer, integer, double precision) IS
'Adds a row to kgrag.answer_log for the current tenant: the question (not kept: the log holds no trace of it), a known route, not_found, the LLM calls made, the prompt and completion tokens the endpoint reported, the characters of context sent, the citations kept and dropped, the milliseconds (negative or NULL counts are 0). pgkgrag''s ask calls it; an application answering in another language may too. Through kgrag_private.log_answer_at (SECURITY DEFINER, owned by kgrag_logger, which may insert into the logs and nothing else: readers may not write the log themselves; on Citus, one call to the worker holding the tenant''s shards).';

CREATE OR REPLACE VIEW kgrag.answers_by_route WITH (security_invoker = true) AS
SELECT a.route,
       count(*) AS answers,
       count(*) FILTER (WHERE a.not_found) AS not_found,
       sum(a.calls) AS calls,
       sum(a.prompt_tokens) AS prompt_tokens,
       sum(a.completion_tokens) AS completion_tokens,
       round(avg(a.context_chars)) AS mean_context_chars,
       sum(a.dropped) AS citations_dropped,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY a.ms)::numeric, 1) AS p50_ms,
       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY a.ms)::numeric, 1) AS p95_ms
  FROM kgrag.answer_log AS a
 WHERE a.tenant_id = kgrag.current_tenant()
 GROUP BY a.route;
GRANT SELECT ON kgrag.answers_by_route TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.answers_by_route IS
'What answering costs per route, for the current tenant: answers, those not found in the sources, LLM calls, prompt and completion tokens, mean characters of context, citations dropped, p50 and p95 milliseconds.';

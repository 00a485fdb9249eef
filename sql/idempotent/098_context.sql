-- Citations and context: references checked and expanded, and the context block for an LLM.

CREATE OR REPLACE FUNCTION kgrag_private.validity_note(relation jsonb) RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- the days in UTC, whatever the session's time zone
    SELECT CASE WHEN v.f IS NOT NULL AND v.u IS NOT NULL THEN format(' (%s to %s)', v.f, v.u)
                WHEN v.f IS NOT NULL THEN format(' (since %s)', v.f)
                WHEN v.u IS NOT NULL THEN format(' (until %s)', v.u)
                ELSE '' END
      FROM (SELECT to_char((relation ->> 'valid_from')::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS f,
                   to_char((relation ->> 'valid_to')::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS u) AS v
$$;
COMMENT ON FUNCTION kgrag_private.validity_note(jsonb) IS
'Private. Returns how the context prints the validity of a relation of a search row''s payload ({valid_from, valid_to}, either may be missing): " (2015-01-01 to 2020-01-01)", " (since ...)", " (until ...)", the days in UTC; '''' for a relation without one.';

CREATE OR REPLACE FUNCTION kgrag.citations_resolvable(refs text[]) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the count to one shard
BEGIN
    IF refs IS NULL OR pg_catalog.array_position(refs, NULL) IS NOT NULL THEN
        RETURN false;
    END IF;
    -- chunk ids are unique within a tenant: every distinct reference found once
    RETURN (SELECT count(*) FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.chunk_id = ANY (refs))
         = (SELECT count(DISTINCT r.id) FROM unnest(refs) AS r(id));
END
$$;
COMMENT ON FUNCTION kgrag.citations_resolvable(text[]) IS
'Returns true when every reference is the id of a chunk of the current tenant (a community id, a deleted chunk or another tenant''s chunk makes it false). An empty array is true; NULL is false.';

CREATE OR REPLACE FUNCTION kgrag.cited_chunks(refs text[])
RETURNS TABLE (chunk_id text, doc_id text, title text, text text, page integer, headings text[])
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    RETURN QUERY
    SELECT c.chunk_id, c.doc_id, d.title, c.text, c.page, c.headings
      FROM (SELECT r.id, min(r.o) AS o FROM unnest(refs) WITH ORDINALITY AS r(id, o) GROUP BY r.id) AS x
      JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = x.id
      JOIN kgrag.document AS d ON d.tenant_id = t AND d.doc_id = c.doc_id
     ORDER BY x.o;
END
$$;
COMMENT ON FUNCTION kgrag.cited_chunks(text[]) IS
'Returns the chunks the references name, in the order given, once each: (chunk_id, doc_id, title of the document, text, page, headings): the page the chunk starts on (a PDF''s, 1-based; NULL elsewhere) and the headings above it in its source. References that do not resolve are left out (see kgrag.citations_resolvable).';

CREATE OR REPLACE FUNCTION kgrag_private.count_block(matching jsonb) RETURNS text
LANGUAGE sql IMMUTABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    -- (figures after labels: "1 chunks" never reads)
    SELECT CASE WHEN (matching ->> 'known')::boolean
                THEN format('[collection count] In the whole collection, chunks holding every word of "%s": %s, in documents: %s%s. '
                            'Rows the search returned, which the sources below come from: %s; a count made from them alone may be incomplete.',
                            matching ->> 'subject',
                            CASE WHEN (matching ->> 'capped')::boolean THEN 'more than ' ELSE '' END || (matching ->> 'chunks'),
                            CASE WHEN (matching ->> 'capped')::boolean THEN 'at least ' ELSE '' END || (matching ->> 'documents'),
                            COALESCE((SELECT string_agg(format('; entities of type %s in the graph: %s', e.key, e.value), '' ORDER BY e.key)
                                        FROM jsonb_each_text(matching -> 'entities') AS e), ''),
                            matching ->> 'shown')
                ELSE format('[collection count] No chunk of the collection holds every word of "%s" and no entity type is called so: '
                            'the count is unknown, not zero (the documents may say it in other words or in another language).',
                            matching ->> 'subject') END
$$;
COMMENT ON FUNCTION kgrag_private.count_block(jsonb) IS
'Private. The block kgrag.context_blocks puts first for a question that asks how many or for every item: what payload.matching (kgrag_private.subject_count) says of the whole collection, so that an answer is not a count of the sources alone, or says the count is unknown, not zero.';

CREATE OR REPLACE FUNCTION kgrag_private.context_blocks_at(
    tenant text, question_vec vector, route text, question text, max_chars integer, k integer, options jsonb)
RETURNS TABLE (blocks jsonb, last_route text, last_reason text, last_reports text[])
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
SET plan_cache_mode = auto  -- cached plans where it runs (use_tenant forces custom ones on Citus, for the
                            -- coordinator's UPDATEs; a delegated read runs every statement on one worker)
AS $$
DECLARE
    t text := kgrag_private.check_delegated_tenant(tenant);
    r record;
    candidate text;
    seen text[] := '{}';
    pool jsonb := '[]';  -- every block the rows give, in rank order
    o integer := 0;
    used integer := 0;
    taken integer[] := '{}';
BEGIN
    IF max_chars IS NULL OR max_chars < 1 THEN
        RAISE EXCEPTION 'max_chars must be >= 1, got %', COALESCE(max_chars::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    -- the search's log row waits for the characters packed (kgrag_search leaves it in kgrag.deferred_log)
    PERFORM set_config('kgrag.defer_log', 'on', true), set_config('kgrag.deferred_log', '', true);
    FOR r IN SELECT x.* FROM kgrag_private.search_at(t, question_vec, route, question, k, options) AS s  -- (kgrag_search)
              CROSS JOIN LATERAL unnest(s.result_rows) AS x ORDER BY 1 LOOP
        IF o = 0 AND r.payload ? 'matching' THEN  -- a count question: what the rows alone cannot say, first
            o := 1;
            pool := pool || jsonb_build_object('o', o, 'kind', 'count', 'ref_id', 'count',
                                               'body', kgrag_private.count_block(r.payload -> 'matching'), 'neighbour', false);
        END IF;
        IF r.kind = 'chunk' THEN
            CONTINUE WHEN r.ref_id = ANY (seen);
            seen := seen || r.ref_id;
            EXECUTE 'SELECT format(''[%s | %s] %s%s'', kgrag.source_tag(c.doc_id, c.page, c.headings), c.chunk_id,
                                   CASE WHEN $3 THEN format(''(neighbour %s %s) '', $4, $5) END, c.text)
                       FROM kgrag.chunk AS c WHERE c.tenant_id = $1 AND c.chunk_id = $2'
               INTO candidate  -- planned each time: see kgrag_private.search_at
              USING t, r.ref_id, r.source = 'neighbour', r.payload ->> 'side', r.payload ->> 'neighbour_of';
        ELSIF r.kind = 'entity' THEN
            -- the answer and the relations that led to it count in the same budget
            candidate := format('[entity %s] %s', r.payload ->> 'name', COALESCE(r.payload ->> 'answer', ''))
                         || COALESCE(' (' || (r.payload -> 'evidence_refs' ->> 0) || ')', '')
                         || COALESCE((SELECT string_agg(E'\n  ' || COALESCE(s.name, x.rel ->> 'src') || ' -['
                                                        || COALESCE(x.rel ->> 'rel', '?') || ']-> '
                                                        || COALESCE(d.name, x.rel ->> 'dst')
                                                        || kgrag_private.validity_note(x.rel), '' ORDER BY x.i)
                                        FROM jsonb_array_elements(r.payload -> 'relations') WITH ORDINALITY AS x(rel, i)
                                        LEFT JOIN kgrag.entity AS s ON s.tenant_id = t AND s.entity_id = x.rel ->> 'src'
                                        LEFT JOIN kgrag.entity AS d ON d.tenant_id = t AND d.entity_id = x.rel ->> 'dst'), '');
        ELSE
            candidate := format('[map %s] %s', r.ref_id, r.payload ->> 'report');
        END IF;
        o := o + 1;
        pool := pool || jsonb_build_object('o', o, 'kind', r.kind, 'ref_id', r.ref_id, 'body', candidate,
                                           'neighbour', r.source = 'neighbour');
    END LOOP;
    -- What fits, the rows themselves before their neighbours: each block costs its length and the
    -- blank line before it (the first has none, hence max_chars + 2); one that does not fit is
    -- skipped and smaller ones after it may still fit. Then in rank order.
    FOR r IN SELECT p.o, length(p.body) AS n FROM jsonb_to_recordset(pool) AS p(o integer, body text, neighbour boolean)
              ORDER BY p.neighbour, p.o LOOP
        IF used + r.n + 2 <= max_chars + 2 THEN
            used := used + r.n + 2;
            taken := taken || r.o;
        END IF;
    END LOOP;
    PERFORM set_config('kgrag.defer_log', '', true);
    IF current_setting('kgrag.deferred_log', true) <> '' THEN
        PERFORM kgrag_private.log_entry(current_setting('kgrag.deferred_log')::jsonb, greatest(used - 2, 0));
        PERFORM set_config('kgrag.deferred_log', '', true);
    END IF;
    blocks := COALESCE((SELECT jsonb_agg(jsonb_build_object('kind', p.kind, 'ref_id', p.ref_id, 'body', p.body) ORDER BY p.o)
                          FROM jsonb_to_recordset(pool) AS p(o integer, kind text, ref_id text, body text)
                         WHERE p.o = ANY (taken)), '[]');
    SELECT s.route, s.reason, s.reports INTO last_route, last_reason, last_reports FROM kgrag.last_search() AS s;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.context_blocks_at(text, vector, text, text, integer, integer, jsonb) IS
'Private. kgrag.context_blocks itself, for the tenant the transaction acts for (tenant: checked against it), as one row: the blocks (a JSON array of kind, ref_id, body, in order) and what kgrag.last_search() returns after its search. On a Citus cluster a delegated function (kgrag_private.delegate_calls): the public function''s one call runs on the worker holding the tenant''s shards.';

CREATE OR REPLACE FUNCTION kgrag.context_blocks(
    question_vec vector DEFAULT NULL, route text DEFAULT 'auto', question text DEFAULT NULL, max_chars integer DEFAULT 4000,
    k integer DEFAULT 10, options jsonb DEFAULT '{}')
RETURNS TABLE (block integer, kind text, ref_id text, body text, chars integer)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    done record;
BEGIN
    -- one statement, its values bound (EXECUTE ... USING): on Citus, one call to the tenant's worker
    EXECUTE 'SELECT * FROM kgrag_private.context_blocks_at($1, $2, $3, $4, $5, $6, $7)'
       INTO done USING kgrag.current_tenant(), question_vec, route, question, max_chars, k, options;
    PERFORM kgrag_private.leave_last_search(done.last_route, done.last_reason, done.last_reports);
    RETURN QUERY
    SELECT b.o::integer, b.x ->> 'kind', b.x ->> 'ref_id', b.x ->> 'body', length(b.x ->> 'body')
      FROM jsonb_array_elements(done.blocks) WITH ORDINALITY AS b(x, o)
     ORDER BY b.o;
END
$$;
COMMENT ON FUNCTION kgrag.context_blocks(vector, text, text, integer, integer, jsonb) IS
'Returns the context for an LLM as blocks, highest ranked first, within max_chars in total (blank-line separators included): for a question that asks how many or for every item, first a block of kind count saying how many chunks and documents of the whole collection hold its subject (or that the count is unknown, not zero: kgrag_private.count_block); community maps, entity answers with the relations of their path (and their validity where they have one), and chunks tagged [source | chunk_id] (kgrag.source_tag: the document, and the page and headings where the chunk has them), each chunk once; with the search option neighbours, the chunks beside them, tagged (neighbour before|after chunk_id), which get the room the others leave. A block that does not fit is skipped and smaller ones after it may still fit.';

CREATE OR REPLACE FUNCTION kgrag.context(
    question_vec vector DEFAULT NULL, route text DEFAULT 'auto', question text DEFAULT NULL, max_chars integer DEFAULT 4000,
    k integer DEFAULT 10, options jsonb DEFAULT '{}')
RETURNS text
LANGUAGE sql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT COALESCE(string_agg(b.body, E'\n\n' ORDER BY b.block), '')
      FROM kgrag.context_blocks(question_vec, route, question, max_chars, k, options) AS b
$$;
COMMENT ON FUNCTION kgrag.context(vector, text, text, integer, integer, jsonb) IS
'Returns the context block for an LLM as one text of at most max_chars characters: kgrag.context_blocks joined by blank lines. Empty when the search returned nothing. As kgrag_search, it takes the question vector, the question text, or both: kgrag.context(question => ''...'') from psql.';

-- The subject of a question about the collection or about every item of a kind: what is left of
-- the question once the router's markers and the words for the collection itself are taken out
-- ("What are the main themes about office furniture?" -> "office furniture"), and how much of the
-- collection holds it. The router answers an aggregation about a subject nobody wrote about with
-- nothing, and a count or a list with how many items match (kgrag.route, kgrag_search).

CREATE OR REPLACE FUNCTION kgrag_private.tenant_languages() RETURNS regconfig[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    configs regconfig[];
BEGIN
    -- one probe of document_lang_idx per language, not a scan of the documents
    WITH RECURSIVE langs(lang) AS (
        (SELECT d.lang FROM kgrag.document AS d WHERE d.tenant_id = t ORDER BY d.lang LIMIT 1)
        UNION ALL
        SELECT (SELECT d.lang FROM kgrag.document AS d WHERE d.tenant_id = t AND d.lang > l.lang
                 ORDER BY d.lang LIMIT 1)
          FROM langs AS l
         WHERE l.lang IS NOT NULL
    )
    SELECT COALESCE(array_agg(l.lang), '{}') INTO configs FROM langs AS l WHERE l.lang IS NOT NULL;
    RETURN configs;
END
$$;
COMMENT ON FUNCTION kgrag_private.tenant_languages() IS
'Private. Returns the text search configurations of the current tenant''s documents (their languages), one index probe each.';

CREATE OR REPLACE FUNCTION kgrag_private.question_subject(question text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value (router_rule is a reference table on Citus)
    -- words that name the collection itself, or the asking, not a subject (folded, English and Portuguese)
    generic constant text[] := ARRAY['collection', 'corpus', 'documents?', 'docs?', 'notes?', 'reports?', 'files?',
                                     'texts?', 'records?', 'items?', 'entries', 'entry', 'there', 'list', 'show',
                                     'give', 'name', 'across', 'throughout', 'within', 'among', 'regarding',
                                     'concerning', 'acerca', 'sobre', 'entre', 'acervo', 'colecao', 'documentos?', 'notas?', 'relatorios?',
                                     'arquivos?', 'registros?', 'itens', 'existem', 'houve', 'ha', 'liste',
                                     'mostre', 'diga'];
    rest text := kgrag.fold(COALESCE(question, ''));
    configs regconfig[] := kgrag_private.tenant_languages();
    marker record;
BEGIN
    PERFORM kgrag_private.check_question(question);
    -- every marker of every enabled rule (a tenant's rule in place of the default of the same id)
    FOR marker IN SELECT DISTINCT ON (rr.rule_id) rr.pattern, rr.enabled FROM kgrag.router_rule AS rr
                   WHERE rr.tenant_id IN ('*', t) ORDER BY rr.rule_id, (rr.tenant_id = '*') LOOP
        CONTINUE WHEN NOT marker.enabled;
        rest := regexp_replace(rest, marker.pattern, ' ', 'gi');
    END LOOP;
    rest := regexp_replace(rest, '\m(' || array_to_string(generic, '|') || ')\M', ' ', 'gi');
    -- the words left that are no stop word of the languages of the rules or of the documents
    configs := configs || ARRAY(SELECT DISTINCT kgrag.text_search_config(rr.lang) FROM kgrag.router_rule AS rr
                                 WHERE rr.tenant_id IN ('*', t));
    SELECT string_agg(w.word, ' ' ORDER BY w.o) INTO rest
      FROM regexp_split_to_table(btrim(regexp_replace(rest, '[^[:alnum:]]+', ' ', 'g')), ' ') WITH ORDINALITY AS w(word, o)
     WHERE w.word <> ''
       AND NOT EXISTS (SELECT 1 FROM unnest(configs) AS cfg WHERE length(to_tsvector(cfg, w.word)) = 0);
    RETURN NULLIF(rest, '');
END
$$;
COMMENT ON FUNCTION kgrag_private.question_subject(text) IS
'Private. Returns the subject of a question: its words (accents folded) once the markers of the router''s rules (kgrag.router_rule) and the words for the collection itself (documents, notes, reports, acervo, ...) are taken out, punctuation and the stop words of the languages of the rules and of the tenant''s documents dropped; NULL when nothing is left ("What are the main themes?").';

CREATE OR REPLACE FUNCTION kgrag_private.subject_matches(subject text, cap integer, every_word boolean DEFAULT true)
RETURNS TABLE (has_words boolean, chunks integer, documents integer, capped boolean)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
SET client_min_messages = warning  -- a subject of stop words only is no reason for a NOTICE
AS $$
DECLARE
    found text[];
BEGIN
    -- chunks that hold every content word of the subject (or one, every_word false), in their
    -- own language's configuration (kgrag.chunk.tsv holds the folded forms too), at most cap + 1
    SELECT bool_or(numnode(q.query) > 0),
           COALESCE(array_agg(DISTINCT p.chunk_id) FILTER (WHERE p.chunk_id IS NOT NULL), '{}')
      INTO has_words, found
      FROM unnest(kgrag_private.tenant_languages()) AS cfg
     CROSS JOIN LATERAL (SELECT CASE WHEN every_word THEN plainto_tsquery(cfg, COALESCE(subject, ''))
                                     ELSE kgrag.lexical_query(subject, cfg) END AS query) AS q
      LEFT JOIN LATERAL kgrag_private.fts_probe(q.query, cfg, cap + 1) AS p ON numnode(q.query) > 0;
    has_words := COALESCE(has_words, false);
    capped := cardinality(found) > cap;
    chunks := least(cardinality(found), cap);
    documents := (SELECT count(DISTINCT regexp_replace(f.id, '#[0-9]+$', ''))
                    FROM unnest(found[1:cap]) AS f(id));
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION kgrag_private.subject_matches(text, integer, boolean) IS
'Private. Returns how much of the collection holds a subject: has_words (whether it has content words in some language of the tenant''s documents), chunks and documents holding every one of them (every_word false: one of them) (full-text search, each chunk in its own language), at most cap chunks counted (capped: more exist).';

CREATE OR REPLACE FUNCTION kgrag_private.subject_types(subject text, cap integer)
RETURNS TABLE (type text, entities integer, capped boolean)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
SET client_min_messages = warning
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    -- the entity types of the tenant (one probe of entity_type_idx each, at most 1,000 types)
    -- whose name is one of the subject's words ("incidents" -> type Incident)
    RETURN QUERY
    WITH RECURSIVE types(type, n) AS (
        (SELECT e.type, 1 FROM kgrag.entity AS e WHERE e.tenant_id = t ORDER BY e.type LIMIT 1)
        UNION ALL
        SELECT (SELECT e.type FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.type > y.type ORDER BY e.type LIMIT 1),
               y.n + 1
          FROM types AS y
         WHERE y.type IS NOT NULL AND y.n < 1000
    )
    SELECT y.type, least(c.n, cap)::integer, c.n > cap
      FROM types AS y
     CROSS JOIN LATERAL (SELECT count(*) AS n FROM (SELECT 1 FROM kgrag.entity AS e
                                                     WHERE e.tenant_id = t AND e.type = y.type LIMIT cap + 1) AS x) AS c
     WHERE y.type IS NOT NULL
       AND EXISTS (SELECT 1 FROM unnest(kgrag_private.tenant_languages()) AS cfg
                    WHERE numnode(plainto_tsquery(cfg, kgrag.fold(y.type))) > 0
                      AND to_tsvector(cfg, COALESCE(subject, '')) @@ plainto_tsquery(cfg, kgrag.fold(y.type)))
     ORDER BY y.type;
END
$$;
COMMENT ON FUNCTION kgrag_private.subject_types(text, integer) IS
'Private. Returns the entity types whose name the subject holds as a word, in a language of the tenant''s documents ("incidents" names the type Incident), with the number of entities of each (at most cap counted; capped: more exist). At most 1,000 types are looked at.';

CREATE OR REPLACE FUNCTION kgrag_private.subject_count(subject text, shown integer)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    cap integer := kgrag.setting('lexical_candidates')::integer;
    m record;
BEGIN
    SELECT * INTO m FROM kgrag_private.subject_matches(subject, cap);
    RETURN jsonb_build_object(
        'subject', subject, 'shown', shown, 'chunks', m.chunks, 'documents', m.documents, 'capped', m.capped,
        'entities', COALESCE((SELECT jsonb_object_agg(y.type, y.entities) FROM kgrag_private.subject_types(subject, cap) AS y), '{}'));
END
$$;
COMMENT ON FUNCTION kgrag_private.subject_count(text, integer) IS
'Private. Returns what a search''s payload.matching says of a count or list question: {subject, shown (the rows returned), chunks and documents holding every word of the subject, capped (more than the setting lexical_candidates chunks hold it: chunks is then that ceiling and documents a lower bound), entities: {type: number of entities of the tenant} for the types the subject names, all of them, not only those the rest of the subject fits}.';

-- Curation: what a person should check (kgrag.review_queue), the decisions they record
-- (kgrag.reject_relation, kgrag.rename_entity, kgrag.approve: rows of kgrag.curation, who and
-- when included), and how ingestion and the build apply them every time
-- (kgrag_private.apply_decisions, and the graph refresh, which never rebuilds a rejected relation).

CREATE OR REPLACE VIEW kgrag.decisions WITH (security_invoker = true) AS
SELECT DISTINCT ON (c.kind, c.target) c.kind, c.target, c.value, c.doc_id, c.note, c.decided_by, c.decided_at
  FROM kgrag.curation AS c
 ORDER BY c.kind, c.target, c.decided_at DESC;
COMMENT ON VIEW kgrag.decisions IS
'The decision that counts on each target of the current tenant (the latest of its kind): (kind reject_relation, correct_relation, correct_evidence, rename_entity, merge_entities, split_entity or approve; target: "src|REL|dst" for a relation, an entity id, "namesake:KEY@DOC" for what a document says under a name (a merge: "namesake:KEY@DOC+DOC"), or a review item; value: the new name of a rename, the new type of a corrected relation, {"chunk_id", "quote"} of corrected evidence; doc_id: the document it is about, forgotten with it; note, decided_by, decided_at). kgrag.curation keeps every decision.';
GRANT SELECT ON kgrag.decisions TO kgrag_reader, kgrag_writer, kgrag_curator;

CREATE OR REPLACE FUNCTION kgrag_private.relation_target(src text, rel text, dst text) RETURNS text
LANGUAGE sql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT src || '|' || rel || '|' || dst
$$;
COMMENT ON FUNCTION kgrag_private.relation_target(text, text, text) IS
'Private. Returns how a decision names a stated relation: "src|REL|dst" (entity ids and the relation key).';

CREATE OR REPLACE FUNCTION kgrag_private.answer_target(entity_id text, before text, answer text) RETURNS text
LANGUAGE sql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT 'answer:' || entity_id || '@' || left(md5(before || chr(10) || answer), 8)
$$;
COMMENT ON FUNCTION kgrag_private.answer_target(text, text, text) IS
'Private. Returns how a decision names one change of an entity''s answer: "answer:ENTITY@HASH", the hash of the answer before and the answer after (approving one change leaves the next one in the queue).';

CREATE OR REPLACE FUNCTION kgrag_private.name_words(name text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ARRAY(SELECT w FROM regexp_split_to_table(kgrag.canonical_name(name), ' ') AS w WHERE w <> '')
$$;
COMMENT ON FUNCTION kgrag_private.name_words(text) IS
'Private. The words of a name''s canonical form (kgrag.canonical_name: folded, without punctuation): "Bruno D." -> {bruno,d}.';

CREATE OR REPLACE FUNCTION kgrag_private.words_within(shorter text[], longer text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT cardinality(shorter) BETWEEN 1 AND cardinality(longer)
           -- each word of the shorter name is one of the longer's, in any order: equal, an initial
           -- of it, or one word of three letters or more beginning the other ("Corp", "Corporation")
           AND NOT EXISTS (SELECT 1 FROM unnest(shorter) AS u
                            WHERE NOT EXISTS (SELECT 1 FROM unnest(longer) AS v
                                               WHERE u = v OR (length(u) = 1 AND starts_with(v, u))
                                                  OR (length(v) = 1 AND starts_with(u, v))
                                                  OR (least(length(u), length(v)) >= 3 AND (starts_with(u, v) OR starts_with(v, u)))))
           -- and one of them a word, not an initial
           AND EXISTS (SELECT 1 FROM unnest(shorter) AS u, unnest(longer) AS v
                        WHERE least(length(u), length(v)) >= 3 AND (starts_with(u, v) OR starts_with(v, u)))
$$;
COMMENT ON FUNCTION kgrag_private.words_within(text[], text[]) IS
'Private. Returns whether every word of the shorter name is one of the longer name''s, in any order (equal, an initial of it, or a word of three letters or more beginning the other), one of them a word of three letters or more. For kgrag_private.names_alike.';

CREATE OR REPLACE FUNCTION kgrag_private.names_alike(a text, b text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT x.da = x.db AND (kgrag_private.words_within(x.aa, x.ab) OR kgrag_private.words_within(x.ab, x.aa))
      FROM (SELECT ARRAY(SELECT w FROM unnest(kgrag_private.name_words(a)) AS w WHERE w ~ '[0-9]' ORDER BY w) AS da,
                   ARRAY(SELECT w FROM unnest(kgrag_private.name_words(b)) AS w WHERE w ~ '[0-9]' ORDER BY w) AS db,
                   ARRAY(SELECT w FROM unnest(kgrag_private.name_words(a)) AS w WHERE w !~ '[0-9]') AS aa,
                   ARRAY(SELECT w FROM unnest(kgrag_private.name_words(b)) AS w WHERE w !~ '[0-9]') AS ab) AS x
$$;
COMMENT ON FUNCTION kgrag_private.names_alike(text, text) IS
'Private. Returns whether two names may be one''s as written twice: the same words with digits, and the words of the one with fewer all the other''s, in any order, one of them a word (kgrag_private.words_within): "Bruno D." and "Bruno Dias", "Mendes, Carla" and "Carla M. Mendes", "Dra. Helena Souza" and "Helena Souza", "Acme Corp" and "Acme Corporation"; not "Employee 12" and "Employee 21", nor "Ana Lima" and "Eva Lima". For the near_identifiers items of kgrag.review_queue, whose pairs first share a key of their names (the name, or the first three letters of one of its words with its words with digits), which alike names always do.';

CREATE OR REPLACE FUNCTION kgrag_private.near_identifiers()
RETURNS TABLE (a text, b text, a_name text, b_name text)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
-- hash joins over the variants: their number is not known to the planner, which would loop
SET enable_nestloop = off
AS $fn$
BEGIN
    -- the tenant bound as a value: on Citus the statement runs on the tenant's shard, whole
    RETURN QUERY EXECUTE $q$
WITH identified AS MATERIALIZED (  -- the entities keyed by an identifier, in the form compared, once each,
    -- with how many others of their type have the same digits, and the keys of their names: the
    -- name's canonical form ('=' before it), and the first three letters of each of its words of letters
    -- with its words with digits ("Ana Lima": "ana|", "lim|"; "Employee 12": "emp|12"), one of
    -- which two alike names (kgrag_private.names_alike) always share
    SELECT x.*, count(*) OVER (PARTITION BY x.kind, x.digits) AS same_digits
      FROM (SELECT e.entity_id, e.name, split_part(e.entity_id, ':#', 1) AS kind,
                   split_part(e.entity_id, ':#', 2) AS form,
                   regexp_replace(split_part(e.entity_id, ':#', 2), '[^0-9]', '', 'g') AS digits,
                   ARRAY(SELECT '=' || kgrag.canonical_name(e.name)
                         UNION
                         SELECT left(w, 3) || '|' || n.numbers FROM unnest(n.words) AS w
                          WHERE w !~ '[0-9]' AND length(w) >= 3) AS keys
              FROM kgrag.entity AS e
             CROSS JOIN LATERAL (SELECT array_agg(t.w) AS words,
                                        COALESCE(string_agg(t.w, ' ' ORDER BY t.w) FILTER (WHERE t.w ~ '[0-9]'), '') AS numbers
                                   FROM regexp_split_to_table(kgrag.canonical_name(e.name), ' ') AS t(w)
                                  WHERE t.w <> '') AS n
             WHERE e.tenant_id = $1 AND strpos(e.entity_id, ':#') > 0
               AND strpos(e.entity_id, '~') = 0) AS x
), name_keys AS (
    SELECT i.entity_id, i.name, i.kind, i.form, k.key, count(*) OVER (PARTITION BY i.kind, k.key) AS sharing
      FROM identified AS i CROSS JOIN LATERAL unnest(i.keys) AS k(key)
     WHERE length(i.form) BETWEEN 5 AND 64
), identifier_variants AS (
    -- of an entity with a key of its name that another of its type shares: the form (d, at = 0);
    -- the form without its character at (d, at = 1 ...): two forms sharing one are one character
    -- added, dropped or replaced apart; the form with its characters at and at + 1 in order (s):
    -- two forms sharing one are those two swapped
    SELECT k.entity_id, k.name, k.kind, k.form, k.key, v.how, v.v, v.at
      FROM name_keys AS k
     CROSS JOIN LATERAL (SELECT 'd', k.form, 0
                         UNION ALL
                         SELECT 'd', overlay(k.form PLACING '' FROM n FOR 1), n FROM generate_series(1, length(k.form)) AS n
                         UNION ALL
                         SELECT 's', overlay(k.form PLACING least(c.x, c.y) || greatest(c.x, c.y) FROM n FOR 2), n
                           FROM generate_series(1, length(k.form) - 1) AS n
                          CROSS JOIN LATERAL (SELECT substr(k.form, n, 1) AS x, substr(k.form, n + 1, 1) AS y) AS c
                          WHERE c.x <> c.y) AS v(how, v, at)
     WHERE k.sharing > 1
)
    -- the same six digits or more with other letters, whatever the names; one character replaced
    -- under the same name; one added or dropped, or two neighbours swapped, between alike names
    -- (kgrag_private.names_alike: "Bruno D." and "Bruno Dias"). Numbers given in a row differ so
    -- too ("EMP-0012", "EMP-0013", "EMP-0021"), and under other names they are other people. Each
    -- kind of slip is its own join, on the key of the names and where the character is, so that
    -- a series of numbers costs no more than reading it.
    SELECT a.entity_id AS a, b.entity_id AS b, a.name AS a_name, b.name AS b_name
      FROM identified AS a
      JOIN identified AS b ON b.kind = a.kind AND b.digits = a.digits
     WHERE a.same_digits > 1 AND b.same_digits > 1 AND length(a.digits) >= 6
       AND a.entity_id < b.entity_id COLLATE "C"
    UNION
    SELECT a.entity_id, b.entity_id, a.name, b.name  -- replaced: the same name, the same place
      FROM identifier_variants AS a
      JOIN identifier_variants AS b ON b.kind = a.kind AND b.key = a.key AND b.how = a.how AND b.v = a.v AND b.at = a.at
     WHERE a.how = 'd' AND left(a.key, 1) = '=' AND a.at > 0 AND a.entity_id < b.entity_id COLLATE "C"
    UNION
    SELECT a.entity_id, b.entity_id, a.name, b.name  -- swapped: the same place, between alike names
      FROM identifier_variants AS a
      JOIN identifier_variants AS b ON b.kind = a.kind AND b.key = a.key AND b.how = a.how AND b.v = a.v AND b.at = a.at
     WHERE a.how = 's' AND a.entity_id < b.entity_id COLLATE "C"
       AND (a.name = b.name OR kgrag_private.names_alike(a.name, b.name))
    UNION
    -- added or dropped: a form (at = 0) is the other less one character, between alike names
    -- (either entity first: the pair in id order)
    SELECT CASE WHEN a.entity_id < b.entity_id COLLATE "C" THEN a.entity_id ELSE b.entity_id END,
           CASE WHEN a.entity_id < b.entity_id COLLATE "C" THEN b.entity_id ELSE a.entity_id END,
           CASE WHEN a.entity_id < b.entity_id COLLATE "C" THEN a.name ELSE b.name END,
           CASE WHEN a.entity_id < b.entity_id COLLATE "C" THEN b.name ELSE a.name END
      FROM identifier_variants AS a
      JOIN identifier_variants AS b ON b.kind = a.kind AND b.key = a.key AND b.how = a.how AND b.v = a.v
     WHERE a.how = 'd' AND a.at = 0 AND b.at > 0
       AND (a.name = b.name OR kgrag_private.names_alike(a.name, b.name))
$q$ USING kgrag.current_tenant();
END
$fn$;
COMMENT ON FUNCTION kgrag_private.near_identifiers() IS
'Private. The pairs of the near_identifiers items of kgrag.review_queue, for the current tenant''s shared graph: (a, b, their names), a before b. Two entities of one type whose identifiers, in the form compared, have the same six digits or more, or differ in one character under the same name, or, under alike names (kgrag_private.names_alike), by one character added or dropped or two neighbours swapped. Each kind of slip is a join on keys of the names and on where the character is, so that a series of numbers under their own names costs no more than reading it.';

CREATE OR REPLACE VIEW kgrag.review_queue WITH (security_invoker = true) AS
-- (every join and grouping carries tenant_id: on Citus, tables distributed by it join on each shard)
WITH relations AS (
    SELECT r.tenant_id, r.src, r.rel, r.dst, max(r.confidence) FILTER (WHERE NOT r.negated) AS confidence,
           bool_or(r.negated) AS negated, min(r.chunk_id COLLATE "C") AS chunk_id,
           (array_agg(r.quote ORDER BY r.confidence DESC, r.chunk_id COLLATE "C"))[1] AS quote
      FROM kgrag.relation_evidence AS r
     GROUP BY r.tenant_id, r.src, r.rel, r.dst
), items AS (
    SELECT x.tenant_id, CASE WHEN x.negated AND x.confidence IS NULL THEN 'negated'
                WHEN x.negated THEN 'negated_and_stated'
                WHEN x.confidence < (kgrag.setting('review_min_confidence') #>> '{}')::float8 THEN 'low_confidence'
                ELSE 'sample' END AS item,
           kgrag_private.relation_target(x.src, x.rel, x.dst) AS target,
           format('%s -[%s]-> %s', s.name, x.rel, d.name) AS what,
           x.confidence, x.chunk_id, x.quote
      FROM relations AS x
      JOIN kgrag.entity AS s ON s.tenant_id = x.tenant_id AND s.entity_id = x.src
      JOIN kgrag.entity AS d ON d.tenant_id = x.tenant_id AND d.entity_id = x.dst
     WHERE x.negated
        OR x.confidence < (kgrag.setting('review_min_confidence') #>> '{}')::float8
        OR ('x' || left(md5(kgrag_private.relation_target(x.src, x.rel, x.dst)), 8))::bit(32)::integer & 1023
           < 1024 * (kgrag.setting('review_sample_percent') #>> '{}')::float8 / 100
    UNION ALL
    -- one name, several entities: which one a question means is a guess
    SELECT a.tenant_id, 'ambiguous_name', 'name:' || a.alias_fold,
           format('"%s" names %s', a.alias_fold, string_agg(DISTINCT e.name, ', ')), NULL, NULL, NULL
      FROM kgrag.alias AS a
      JOIN kgrag.entity AS e ON e.tenant_id = a.tenant_id AND e.entity_id = a.entity_id
     -- (the shared graph's names: a decision names its target to every curator)
     WHERE a.alias_fold <> '' AND strpos(a.entity_id, '~') = 0
     GROUP BY a.tenant_id, a.alias_fold
    HAVING count(DISTINCT kgrag_private.namesake_key(a.entity_id)) > 1  -- namesakes of one name: the next item
    UNION ALL
    -- one name, several people kept apart (nothing joined them): one person or several is a guess
    SELECT x.tenant_id, 'namesakes', 'namesake:' || x.name_key,
           left(format('"%s" is %s entities kept apart: %s. If two are one: kgrag.merge_entities(a, b)',
                       min(x.name), count(*), string_agg(format('%s (documents %s)', x.entity_id, x.docs), '; '
                                                         ORDER BY x.entity_id COLLATE "C")), 2000),
           NULL, NULL, NULL
      FROM (SELECT s.tenant_id, s.name_key, s.entity_id, min(s.name) AS name,
                   string_agg(s.doc_id, ', ' ORDER BY s.doc_id COLLATE "C") AS docs
              FROM kgrag.entity_source AS s
             WHERE s.name_key IS NOT NULL
               -- what a curator split off is decided, not a guess (kgrag.split_entity)
               AND NOT EXISTS (SELECT 1 FROM kgrag.curation AS c
                                WHERE c.tenant_id = s.tenant_id AND c.kind = 'split_entity'
                                  AND c.target = 'namesake:' || s.name_key || '@' || s.doc_id)
             GROUP BY s.tenant_id, s.name_key, s.entity_id) AS x
     GROUP BY x.tenant_id, x.name_key
    HAVING count(*) > 1
    UNION ALL
    -- two identifiers of one type a slip apart (a character left out, added, swapped or mistyped, or
    -- the same digits with other letters): one entity written two ways, or two, is a guess
    SELECT kgrag.current_tenant(), 'near_identifiers', 'identifiers:' || n.a || '+' || n.b,
           left(format('%s (%s) and %s (%s) have identifiers a slip apart. If they are one: correct the document, or compare the type''s identifiers by their digits (setting identifier_kinds)',
                       n.a_name, n.a, n.b_name, n.b), 2000), NULL, NULL, NULL
      FROM kgrag_private.near_identifiers() AS n
    UNION ALL
    -- an answer changed since a person last saw it: a document changed, or another became its source
    SELECT e.tenant_id, 'answer_changed', kgrag_private.answer_target(e.entity_id, e.answer_before, e.answer),
           left(format('%s: the answer was "%s", it is now "%s"', e.name, e.answer_before, e.answer), 2000), NULL,
           e.answer_chunk_id, e.answer
      FROM kgrag.entity AS e
     WHERE e.answer_before IS NOT NULL AND e.answer IS NOT NULL AND e.answer <> e.answer_before
    UNION ALL
    -- what an extractor found and did not take: a type outside the ontology (kgrag.set_aside)
    SELECT s.tenant_id, 'outside_ontology', 'set_aside:' || md5(s.chunk_id || '|' || s.what), s.what || ': ' || s.reason, NULL,
           s.chunk_id, NULLIF(s.quote, '')
      FROM kgrag.set_aside AS s
)
SELECT i.item, i.target, i.what, i.confidence, i.chunk_id, i.quote
  FROM items AS i
 -- no decision on it yet (uncorrelated: on Citus the decisions are read once, then compared)
 WHERE i.target NOT IN (SELECT c.target FROM kgrag.curation AS c WHERE c.target IS NOT NULL)
   AND strpos(i.target, '~') = 0  -- (no decision is taken on an audience's graph: kgrag_private.decide)
 ORDER BY (i.item = 'sample'), i.item, i.target COLLATE "C";
COMMENT ON VIEW kgrag.review_queue IS
'What a person should check in the current tenant''s graph, no decision taken on it yet: (item, target, what, confidence, chunk_id, quote). Items: negated (a relation stated only as negated), negated_and_stated (stated and denied), low_confidence (best evidence below the setting review_min_confidence), sample (review_sample_percent of the other stated relations, chosen by their key: the same sample every time), ambiguous_name (a name or alias of entities of several names), namesakes (one name of a namesake type, several entities kept apart because nothing joined them), near_identifiers (two entities of one type whose identifiers, in the form compared, have the same six digits or more, or differ in one character under the same name, or, under alike names, kgrag_private.names_alike, by one character added or dropped or two neighbours swapped: "identifiers:a+b"), outside_ontology (a relation or entity an extractor found and did not take, its type outside the ontology: kgrag.set_aside), answer_changed (an entity''s answer, since a person last saw it: before and after; approving it makes the new one the answer seen). Nothing of the graph of an audience is queued (no decision is taken on it). Decide with kgrag.reject_relation(src, rel, dst), kgrag.correct_relation(src, rel, dst, new_rel), kgrag.correct_evidence(src, rel, dst, chunk_id, quote), kgrag.rename_entity(entity, name), kgrag.merge_entities(a, b), kgrag.split_entity(entity, doc_id) or kgrag.approve(target); an item with a decision leaves the queue.';
GRANT SELECT ON kgrag.review_queue TO kgrag_reader, kgrag_writer, kgrag_curator;

CREATE OR REPLACE FUNCTION kgrag_private.relation_documents(src text, rel text, dst text) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN ARRAY(SELECT DISTINCT c.doc_id FROM kgrag.relation_evidence AS r
                   JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = r.chunk_id
                  WHERE r.tenant_id = t AND r.src = relation_documents.src AND r.rel = relation_documents.rel
                    AND r.dst = relation_documents.dst
                  ORDER BY 1 LIMIT 2);
END
$$;
COMMENT ON FUNCTION kgrag_private.relation_documents(text, text, text) IS
'Private. Returns the documents whose chunks state a relation (entity ids and the relation key), at most two: none (nobody states it), one (a decision about it is about that document, forgotten with it) or several.';

CREATE OR REPLACE FUNCTION kgrag_private.check_writing(tenant text) RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Inside a SECURITY DEFINER function current_user is its owner, so kgrag.current_tenant()'s
    -- "a reader key may not write" asks the owner, not the caller. The transaction's authority is
    -- how its tenant was named: by the session's own grant (no key: what it may write is the
    -- function's EXECUTE grant), or by a key (kgrag.use_key, whose role kgrag.current_tenant()
    -- checked with the seal), which must be a writer's.
    IF COALESCE(pg_catalog.current_setting('kgrag.key_seal', true), '') = ''
       OR pg_catalog.current_setting('kgrag.key_role', true) = 'writer' THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'a reader''s API key may not write tenant %', pg_catalog.quote_literal(tenant) USING ERRCODE = '42501';
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.check_writing(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.check_writing(text) TO kgrag_logger;  -- (kgrag.purge)
COMMENT ON FUNCTION kgrag_private.check_writing(text) IS
'Private. Returns nothing when the transaction may write tenant (the current one, checked first by the caller): its tenant was named without an API key (what the session may write is then the function''s EXECUTE grant), or with a writer''s key; raises 42501 when it was named with a reader''s key. The SECURITY DEFINER functions that write (the curation functions, kgrag.delete_documents, kgrag.purge) call it first: inside them current_user is their owner, whom kgrag.current_tenant() would ask instead of the caller.';

CREATE OR REPLACE FUNCTION kgrag_private.refuse_audience_target(target text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- a decision is read by every curator of the tenant: none names what only an audience's
    -- documents say (an id of an audience's graph is marked '~': kgrag_private.id_access)
    IF strpos(target, '~') > 0 THEN
        RAISE EXCEPTION 'decisions about the graph of an audience (%) are not taken yet', target
            USING ERRCODE = '0A000',
                  HINT = 'Its documents can be corrected at the source and ingested again; see docs/audiences.md.';
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.refuse_audience_target(text) IS
'Private. Raises 0A000 for a decision''s target in the graph of an audience (an id marked ''~'', kgrag_private.id_access), whether it exists or not: every curator reads kgrag.curation. kgrag_private.decide and kgrag.approve call it first.';

CREATE OR REPLACE FUNCTION kgrag_private.decide(kind text, target text, value text, doc_id text, note text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF length(COALESCE(note, '')) > 2000 THEN
        RAISE EXCEPTION 'a note is at most 2,000 characters, got %', length(note) USING ERRCODE = '22023';
    END IF;
    PERFORM kgrag_private.refuse_audience_target(target);
    -- who (the login role, which the database authenticated) and when (its clock): never the caller's
    -- to say; only the curation functions, SECURITY DEFINER, reach this insert
    INSERT INTO kgrag.curation (tenant_id, kind, target, value, doc_id, note, decided_by, decided_at)
    VALUES (kgrag.current_tenant(), kind, target, value, doc_id, COALESCE(note, ''), session_user, clock_timestamp());
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.decide(text, text, text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION kgrag_private.decide(text, text, text, text, text) IS
'Private. Records one decision of the current tenant in kgrag.curation (who: the login role, session_user; when: the database''s clock); a note is at most 2,000 characters (22023); a decision about the graph of an audience (a target with an id marked ''~'') is refused (0A000): every curator reads decisions. Only the curation functions (kgrag.reject_relation and the others, SECURITY DEFINER, owned by the schema owner) call it: no tenant role may write kgrag.curation.';

CREATE OR REPLACE FUNCTION kgrag_private.decide_relation(kind text, src text, rel text, dst text, value text, note text)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    a text := (kgrag.resolve_entities(ARRAY[src]))[1];
    b text := (kgrag.resolve_entities(ARRAY[dst]))[1];
    key text := kgrag.relation_key(rel);
    docs text[];
BEGIN
    docs := kgrag_private.relation_documents(a, key, b);
    IF cardinality(docs) = 0 THEN
        RAISE EXCEPTION 'no relation % -[%]-> % is stated', src, rel, dst
            USING ERRCODE = '22023', HINT = 'SELECT * FROM kgrag.edges WHERE src_name ILIKE ... lists the relations.';
    END IF;
    -- about one document: forgotten with it; about several: it stands until withdrawn
    PERFORM kgrag_private.decide(kind, kgrag_private.relation_target(a, key, b), value,
                                 CASE WHEN cardinality(docs) = 1 THEN docs[1] END, note);
    RETURN format('%s -[%s]-> %s', a, key, b);
END
$$;
COMMENT ON FUNCTION kgrag_private.decide_relation(text, text, text, text, text, text) IS
'Private. Records a decision of a kind about a stated relation (src and dst by id, name or alias; rel whatever its case; value as the kind needs), about its document when one states it; returns the relation as "a -[REL]-> b". 22023 for a relation nobody stated.';

CREATE OR REPLACE FUNCTION kgrag.reject_relation(src text, rel text, dst text, note text DEFAULT '')
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
BEGIN
    PERFORM kgrag_private.check_writing(kgrag.current_tenant());  -- (a reader's API key may not decide)
    RETURN format('rejected %s: pgkgrag build (or the next ingestion of its documents) removes it, and it does not come back',
                  kgrag_private.decide_relation('reject_relation', src, rel, dst, NULL, note));
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.reject_relation(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.reject_relation(text, text, text, text) TO kgrag_curator, kgrag_writer;
COMMENT ON FUNCTION kgrag.reject_relation(text, text, text, text) IS
'Records that a stated relation is wrong (src and dst by id, name or alias; rel whatever its case), with an optional note; returns what happens next. The build (kgrag_private.apply_decisions) removes the edge and no ingestion builds it again from its evidence, until a later decision on it (kgrag.approve) takes this one back. A decision about a relation stated in one document is forgotten with that document. 22023 for a relation nobody stated. SECURITY DEFINER, owned by the schema owner, on the allow-list: decisions are written through the curation functions only (no tenant role writes kgrag.curation), with who (the login role) and when (the database''s clock); for kgrag_curator and kgrag_writer.';

CREATE OR REPLACE FUNCTION kgrag.correct_relation(src text, rel text, dst text, new_rel text, note text DEFAULT '')
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    key text := kgrag.relation_key(rel);
    new_key text := kgrag.relation_key(COALESCE(new_rel, ''));
    longest integer := kgrag.setting('max_alias_chars')::integer;
BEGIN
    PERFORM kgrag_private.check_writing(kgrag.current_tenant());  -- (a reader's API key may not decide)
    IF new_key IN ('', 'CO_OCCURS') OR new_key = key OR length(new_key) > longest THEN
        RAISE EXCEPTION 'the corrected relation is another type of 1 to % characters, not % (and not CO_OCCURS), got %',
            longest, quote_literal(key), quote_literal(COALESCE(new_rel, 'NULL')) USING ERRCODE = '22023';
    END IF;
    RETURN format('corrected %s to -[%s]->: pgkgrag build (or the next ingestion of its documents) builds it so, from the same evidence',
                  kgrag_private.decide_relation('correct_relation', src, rel, dst, new_key, note), new_key);
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.correct_relation(text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.correct_relation(text, text, text, text, text) TO kgrag_curator, kgrag_writer;
COMMENT ON FUNCTION kgrag.correct_relation(text, text, text, text, text) IS
'Records that a stated relation (src and dst by id, name or alias; rel whatever its case) is of another type (new_rel: "WORKS_AT" where the extractor said "MANAGES"), with an optional note; returns what happens next. The build (kgrag_private.apply_decisions) and every ingestion after it build the relation decided from the stated one''s evidence (its quotes, confidence and dates) and not the stated one, until a later decision on it (kgrag.approve, kgrag.reject_relation) replaces this one. A decision about a relation stated in one document is forgotten with that document. 22023 for a relation nobody stated, or a new type that is empty, the same, CO_OCCURS or longer than max_alias_chars. SECURITY DEFINER, owned by the schema owner, on the allow-list: decisions are written through the curation functions only (no tenant role writes kgrag.curation), with who (the login role) and when (the database''s clock); for kgrag_curator and kgrag_writer.';

CREATE OR REPLACE FUNCTION kgrag.correct_evidence(src text, rel text, dst text, chunk_id text, quote text,
                                                  note text DEFAULT '')
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    a text := (kgrag.resolve_entities(ARRAY[src]))[1];
    b text := (kgrag.resolve_entities(ARRAY[dst]))[1];
    key text := kgrag.relation_key(rel);
    doc text;
BEGIN
    PERFORM kgrag_private.check_writing(kgrag.current_tenant());  -- (a reader's API key may not decide)
    IF NOT EXISTS (SELECT 1 FROM kgrag.edge AS g
                    WHERE g.tenant_id = t AND g.src = a AND g.rel = key AND g.dst = b AND key <> 'CO_OCCURS') THEN
        RAISE EXCEPTION 'no relation % -[%]-> % is in the graph', src, rel, dst
            USING ERRCODE = '22023', HINT = 'SELECT * FROM kgrag.edges WHERE src_name ILIKE ... lists the relations.';
    END IF;
    IF quote IS NULL OR btrim(quote) = '' OR length(quote) > 500 THEN
        RAISE EXCEPTION 'a quote has 1 to 500 characters, got %', COALESCE(length(quote)::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    SELECT c.doc_id INTO doc FROM kgrag.chunk AS c
     WHERE c.tenant_id = t AND c.chunk_id = correct_evidence.chunk_id AND strpos(c.text, quote) > 0
       AND c.access IS NULL;  -- the graph is shared: evidence from a document for everyone only
    IF doc IS NULL THEN
        RAISE EXCEPTION 'chunk % does not say %', quote_literal(COALESCE(chunk_id, 'NULL')), quote_literal(left(quote, 80))
            USING ERRCODE = '22023', HINT = 'The quote is a passage of the chunk''s text, as it stands (kgrag.chunk.text).';
    END IF;
    -- about the chunk's document: forgotten with it
    PERFORM kgrag_private.decide('correct_evidence', kgrag_private.relation_target(a, key, b),
                                 jsonb_build_object('chunk_id', chunk_id, 'quote', quote)::text, doc, note);
    RETURN format('%s -[%s]-> %s shows %s, %s, from the next pgkgrag build on (and as long as the chunk says it)',
                  a, key, b, chunk_id, quote_literal(left(quote, 80)));
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.correct_evidence(text, text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.correct_evidence(text, text, text, text, text, text) TO kgrag_curator, kgrag_writer;
COMMENT ON FUNCTION kgrag.correct_evidence(text, text, text, text, text, text) IS
'Records the evidence a relation of the graph should show (src and dst by id, name or alias; rel whatever its case): a chunk and a quote of 1 to 500 characters that its text holds as it stands, with an optional note; returns what happens next. The build (kgrag_private.apply_decisions) and every refresh of the relation after it show that chunk and quote instead of the most confident evidence, as long as the chunk holds the quote; its weight, confidence and dates stay those of its evidence. Forgotten with the chunk''s document. 22023 for a relation the graph does not hold (or CO_OCCURS), or a chunk that does not say the quote (or is of a document for an audience: the graph shows evidence from documents for everyone only). SECURITY DEFINER, owned by the schema owner, on the allow-list: decisions are written through the curation functions only (no tenant role writes kgrag.curation), with who (the login role) and when (the database''s clock); for kgrag_curator and kgrag_writer.';

CREATE OR REPLACE FUNCTION kgrag.rename_entity(entity text, new_name text, note text DEFAULT '')
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    id text := (kgrag.resolve_entities(ARRAY[entity]))[1];
    longest integer := kgrag.setting('max_alias_chars')::integer;
BEGIN
    PERFORM kgrag_private.check_writing(kgrag.current_tenant());  -- (a reader's API key may not decide)
    IF new_name IS NULL OR btrim(new_name) = '' OR length(new_name) > longest THEN
        RAISE EXCEPTION 'a name has 1 to % characters (setting max_alias_chars), got %', longest,
            COALESCE(length(new_name)::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    PERFORM kgrag_private.decide('rename_entity', id, btrim(new_name), NULL, note);
    RETURN format('%s is named %s from the next pgkgrag build on, whatever its documents call it', id,
                  quote_literal(btrim(new_name)));
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.rename_entity(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.rename_entity(text, text, text) TO kgrag_curator, kgrag_writer;
COMMENT ON FUNCTION kgrag.rename_entity(text, text, text) IS
'Records the name an entity (by id, name or alias) should have, with an optional note; returns what happens next. The build gives it that name and no ingestion takes it back (kgrag_private.derive_entities); its id stays. 22023 for an empty name or one longer than max_alias_chars. SECURITY DEFINER, owned by the schema owner, on the allow-list: decisions are written through the curation functions only (no tenant role writes kgrag.curation), with who (the login role) and when (the database''s clock); for kgrag_curator and kgrag_writer.';

CREATE OR REPLACE FUNCTION kgrag_private.namesake_documents(entity_id text) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN ARRAY(SELECT s.doc_id FROM kgrag.entity_source AS s
                  WHERE s.tenant_id = t AND s.entity_id = namesake_documents.entity_id AND s.name_key IS NOT NULL
                  ORDER BY s.doc_id COLLATE "C");
END
$$;
COMMENT ON FUNCTION kgrag_private.namesake_documents(text) IS
'Private. Returns the documents (in byte order) whose namesakes an entity is (kgrag.entity_source rows with a name key): none for an entity that is not a namesake.';

CREATE OR REPLACE FUNCTION kgrag.merge_entities(a text, b text, note text DEFAULT '')
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    ids text[] := kgrag.resolve_entities(ARRAY[a, b]);
    docs_a text[];
    docs_b text[];
    key text;
    held text;
BEGIN
    PERFORM kgrag_private.check_writing(kgrag.current_tenant());  -- (a reader's API key may not decide)
    IF cardinality(ids) < 2 THEN  -- (resolve_entities gives each entity once)
        RAISE EXCEPTION '% and % are one entity already (%)', a, b, ids[1] USING ERRCODE = '22023';
    END IF;
    docs_a := kgrag_private.namesake_documents(ids[1]);
    docs_b := kgrag_private.namesake_documents(ids[2]);
    key := kgrag_private.namesake_key(ids[1]);
    IF cardinality(docs_a) = 0 OR cardinality(docs_b) = 0 OR key <> kgrag_private.namesake_key(ids[2]) THEN
        RAISE EXCEPTION '% and % are not namesakes kept apart: only entities of one name (the ids of a namesakes item of kgrag.review_queue) are merged', ids[1], ids[2]
            USING ERRCODE = '22023', HINT = 'To give an entity another name: kgrag.rename_entity(entity, name).';
    END IF;
    -- a's first document to each of b's (a JSON array, at most 20 of them and 1,000 characters):
    -- forgotten when a's first document goes
    held := to_jsonb(docs_b[1:20])::text;
    IF length(held) > 1000 THEN
        held := to_jsonb(docs_b[1:1])::text;
    END IF;
    PERFORM kgrag_private.decide('merge_entities', format('namesake:%s@%s+%s', key, docs_a[1], docs_b[1]),
                                 held, docs_a[1], note);
    RETURN format('%s and %s are one entity from the next pgkgrag build on, whatever ingestion finds', ids[1], ids[2]);
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.merge_entities(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.merge_entities(text, text, text) TO kgrag_curator, kgrag_writer;
COMMENT ON FUNCTION kgrag.merge_entities(text, text, text) IS
'Records that two namesakes kept apart (entities of one name of a type of the setting namesake_types, by id) are one entity, with an optional note; returns what happens next. The build (kgrag_private.apply_decisions) and every ingestion after it resolve the name with this decision (kgrag_private.resolve_namesakes), until a later kgrag.split_entity of either takes it back; it links a''s first document to b''s documents of the time (up to 20), and is forgotten when a''s first document goes. 22023 for one entity, or for entities that are not namesakes of one name. SECURITY DEFINER, owned by the schema owner, on the allow-list: decisions are written through the curation functions only (no tenant role writes kgrag.curation), with who (the login role) and when (the database''s clock); for kgrag_curator and kgrag_writer.';

CREATE OR REPLACE FUNCTION kgrag.split_entity(entity text, doc_id text, note text DEFAULT '')
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    id text := (kgrag.resolve_entities(ARRAY[entity]))[1];
BEGIN
    PERFORM kgrag_private.check_writing(kgrag.current_tenant());  -- (a reader's API key may not decide)
    IF split_entity.doc_id IS NULL OR NOT (split_entity.doc_id = ANY (kgrag_private.namesake_documents(id))) THEN
        RAISE EXCEPTION 'document % gives no namesake of % (%)', quote_literal(split_entity.doc_id), entity, id
            USING ERRCODE = '22023',
                  HINT = 'SELECT doc_id FROM kgrag.entity_source WHERE entity_id = ... AND name_key IS NOT NULL lists them.';
    END IF;
    PERFORM kgrag_private.decide('split_entity', format('namesake:%s@%s', kgrag_private.namesake_key(id), split_entity.doc_id),
                                 NULL, split_entity.doc_id, note);
    RETURN format('what %s says of %s is its own entity from the next pgkgrag build on', split_entity.doc_id, id);
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.split_entity(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.split_entity(text, text, text) TO kgrag_curator, kgrag_writer;
COMMENT ON FUNCTION kgrag.split_entity(text, text, text) IS
'Records that what one document says under the name of a namesake entity (by id, name or alias) is another entity, with an optional note; returns what happens next. The build and every ingestion after it keep that document''s namesake on its own (no shared neighbour joins it; a later kgrag.merge_entities may). Forgotten with the document. 22023 for a document that gives the entity no namesake (types of the setting namesake_types, without an identifier). SECURITY DEFINER, owned by the schema owner, on the allow-list: decisions are written through the curation functions only (no tenant role writes kgrag.curation), with who (the login role) and when (the database''s clock); for kgrag_curator and kgrag_writer.';

CREATE OR REPLACE FUNCTION kgrag.approve(target text, note text DEFAULT '')
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    parts text[] := string_to_array(target, '|');
    docs text[];
BEGIN
    PERFORM kgrag_private.check_writing(kgrag.current_tenant());  -- (a reader's API key may not decide)
    IF target IS NULL OR length(target) > 2000 THEN
        RAISE EXCEPTION 'give the target of a review item (kgrag.review_queue.target)' USING ERRCODE = '22023';
    END IF;
    -- before anything is looked up (run as the schema owner, whom a superuser's bypass of the
    -- policies would let tell whether such a target exists)
    PERFORM kgrag_private.refuse_audience_target(target);
    IF cardinality(parts) = 3 THEN  -- a relation: checked as it stands, and about its document where it has one
        docs := kgrag_private.relation_documents(parts[1], parts[2], parts[3]);
        IF cardinality(docs) = 0 THEN
            RAISE EXCEPTION 'no relation % is stated', quote_literal(target) USING ERRCODE = '22023';
        END IF;
    ELSIF NOT ((target LIKE 'name:%' AND EXISTS (SELECT 1 FROM kgrag.alias AS a  -- (a name of the shared graph)
                                                  WHERE a.tenant_id = t AND a.alias_fold = substr(target, 6)
                                                    AND strpos(a.entity_id, '~') = 0))
               OR (target LIKE 'namesake:%' AND EXISTS (SELECT 1 FROM kgrag.entity_source AS s
                                                        WHERE s.tenant_id = t AND s.name_key = substr(target, 10)))
               OR (target LIKE 'set_aside:%' AND EXISTS (SELECT 1 FROM kgrag.set_aside AS s
                                                         WHERE s.tenant_id = t
                                                           AND 'set_aside:' || md5(s.chunk_id || '|' || s.what) = target))
               OR (target ~ '^identifiers:[^+]+:#[^+]+\+[^+]+:#[^+]+$'
                   AND split_part(substr(target, 13), ':#', 1) = split_part(split_part(target, '+', 2), ':#', 1)
                   AND (SELECT count(*) FROM kgrag.entity AS e
                         WHERE e.tenant_id = t
                           AND e.entity_id IN (split_part(substr(target, 13), '+', 1), split_part(target, '+', 2))) = 2)
               OR (target LIKE 'answer:%' AND EXISTS (
                       SELECT 1 FROM kgrag.entity AS e
                        WHERE e.tenant_id = t AND e.entity_id = substring(target FROM '^answer:(.*)@[0-9a-f]{8}$')
                          AND kgrag_private.answer_target(e.entity_id, e.answer_before, e.answer) = target))
               OR EXISTS (SELECT 1 FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.entity_id = target)) THEN
        RAISE EXCEPTION 'no review item or entity is %', quote_literal(target) USING ERRCODE = '22023';
    END IF;
    IF target LIKE 'set_aside:%' THEN  -- about the document of its chunk: forgotten with it
        docs := ARRAY(SELECT c.doc_id FROM kgrag.set_aside AS s
                        JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.chunk_id = s.chunk_id
                       WHERE s.tenant_id = t AND 'set_aside:' || md5(s.chunk_id || '|' || s.what) = target LIMIT 1);
    END IF;
    IF target LIKE 'identifiers:%' THEN  -- about the first document of the first: forgotten with it
        docs := ARRAY(SELECT min(s.doc_id COLLATE "C") FROM kgrag.entity_source AS s
                       WHERE s.tenant_id = t AND s.entity_id = split_part(substr(target, 13), '+', 1));
    END IF;
    IF target LIKE 'answer:%' THEN  -- about the document of the answer before: forgotten with it
        docs := ARRAY(SELECT e.answer_before_doc FROM kgrag.entity AS e
                       WHERE e.tenant_id = t AND e.entity_id = substring(target FROM '^answer:(.*)@[0-9a-f]{8}$'));
    END IF;
    PERFORM kgrag_private.decide('approve', target, NULL, CASE WHEN cardinality(docs) = 1 THEN docs[1] END, note);
    RETURN format('approved %s', target);
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.approve(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.approve(text, text) TO kgrag_curator, kgrag_writer;
COMMENT ON FUNCTION kgrag.approve(text, text) IS
'Records that a review item (kgrag.review_queue.target: a relation "src|REL|dst", an ambiguous name "name:...", namesakes kept apart "namesake:...", identifiers a slip apart "identifiers:a+b", something set aside "set_aside:...", a changed answer "answer:...", an entity id) was checked and is right, with an optional note: it leaves the queue (a changed answer is the answer seen from the next build on); on a relation rejected before, it takes the rejection back (the next build or ingestion restores the edge from its evidence). 22023 for a target that names nothing; 0A000 for a target in the graph of an audience (an id marked ''~''), refused before anything is looked up. SECURITY DEFINER, owned by the schema owner, on the allow-list: decisions are written through the curation functions only (no tenant role writes kgrag.curation), with who (the login role) and when (the database''s clock); for kgrag_curator and kgrag_writer.';

CREATE OR REPLACE FUNCTION kgrag_private.rejected(t text, src text, rel text, dst text) RETURNS boolean
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- the latest decision on the relation rejects or corrects it (the tenant a bound value: on
    -- Citus the query runs where the tenant's shards are)
    SELECT COALESCE((SELECT c.kind IN ('reject_relation', 'correct_relation') FROM kgrag.curation AS c
                      WHERE c.tenant_id = t
                        AND c.target = kgrag_private.relation_target(src, rel, dst)
                        AND c.kind IN ('reject_relation', 'approve', 'correct_relation')
                      ORDER BY c.decided_at DESC LIMIT 1), false)
$$;
COMMENT ON FUNCTION kgrag_private.rejected(text, text, text, text) IS
'Private. Returns whether, for tenant t (the current one), the latest decision on a stated relation (kgrag.reject_relation, kgrag.correct_relation or kgrag.approve) rejects or corrects it: the graph refresh then builds no edge of it from its evidence.';

CREATE OR REPLACE FUNCTION kgrag_private.corrections(t text) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT COALESCE(jsonb_object_agg(d.target, d.value), '{}')
      FROM (SELECT DISTINCT ON (c.target) c.target, c.kind, c.value FROM kgrag.curation AS c
             WHERE c.tenant_id = t AND c.kind IN ('reject_relation', 'approve', 'correct_relation')
               AND c.target LIKE '%|%|%'
             ORDER BY c.target, c.decided_at DESC) AS d
     WHERE d.kind = 'correct_relation'
$$;
COMMENT ON FUNCTION kgrag_private.corrections(text) IS
'Private. Returns the stated relations of tenant t (the current one) whose latest decision corrects them (kgrag.correct_relation), as {"src|OLD|dst": "NEW"}: the graph refresh builds each as the relation decided.';

CREATE OR REPLACE FUNCTION kgrag_private.effective_relation(t text, src text, rel text, dst text, fixes jsonb)
RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    r text := rel;
BEGIN
    -- corrections are followed (MANAGES -> WORKS_AT -> EMPLOYED_BY); a rejection anywhere on the
    -- way, or a cycle (ten steps), builds nothing
    FOR step IN 1..10 LOOP
        IF fixes ? kgrag_private.relation_target(src, r, dst) THEN
            r := fixes ->> kgrag_private.relation_target(src, r, dst);
        ELSIF kgrag_private.rejected(t, src, r, dst) THEN
            RETURN NULL;
        ELSE
            RETURN r;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION kgrag_private.effective_relation(text, text, text, text, jsonb) IS
'Private. Returns the relation a stated relation src -[rel]-> dst of tenant t is built as, after the people''s decisions (fixes: kgrag_private.corrections): rel itself, the type it was corrected to (corrections followed, at most ten), or NULL when it, or a type it was corrected to, is rejected (or the corrections make a cycle).';

CREATE OR REPLACE FUNCTION kgrag_private.relation_sources(t text, src text, rel text, dst text, fixes jsonb)
RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF fixes = '{}' THEN  -- no correction: the relation's own evidence, unless it is rejected
        RETURN CASE WHEN kgrag_private.rejected(t, relation_sources.src, relation_sources.rel, relation_sources.dst)
                    THEN '{}'::text[] ELSE ARRAY[relation_sources.rel] END;
    END IF;
    RETURN ARRAY(SELECT x.rel FROM (SELECT DISTINCT r.rel FROM kgrag.relation_evidence AS r
                                     WHERE r.tenant_id = t AND r.src = relation_sources.src
                                       AND r.dst = relation_sources.dst) AS x
                  WHERE kgrag_private.effective_relation(t, relation_sources.src, x.rel, relation_sources.dst, fixes)
                        = relation_sources.rel
                  ORDER BY 1);
END
$$;
COMMENT ON FUNCTION kgrag_private.relation_sources(text, text, text, text, jsonb) IS
'Private. Returns the relation keys whose evidence builds the edge src -[rel]-> dst of tenant t: each relation stated between the two entities whose effective relation (kgrag_private.effective_relation, fixes: kgrag_private.corrections) is rel.';

CREATE OR REPLACE FUNCTION kgrag_private.pair_relations(t text, src text, dst text, fixes jsonb) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- every typed relation of the pair that a decision can make or unmake: the edges there are,
    -- the relations stated, the types they are corrected to
    RETURN ARRAY(SELECT g.rel FROM kgrag.edge AS g
                  WHERE g.tenant_id = t AND g.src = pair_relations.src AND g.dst = pair_relations.dst
                    AND g.rel <> 'CO_OCCURS'
                  UNION
                 SELECT r.rel FROM kgrag.relation_evidence AS r
                  WHERE r.tenant_id = t AND r.src = pair_relations.src AND r.dst = pair_relations.dst
                  UNION
                 SELECT f.value FROM jsonb_each_text(fixes) AS f
                  WHERE split_part(f.key, '|', 1) = pair_relations.src AND split_part(f.key, '|', 3) = pair_relations.dst
                  ORDER BY 1);
END
$$;
COMMENT ON FUNCTION kgrag_private.pair_relations(text, text, text, jsonb) IS
'Private. Returns the typed relations between src and dst (tenant t) whose edge a decision can make or unmake: the edges there are, the relations stated, and the types corrections (fixes) turn them into. The graph refresh recomputes them all when one of them is touched and the pair has a correction, and the build when a decision about the pair changes what it should hold.';

CREATE OR REPLACE FUNCTION kgrag_private.pair_differs(t text, src text, dst text, fixes jsonb) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    want text[];
    have text[];
BEGIN
    -- the typed edges the decisions make of the pair's evidence (type and weight), against the edges there are
    want := ARRAY(SELECT x.e || ':' || count(*)
                    FROM (SELECT kgrag_private.effective_relation(t, pair_differs.src, r.rel, pair_differs.dst, fixes) AS e
                            FROM kgrag.relation_evidence AS r
                           WHERE r.tenant_id = t AND r.src = pair_differs.src AND r.dst = pair_differs.dst
                             AND NOT r.negated) AS x
                   WHERE x.e IS NOT NULL GROUP BY x.e ORDER BY 1);
    have := ARRAY(SELECT g.rel || ':' || g.weight::bigint FROM kgrag.edge AS g
                   WHERE g.tenant_id = t AND g.src = pair_differs.src AND g.dst = pair_differs.dst
                     AND g.rel <> 'CO_OCCURS'
                   ORDER BY 1);
    RETURN want IS DISTINCT FROM have;
END
$$;
COMMENT ON FUNCTION kgrag_private.pair_differs(text, text, text, jsonb) IS
'Private. Returns whether the typed edges between src and dst (tenant t) differ, in type or weight, from what the people''s decisions make of the pair''s stated relations (fixes: kgrag_private.corrections): the build then recomputes the pair.';

CREATE OR REPLACE FUNCTION kgrag_private.decided_evidence(t text, src text, rel text, dst text)
RETURNS TABLE (chunk_id text, quote text)
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- the latest evidence decision on the relation, while its chunk holds the quote (the tenant a
    -- bound value: on Citus the query runs where the tenant's shards are)
    SELECT v.chunk_id, v.quote
      FROM (SELECT c.value::jsonb ->> 'chunk_id' AS chunk_id, c.value::jsonb ->> 'quote' AS quote
              FROM kgrag.curation AS c
             WHERE c.tenant_id = t AND c.kind = 'correct_evidence'
               AND c.target = kgrag_private.relation_target(src, rel, dst)
             ORDER BY c.decided_at DESC LIMIT 1) AS v
     WHERE EXISTS (SELECT 1 FROM kgrag.chunk AS k
                    WHERE k.tenant_id = t AND k.chunk_id = v.chunk_id AND strpos(k.text, v.quote) > 0)
$$;
COMMENT ON FUNCTION kgrag_private.decided_evidence(text, text, text, text) IS
'Private. Returns the evidence a person chose for a relation of tenant t (the current one; kgrag.correct_evidence): (chunk_id, quote) of the latest decision, while the chunk holds the quote; no row otherwise.';

CREATE OR REPLACE FUNCTION kgrag_private.apply_decisions() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    renamed integer;
    relations integer;
    keys text[];
    moved integer;
    fixes jsonb;
    ends text[];  -- the entities of the relations decided anew
BEGIN
    -- namesakes merged or split first (their name keys are the first locks every writer of them
    -- takes): their names resolved again, what moves noted for the refresh (the keys are read
    -- first: a call whose argument reads a tenant's shard would run on its worker)
    PERFORM kgrag_private.touched_scratch();
    keys := ARRAY(SELECT DISTINCT substr(split_part(c.target, '@', 1), 10) FROM kgrag.curation AS c
                   WHERE c.tenant_id = t AND c.kind IN ('merge_entities', 'split_entity') ORDER BY 1);
    moved := kgrag_private.resolve_namesakes(keys, '{}');
    -- then the entities the other decisions name, as an ingestion batch locks them
    PERFORM kgrag_private.lock_keys('entity', ARRAY(
        SELECT x.id FROM kgrag.curation AS c
         CROSS JOIN LATERAL unnest(CASE WHEN c.kind = 'rename_entity' THEN ARRAY[c.target]
                                        ELSE ARRAY[split_part(c.target, '|', 1), split_part(c.target, '|', 3)] END) AS x(id)
         WHERE c.tenant_id = t AND (c.kind = 'rename_entity' OR c.target LIKE '%|%|%')));
    -- names decided, where the entity has another
    -- (kgrag.curation with the tenant bound, not the view: Citus routes each statement to one shard)
    UPDATE kgrag.entity AS e SET name = d.value, embedding = NULL, quantized = NULL, updated_at = now()
      FROM (SELECT DISTINCT ON (c.target) c.target, c.value FROM kgrag.curation AS c
             WHERE c.tenant_id = t AND c.kind = 'rename_entity' ORDER BY c.target, c.decided_at DESC) AS d
     WHERE e.tenant_id = t AND e.entity_id = d.target AND e.name IS DISTINCT FROM d.value;
    GET DIAGNOSTICS renamed = ROW_COUNT;
    -- the pairs a relation decision names whose edges differ from what the decisions make of
    -- their evidence (rejected and present, corrected, taken back): the graph refresh recomputes
    -- every typed relation of each
    fixes := kgrag_private.corrections(t);
    WITH pairs AS MATERIALIZED (
        SELECT DISTINCT split_part(c.target, '|', 1) AS src, split_part(c.target, '|', 3) AS dst
          FROM kgrag.curation AS c
         WHERE c.tenant_id = t AND c.kind IN ('reject_relation', 'approve', 'correct_relation')
           AND c.target LIKE '%|%|%'
    ), differing AS MATERIALIZED (
        SELECT p.* FROM pairs AS p WHERE kgrag_private.pair_differs(t, p.src, p.dst, fixes)
    ), noted AS (
        INSERT INTO pg_temp.kgrag_touched (a, b, rel, n)
        SELECT d.src, d.dst, r.rel, 0
          FROM differing AS d CROSS JOIN LATERAL unnest(kgrag_private.pair_relations(t, d.src, d.dst, fixes)) AS r(rel)
    )
    SELECT count(*), COALESCE(array_agg(d.src) || array_agg(d.dst), '{}') INTO relations, ends FROM differing AS d;
    -- an answer may quote what was rejected (or taken back): chosen again at this build
    UPDATE kgrag.entity AS e SET answer_stale = true
     WHERE e.tenant_id = t AND e.entity_id = ANY (ends) AND NOT e.answer_stale;
    -- the relations whose edge shows other evidence than the one a person chose (an ingestion
    -- refreshes them when the chunk's document changes: kgrag_private.touch_documents)
    WITH chosen AS MATERIALIZED (
        SELECT DISTINCT split_part(c.target, '|', 1) AS src, split_part(c.target, '|', 2) AS rel,
               split_part(c.target, '|', 3) AS dst
          FROM kgrag.curation AS c
         WHERE c.tenant_id = t AND c.kind = 'correct_evidence'
    ), differing AS MATERIALIZED (
        SELECT x.* FROM chosen AS x
          JOIN kgrag.edge AS g ON g.tenant_id = t AND g.src = x.src AND g.rel = x.rel AND g.dst = x.dst
          LEFT JOIN LATERAL kgrag_private.decided_evidence(t, x.src, x.rel, x.dst) AS v ON true
         WHERE v.chunk_id IS NOT NULL AND (g.evidence_chunk_id, g.evidence_quote) IS DISTINCT FROM (v.chunk_id, v.quote)
    ), noted AS (
        INSERT INTO pg_temp.kgrag_touched (a, b, rel, n) SELECT d.src, d.dst, d.rel, 0 FROM differing AS d
    )
    SELECT relations + count(*) INTO relations FROM differing;
    IF relations > 0 OR moved > 0 THEN
        PERFORM kgrag_private.refresh_graph();
    ELSE
        DROP TABLE pg_temp.kgrag_touched;
    END IF;
    RETURN jsonb_build_object('renamed', renamed, 'relations', relations, 'namesakes_moved', moved);
END
$$;
COMMENT ON FUNCTION kgrag_private.apply_decisions() IS
'Private. The first step of pgkgrag build: gives entities the names decided (kgrag.rename_entity) and recomputes, through the graph refresh, the typed relations of each pair a relation decision names whose edges differ from what the decisions make of its evidence (a rejected edge still there goes, a corrected one is built as the type decided, one taken back comes back from its evidence; the answers of their entities are chosen again: kgrag_private.refresh_answers passes over a sentence stating a rejected relation), recomputes the relations whose edge shows other evidence than the one a person chose (kgrag.correct_evidence), and resolves again the names of namesakes merged or split (kgrag_private.resolve_namesakes). Returns {"renamed": n, "relations": n (pairs recomputed), "namesakes_moved": n}.';

CREATE OR REPLACE FUNCTION kgrag_private.decision_family(kind text, target text) RETURNS text
LANGUAGE sql IMMUTABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- the decisions that take each other's place on a target: on a stated relation, a rejection,
    -- a correction and an approval (kgrag_private.rejected reads the latest of them); otherwise
    -- each kind its own (a rename and an approval of one entity both hold)
    SELECT CASE WHEN kind IN ('reject_relation', 'correct_relation') OR (kind = 'approve' AND target LIKE '%|%|%')
                THEN 'relation' ELSE kind END
$$;
COMMENT ON FUNCTION kgrag_private.decision_family(text, text) IS
'Private. Returns which decisions on a target replace each other (kgrag.decision_history): relation for a rejection, a correction and an approval of a stated relation, else the kind itself.';

CREATE OR REPLACE VIEW kgrag.decision_history WITH (security_invoker = true) AS
SELECT c.kind, c.target, c.value, c.doc_id, c.note, c.decided_by, c.decided_at,
       CASE WHEN n.decided_at IS NULL THEN 'in force' ELSE 'replaced' END AS state,
       n.decided_by AS ended_by, n.decided_at AS ended_at,
       CASE WHEN n.decided_at IS NOT NULL THEN format('replaced by %s of %s', n.kind, n.decided_by) END AS why
  FROM kgrag.curation AS c
  LEFT JOIN LATERAL (SELECT x.kind, x.decided_by, x.decided_at FROM kgrag.curation AS x
                      WHERE x.target = c.target AND x.decided_at > c.decided_at
                        AND kgrag_private.decision_family(x.kind, x.target) = kgrag_private.decision_family(c.kind, c.target)
                      ORDER BY x.decided_at LIMIT 1) AS n ON true
UNION ALL
SELECT e.kind, e.target, e.value, e.doc_id, e.note, e.decided_by, e.decided_at, 'forgotten', e.ended_by, e.ended_at, e.why
  FROM kgrag.curation_ended AS e;
COMMENT ON VIEW kgrag.decision_history IS
'Every decision of the current tenant, with how it stands: (kind, target, value, doc_id, note, decided_by, decided_at, state, ended_by, ended_at, why). state: in force (the latest on its target), replaced (a later decision of its family on the target took over: a rejection taken back by kgrag.approve, a correction corrected again, a name renamed again; ended_by and ended_at are that decision''s), forgotten (its document was deleted: kgrag.curation_ended, ended_by the role that deleted it). For an auditor: \copy (SELECT * FROM kgrag.decision_history ORDER BY decided_at) TO ''decisions.csv'' CSV HEADER.';
GRANT SELECT ON kgrag.decision_history TO kgrag_reader, kgrag_writer, kgrag_curator;

CREATE OR REPLACE FUNCTION kgrag_private.end_decisions(doc_ids text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes each query to one shard
    n integer;
BEGIN
    -- only the decisions about documents the tenant no longer holds, or holds for an audience (the
    -- shared graph has nothing of those: what was decided about them is that audience's to read)
    WITH gone AS (
        SELECT x.doc_id, d.access FROM unnest(doc_ids) AS x(doc_id)
          LEFT JOIN kgrag.document AS d ON d.tenant_id = t AND d.doc_id = x.doc_id
         WHERE d.doc_id IS NULL OR d.access IS NOT NULL
    ), ended AS (
        DELETE FROM kgrag.curation AS c WHERE c.tenant_id = t AND c.doc_id IN (SELECT g.doc_id FROM gone AS g)
        RETURNING c.*
    )
    INSERT INTO kgrag.curation_ended (tenant_id, kind, target, value, doc_id, note, decided_by, decided_at,
                                      ended_by, ended_at, why, access)
    SELECT e.tenant_id, e.kind, e.target, e.value, e.doc_id, e.note, e.decided_by, e.decided_at,
           session_user, clock_timestamp(),
           left(format(CASE WHEN g.access IS NULL THEN 'its document %s was deleted'
                            ELSE 'its document %s went into an audience' END, quote_literal(e.doc_id)), 2000),
           g.access
      FROM ended AS e JOIN gone AS g USING (doc_id)
        ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.end_decisions(text[]) FROM PUBLIC;
COMMENT ON FUNCTION kgrag_private.end_decisions(text[]) IS
'Private. Ends the current tenant''s decisions about documents it no longer holds, or holds for an audience, among doc_ids: each leaves kgrag.curation for kgrag.curation_ended with who ended it (the login role), when and why (its document was deleted, or went into an audience: then with that audience, kgrag.curation_ended.access, which only its holders read); a document still there for everyone keeps its decisions. Returns the decisions ended. For kgrag.delete_documents and kgrag.set_access (SECURITY DEFINER, owned by the schema owner) alone: no tenant role may call it, nor write kgrag.curation.';

CREATE OR REPLACE FUNCTION kgrag_private.end_entity_decisions(entity_ids text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes each query to one shard
    n integer;
BEGIN
    -- a name decided for one of these entities (those the documents going cited) that no
    -- document cites any more: it went with them
    WITH ended AS (
        DELETE FROM kgrag.curation AS c
         WHERE c.tenant_id = t AND c.kind = 'rename_entity' AND c.target = ANY (entity_ids)
           AND NOT EXISTS (SELECT 1 FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.entity_id = c.target)
        RETURNING c.*
    )
    INSERT INTO kgrag.curation_ended (tenant_id, kind, target, value, doc_id, note, decided_by, decided_at,
                                      ended_by, ended_at, why, access)
    SELECT e.tenant_id, e.kind, e.target, e.value, e.doc_id, e.note, e.decided_by, e.decided_at,
           session_user, clock_timestamp(), 'its entity went with the last document that cited it', NULL
      FROM ended AS e
        ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.end_entity_decisions(text[]) FROM PUBLIC;
COMMENT ON FUNCTION kgrag_private.end_entity_decisions(text[]) IS
'Private. Ends the current tenant''s name decisions (kgrag.rename_entity) about those of entity_ids (the entities the documents going cited) the graph no longer holds: the last document citing one was deleted (or went into an audience). Each leaves kgrag.curation for kgrag.curation_ended with who, when and why, as kgrag_private.end_decisions does. Returns the decisions ended. For kgrag.delete_documents and kgrag.set_access (SECURITY DEFINER, owned by the schema owner) alone, after the graph is refreshed.';

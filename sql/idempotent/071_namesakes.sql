-- Identity beyond the name. An entity given a verified identifier (an employee number, a tax id, a
-- URL) is keyed by it, whatever its name, in the form its kind compares (the digits of a number,
-- a code without case or separators, a URL's canonical form). An entity of a type of the setting namesake_types (Person
-- by default) given without one is never joined across documents on its name alone: the
-- documents that give one name (its name key) are resolved into entities by what they share
-- besides the name (a neighbour: another entity cited in the same chunks), and by the decisions of
-- the people who check the graph (kgrag.merge_entities, kgrag.split_entity). The resolution is a
-- function of the documents there are and the decisions, never of the order they came in.

CREATE OR REPLACE FUNCTION kgrag_private.identified_key(entity_type text, identifier text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    -- '#' never stands in a canonical name: an identifier's key meets no name's
    SELECT pg_catalog.replace(kgrag.canonical_name(entity_type), ' ', '_') || ':#' || kgrag.canonical_name(identifier)
$$;
COMMENT ON FUNCTION kgrag_private.identified_key(text, text) IS
'Private. Returns the id of an entity given a verified identifier, from its type and the form its identifier is compared in (kgrag_private.identifier_form): the canonical type, '':#'', the canonical form ("Person", "emp0042" -> "person:#emp0042"). Two documents giving one identifier, written alike or not, give one entity, whatever the names they give it.';

CREATE OR REPLACE FUNCTION kgrag_private.identifier_kinds() RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- (the types as the setting writes them, folded as entity ids fold them)
    SELECT COALESCE(jsonb_object_agg(pg_catalog.replace(kgrag.canonical_name(k.key), ' ', '_'), k.value), '{}')
      FROM jsonb_each_text(COALESCE(kgrag.setting('identifier_kinds'), '{}')) AS k
$$;
COMMENT ON FUNCTION kgrag_private.identifier_kinds() IS
'Private. Returns the setting identifier_kinds of the current tenant with its entity types folded as entity ids fold them ({"tax_id": "digits"}): how an identifier of each type is compared.';

CREATE OR REPLACE FUNCTION kgrag_private.identifier_kind(entity_type text, identifier text, kinds jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(kinds ->> pg_catalog.replace(kgrag.canonical_name(entity_type), ' ', '_'),
                    CASE WHEN identifier ~* '^\s*([a-z][a-z0-9+.-]*://|www\.)[^\s]' THEN 'url' ELSE 'code' END)
$$;
COMMENT ON FUNCTION kgrag_private.identifier_kind(text, text, jsonb) IS
'Private. Returns how an identifier of this entity type is compared: the kind kinds (kgrag_private.identifier_kinds()) gives its type, else url for one written as a URL (a scheme and "://", or "www."), else code.';

CREATE OR REPLACE FUNCTION kgrag_private.identifier_form(kind text, identifier text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    code text := pg_catalog.replace(kgrag.canonical_name(identifier), ' ', '');
    form text;
BEGIN
    IF kind = 'digits' THEN  -- a tax id, a phone number: its digits, whatever separates them
        form := pg_catalog.regexp_replace(identifier, '[^0-9]', '', 'g');
    ELSIF kind = 'url' THEN
        -- no scheme, user, "www.", default port, fragment or trailing slash; then its words, without
        -- a scheme or "www" left by a form that kept only the words (an id stored before this rule)
        form := pg_catalog.lower(pg_catalog.btrim(identifier));
        form := pg_catalog.regexp_replace(form, '#.*$', '');
        IF form ~ '^[a-z][a-z0-9+.-]*://' THEN  -- (a user before the host only after a scheme: not an address)
            form := pg_catalog.regexp_replace(pg_catalog.regexp_replace(form, '^[a-z][a-z0-9+.-]*://', ''), '^[^/@]*@', '');
        END IF;
        form := pg_catalog.regexp_replace(form, '^www\.', '');
        form := pg_catalog.regexp_replace(form, '^([^/:?]+):(80|443)(/|\?|$)', '\1\3');
        form := pg_catalog.regexp_replace(form, '/+(\?|$)', '\1');
        form := pg_catalog.regexp_replace(kgrag.canonical_name(form), '^(https? )?(www )?', '');
    ELSE  -- a code: case and separators are no part of it ("EMP-0042", "emp 0042")
        form := code;
    END IF;
    RETURN COALESCE(NULLIF(form, ''), code);
END
$$;
COMMENT ON FUNCTION kgrag_private.identifier_form(text, text) IS
'Private. Returns the form in which identifiers of a kind are compared: digits, the digits alone ("123.456.789-00" -> "12345678900"); url, the URL without scheme, user, "www.", default port, fragment or trailing slash, in canonical words ("https://www.Example.com:443/About/#team" -> "example com about"); code (any other kind), the canonical form without spaces ("CPF 123.456.789-00", "cpf 12345678900" -> "cpf12345678900"). A form that would be empty is the code''s.';

CREATE OR REPLACE FUNCTION kgrag_private.rekey_identifiers(most integer) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    kinds jsonb := kgrag_private.identifier_kinds();
    stale text[];
    docs text[];
    counts jsonb;
BEGIN
    IF most IS NULL OR most NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'apply 1 to 100,000 documents again a call, got %', COALESCE(most::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    -- the documents (that the caller sees) giving an identified entity whose id is not the one the
    -- rule gives today: stored before it, or before the setting identifier_kinds changed
    stale := ARRAY(
        SELECT d.doc_id FROM kgrag.document AS d
         WHERE d.tenant_id = t
           AND d.doc_id IN (SELECT s.doc_id FROM kgrag.entity_source AS s
                             WHERE s.tenant_id = t AND strpos(s.entity_id, ':#') > 0)
           AND EXISTS (
               SELECT s.entity_id FROM kgrag.entity_source AS s
                WHERE s.tenant_id = t AND s.doc_id = d.doc_id AND strpos(s.entity_id, ':#') > 0
               EXCEPT
               SELECT kgrag_private.identified_key(x.type, kgrag_private.identifier_form(
                          kgrag_private.identifier_kind(x.type, x.identifier, kinds), x.identifier))
                      || COALESCE('~' || kgrag_private.audience_key(d.access), '')
                 FROM jsonb_to_recordset(d.extraction -> 'entities') AS x(type text, identifier text)
                WHERE kgrag.canonical_name(x.identifier) <> '')
         ORDER BY d.doc_id COLLATE "C");
    IF cardinality(stale) = 0 THEN
        RETURN jsonb_build_object('documents', 0, 'left', 0, 'unkept', '[]'::jsonb);
    END IF;
    -- those stored before revision 0042 keep no extraction to apply again: named, left as they are
    docs := ARRAY(SELECT d.doc_id FROM kgrag.document AS d
                   WHERE d.tenant_id = t AND d.doc_id = ANY (stale) AND d.extraction IS NOT NULL
                   ORDER BY d.doc_id COLLATE "C" LIMIT most);
    counts := jsonb_build_object(
        'unkept', COALESCE((SELECT jsonb_agg(d.doc_id ORDER BY d.doc_id COLLATE "C")
                              FROM (SELECT x.doc_id FROM kgrag.document AS x
                                     WHERE x.tenant_id = t AND x.doc_id = ANY (stale) AND x.extraction IS NULL
                                     ORDER BY x.doc_id COLLATE "C" LIMIT 20) AS d), '[]'),
        'left', (SELECT count(*) FROM kgrag.document AS d
                  WHERE d.tenant_id = t AND d.doc_id = ANY (stale) AND d.extraction IS NOT NULL) - cardinality(docs),
        'documents', cardinality(docs));
    IF cardinality(docs) = 0 THEN
        RETURN counts;
    END IF;
    PERFORM kgrag_private.stage_begin();
    IF EXISTS (SELECT 1 FROM pg_temp.kgrag_stage_document) THEN
        RAISE EXCEPTION 'an ingestion batch is staged in this transaction: apply documents again in a transaction of their own'
            USING ERRCODE = '55000';
    END IF;
    -- as an ingestion of them would: their namesakes' locks, then their rows (so no writer changes
    -- them between what is staged and what is applied)
    PERFORM kgrag_private.lock_keys('namesake', kgrag_private.namesakes_of(docs));
    PERFORM 1 FROM kgrag.document AS d WHERE d.tenant_id = t AND d.doc_id = ANY (docs)
     ORDER BY d.doc_id COLLATE "C" FOR UPDATE;
    PERFORM kgrag_private.stage_stored(docs);
    PERFORM kgrag_private.ingest_apply();
    RETURN counts;
END
$$;
COMMENT ON FUNCTION kgrag_private.rekey_identifiers(integer) IS
'Private. A step of pgkgrag build: applies again, from what was extracted from them (kgrag_private.stage_stored, nothing extracted or embedded again), up to most (1 to 100,000) documents of the current tenant that the caller sees and that give an identified entity whose id is not the one the rule gives today (stored before identifiers were compared by kind, or before the setting identifier_kinds changed), in doc_id order, so that equal identifiers are one entity again. Returns {"documents": n applied, "left": n still to apply (the next call takes them), "unkept": up to 20 documents stored before revision 0042, which keep no extraction: ingest them again}. A decision that names an entity by its former id no longer applies.';

CREATE OR REPLACE FUNCTION kgrag_private.namesake_kinds() RETURNS text[]
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT ARRAY(SELECT kgrag.canonical_name(x) FROM jsonb_array_elements_text(kgrag.setting('namesake_types')) AS x)
$$;
COMMENT ON FUNCTION kgrag_private.namesake_kinds() IS
'Private. Returns the canonical entity types of the setting namesake_types: those never joined across documents on the name alone.';

CREATE OR REPLACE FUNCTION kgrag_private.namesake_key(entity_id text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.split_part(entity_id, '@', 1)
$$;
COMMENT ON FUNCTION kgrag_private.namesake_key(text) IS
'Private. Returns the name key of an entity id: the id without the mark that sets a namesake apart ("person:joao souza@1f3a9c2e" -> "person:joao souza"); an id without one is its own name key.';

CREATE OR REPLACE FUNCTION kgrag_private.namesakes_of(doc_ids text[]) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN ARRAY(SELECT DISTINCT s.name_key FROM kgrag.entity_source AS s
                  WHERE s.tenant_id = t AND s.doc_id = ANY (doc_ids) AND s.name_key IS NOT NULL ORDER BY 1);
END
$$;
COMMENT ON FUNCTION kgrag_private.namesakes_of(text[]) IS
'Private. Returns the name keys (sorted) of the namesakes these documents give: the ones whose resolution (kgrag_private.resolve_namesakes) a change of these documents can move.';

CREATE OR REPLACE FUNCTION kgrag_private.is_namesake(entity_type text, identifier text, kinds text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT identifier IS NULL AND kgrag.canonical_name(entity_type) = ANY (kinds)
$$;
COMMENT ON FUNCTION kgrag_private.is_namesake(text, text, text[]) IS
'Private. Returns whether an entity given with this type and identifier is a namesake, resolved by kgrag_private.resolve_namesakes rather than by its name alone: no identifier, and a type among kinds (kgrag_private.namesake_kinds()).';

CREATE OR REPLACE FUNCTION kgrag_private.staged_namesakes() RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    kinds text[] := kgrag_private.namesake_kinds();
BEGIN
    RETURN ARRAY(SELECT DISTINCT s.entity_id FROM pg_temp.kgrag_stage_entity AS s
                  WHERE kgrag_private.is_namesake(s.type, s.identifier, kinds)
                  ORDER BY 1);
END
$$;
COMMENT ON FUNCTION kgrag_private.staged_namesakes() IS
'Private. Returns the name keys (sorted) of the namesakes a staged ingestion batch gives (entities of a type of the setting namesake_types without an identifier): what the batch locks before anything else.';

CREATE OR REPLACE FUNCTION kgrag_private.namesake_occurrences(keys text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    most constant integer := 500;  -- documents of one name resolved apart; past that, the name decides
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS kgrag_namesake (name_key text, doc_id text, entity_id text, comp text, new_id text)
        ON COMMIT DROP;
    CREATE TEMP TABLE IF NOT EXISTS kgrag_namesake_link (name_key text, a text, b text) ON COMMIT DROP;
    TRUNCATE pg_temp.kgrag_namesake, pg_temp.kgrag_namesake_link;
    -- each document that gives a name key is an occurrence, first on its own (comp: the least
    -- document of the entity it will be)
    INSERT INTO pg_temp.kgrag_namesake (name_key, doc_id, entity_id, comp)
    SELECT s.name_key, s.doc_id, s.entity_id, s.doc_id
      FROM kgrag.entity_source AS s WHERE s.tenant_id = t AND s.name_key = ANY (keys);
    -- a name given by more than `most` documents is one entity, as the name alone would make it; so is
    -- a name of a type the setting namesake_types no longer lists
    UPDATE pg_temp.kgrag_namesake AS n SET comp = ''
     WHERE n.name_key IN (SELECT x.name_key FROM pg_temp.kgrag_namesake AS x GROUP BY x.name_key HAVING count(*) > most)
        OR split_part(n.name_key, ':', 1) <> ALL (ARRAY(SELECT replace(k, ' ', '_') FROM unnest(kgrag_private.namesake_kinds()) AS k));
    ANALYZE pg_temp.kgrag_namesake;
END
$$;
COMMENT ON FUNCTION kgrag_private.namesake_occurrences(text[]) IS
'Private. Returns nothing; fills pg_temp.kgrag_namesake (created if missing, dropped at commit) with each document that gives one of these name keys, an occurrence on its own (comp: its document), and empties pg_temp.kgrag_namesake_link; a name given by more than 500 documents, or of a type the setting namesake_types no longer lists, is one entity (comp empty). For kgrag_private.resolve_namesakes.';

CREATE OR REPLACE FUNCTION kgrag_private.namesake_links(keys text[], batch_docs text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    shared integer := greatest(1, (kgrag.setting('namesake_shared_neighbours') #>> '{}')::integer);
    split_off text[];  -- the occurrences a curator split off (kgrag.split_entity)
BEGIN
    split_off := ARRAY(SELECT c.target FROM kgrag.curation AS c
                        WHERE c.tenant_id = t AND c.kind = 'split_entity' AND c.target LIKE 'namesake:%');

    -- Two occurrences sharing `shared` neighbours are one entity. A neighbour is another entity
    -- cited in a chunk that cites the occurrence, by its name key when it is a namesake itself
    -- (so what it resolves to does not matter). An occurrence a curator split off has none.
    -- Each document's neighbours are computed once, when it comes (kgrag.namesake_context; ''
    -- alone: none), and read after that: a batch computes its own documents', not every document
    -- of its names again.
    -- (every read of a scratch table is a MATERIALIZED CTE: Citus joins its result, never the table)
    DELETE FROM kgrag.namesake_context AS x WHERE x.tenant_id = t AND x.doc_id = ANY (COALESCE(batch_docs, '{}'));
    WITH todo AS MATERIALIZED (
        SELECT n.* FROM pg_temp.kgrag_namesake AS n WHERE n.comp <> ''
    ), missing AS MATERIALIZED (
        SELECT n.* FROM todo AS n
         WHERE NOT EXISTS (SELECT 1 FROM kgrag.namesake_context AS x
                            WHERE x.tenant_id = t AND x.name_key = n.name_key AND x.doc_id = n.doc_id)
    ), found AS MATERIALIZED (
        SELECT DISTINCT n.name_key, n.doc_id, COALESCE(o.name_key, m2.entity_id) AS token
          FROM missing AS n
          JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.doc_id = n.doc_id
          JOIN kgrag.mention AS m ON m.tenant_id = t AND m.chunk_id = c.chunk_id AND m.entity_id = n.entity_id
          JOIN kgrag.mention AS m2 ON m2.tenant_id = t AND m2.chunk_id = c.chunk_id AND m2.entity_id <> n.entity_id
          LEFT JOIN kgrag.entity_source AS o ON o.tenant_id = t AND o.entity_id = m2.entity_id AND o.doc_id = n.doc_id
    )
    INSERT INTO kgrag.namesake_context (tenant_id, name_key, doc_id, token)
    SELECT t, f.name_key, f.doc_id, f.token FROM found AS f WHERE f.token <> f.name_key
    UNION
    SELECT t, n.name_key, n.doc_id, '' FROM missing AS n
    ON CONFLICT DO NOTHING;
    WITH own AS MATERIALIZED (
        SELECT n.name_key, n.doc_id FROM pg_temp.kgrag_namesake AS n
         WHERE n.comp <> ''
           AND ('namesake:' || n.name_key || '@' || n.doc_id) <> ALL (split_off)
    ), context AS MATERIALIZED (
        SELECT x.name_key, x.doc_id, x.token
          FROM kgrag.namesake_context AS x
         WHERE x.tenant_id = t AND x.name_key = ANY (keys) AND x.token <> ''
    )
    INSERT INTO pg_temp.kgrag_namesake_link (name_key, a, b)
    SELECT x.name_key, x.doc_id, y.doc_id
      FROM context AS x JOIN context AS y ON y.name_key = x.name_key AND y.token = x.token AND y.doc_id > x.doc_id
     WHERE (x.name_key, x.doc_id) IN (SELECT o.name_key, o.doc_id FROM own AS o)
       AND (y.name_key, y.doc_id) IN (SELECT o.name_key, o.doc_id FROM own AS o)
     GROUP BY x.name_key, x.doc_id, y.doc_id
    HAVING count(*) >= shared;
    -- a curator's merge joins two occurrences, unless either was split off after it
    INSERT INTO pg_temp.kgrag_namesake_link (name_key, a, b)
    SELECT substr(split_part(c.target, '@', 1), 10), c.doc_id, b.doc_id
      FROM kgrag.curation AS c CROSS JOIN LATERAL jsonb_array_elements_text(c.value::jsonb) AS b(doc_id)
     WHERE c.tenant_id = t AND c.kind = 'merge_entities'
       AND substr(split_part(c.target, '@', 1), 10) = ANY (keys)
       AND NOT EXISTS (SELECT 1 FROM kgrag.curation AS s
                        WHERE s.tenant_id = t AND s.kind = 'split_entity' AND s.decided_at > c.decided_at
                          AND (s.doc_id = c.doc_id OR c.value::jsonb ? s.doc_id)
                          AND s.target = 'namesake:' || substr(split_part(c.target, '@', 1), 10) || '@' || s.doc_id);

END
$$;
COMMENT ON FUNCTION kgrag_private.namesake_links(text[], text[]) IS
'Private. Returns nothing; links, in pg_temp.kgrag_namesake_link, the occurrences of pg_temp.kgrag_namesake that are one entity: sharing the setting namesake_shared_neighbours of neighbours (kgrag.namesake_context, computed once per document, those of batch_docs again), or merged by a curator (kgrag.merge_entities) and not split off since (kgrag.split_entity; an occurrence split off has no neighbour). For kgrag_private.resolve_namesakes.';

CREATE OR REPLACE FUNCTION kgrag_private.namesake_entities() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    changed integer;
    moved integer;
BEGIN
    -- components: each occurrence takes the least document it is linked to, until none moves
    LOOP
        UPDATE pg_temp.kgrag_namesake AS n SET comp = x.comp
          FROM (SELECT l.name_key, l.doc_id, min(l.comp) AS comp
                  FROM (SELECT k.name_key, k.b AS doc_id, a.comp
                          FROM pg_temp.kgrag_namesake_link AS k
                          JOIN pg_temp.kgrag_namesake AS a ON a.name_key = k.name_key AND a.doc_id = k.a
                        UNION ALL
                        SELECT k.name_key, k.a, b.comp
                          FROM pg_temp.kgrag_namesake_link AS k
                          JOIN pg_temp.kgrag_namesake AS b ON b.name_key = k.name_key AND b.doc_id = k.b) AS l
                 GROUP BY l.name_key, l.doc_id) AS x
         WHERE n.name_key = x.name_key AND n.doc_id = x.doc_id AND x.comp < n.comp AND n.comp <> '';
        GET DIAGNOSTICS changed = ROW_COUNT;
        EXIT WHEN changed = 0;
    END LOOP;

    -- The entity of the most documents keeps the name key (ties: its least document first); each
    -- other one is the name key marked with its least document.
    UPDATE pg_temp.kgrag_namesake AS n
       SET new_id = CASE WHEN r.place = 1 THEN n.name_key ELSE n.name_key || '@' || left(md5(n.comp), 8) END
      FROM (SELECT x.name_key, x.comp,
                   row_number() OVER (PARTITION BY x.name_key ORDER BY count(*) DESC, x.comp COLLATE "C") AS place
              FROM pg_temp.kgrag_namesake AS x GROUP BY x.name_key, x.comp) AS r
     WHERE r.name_key = n.name_key AND r.comp = n.comp;
    DELETE FROM pg_temp.kgrag_namesake AS n WHERE n.entity_id = n.new_id;
    SELECT count(*) INTO moved FROM pg_temp.kgrag_namesake;
    RETURN moved;
END
$$;
COMMENT ON FUNCTION kgrag_private.namesake_entities() IS
'Private. Returns how many occurrences change entity: joins the linked occurrences of pg_temp.kgrag_namesake into components (through any chain), gives each its entity id (the component of the most documents keeps the name key, ties to its least document; each other one the key marked with its least document, "person:joao souza@1f3a9c2e") and keeps only the occurrences whose entity changes. For kgrag_private.resolve_namesakes.';

CREATE OR REPLACE FUNCTION kgrag_private.move_namesakes(batch_docs text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    others text[];
    olds text[];  -- the moves: each document's old entity, its new one, the document
    news text[];
    moved_docs text[];
    present text[];  -- the entities the caller's change touched before the moves
BEGIN
    -- Moving an occurrence: what its document contributes goes from the old id to the new one. A
    -- document of this batch is counted once it is in (the caller's touch); any other is counted
    -- out before and in after, so co-occurrence weights move exactly.
    others := ARRAY(SELECT DISTINCT n.doc_id FROM pg_temp.kgrag_namesake AS n
                     WHERE n.doc_id <> ALL (COALESCE(batch_docs, '{}')) ORDER BY 1);
    PERFORM kgrag_private.touched_scratch();
    present := ARRAY(SELECT DISTINCT k.a FROM pg_temp.kgrag_touched AS k WHERE k.rel = 'ENTITY');
    IF cardinality(others) > 0 THEN
        PERFORM kgrag_private.touch_documents(others, -1);
    END IF;
    -- (the moves as bound arrays: Citus runs each statement where the tenant's shards are, and a
    -- scratch table must not go with it)
    SELECT array_agg(n.entity_id ORDER BY n.doc_id COLLATE "C"), array_agg(n.new_id ORDER BY n.doc_id COLLATE "C"),
           array_agg(n.doc_id ORDER BY n.doc_id COLLATE "C")
      INTO olds, news, moved_docs FROM pg_temp.kgrag_namesake AS n;
    INSERT INTO kgrag.entity (tenant_id, entity_id, name, type, description)
    SELECT DISTINCT ON (u.new_id) t, u.new_id, e.name, e.type, ''
      FROM unnest(olds, news, moved_docs) AS u(entity_id, new_id, doc_id)
      JOIN kgrag.entity AS e ON e.tenant_id = t AND e.entity_id = u.entity_id
     ORDER BY u.new_id, u.doc_id COLLATE "C"
    ON CONFLICT (tenant_id, entity_id) DO NOTHING;
    -- the moved documents' chunks, each with the old and the new id
    UPDATE kgrag.mention AS m SET entity_id = x.new_id
      FROM (SELECT u.entity_id, u.new_id, c.chunk_id FROM unnest(olds, news, moved_docs) AS u(entity_id, new_id, doc_id)
              JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.doc_id = u.doc_id) AS x
     WHERE m.tenant_id = t AND m.entity_id = x.entity_id AND m.chunk_id = x.chunk_id;
    UPDATE kgrag.relation_evidence AS r SET src = x.new_id
      FROM (SELECT u.entity_id, u.new_id, c.chunk_id FROM unnest(olds, news, moved_docs) AS u(entity_id, new_id, doc_id)
              JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.doc_id = u.doc_id) AS x
     WHERE r.tenant_id = t AND r.src = x.entity_id AND r.chunk_id = x.chunk_id;
    UPDATE kgrag.relation_evidence AS r SET dst = x.new_id
      FROM (SELECT u.entity_id, u.new_id, c.chunk_id FROM unnest(olds, news, moved_docs) AS u(entity_id, new_id, doc_id)
              JOIN kgrag.chunk AS c ON c.tenant_id = t AND c.doc_id = u.doc_id) AS x
     WHERE r.tenant_id = t AND r.dst = x.entity_id AND r.chunk_id = x.chunk_id;
    UPDATE kgrag.entity_source AS s SET entity_id = u.new_id
      FROM unnest(olds, news, moved_docs) AS u(entity_id, new_id, doc_id)
     WHERE s.tenant_id = t AND s.entity_id = u.entity_id AND s.doc_id = u.doc_id;
    -- the names the documents gave, first on the new entity, then their sources
    INSERT INTO kgrag.alias (tenant_id, entity_id, alias, sourced)
    SELECT DISTINCT t, u.new_id, s.alias, true
      FROM unnest(olds, news, moved_docs) AS u(entity_id, new_id, doc_id)
      JOIN kgrag.alias_source AS s ON s.tenant_id = t AND s.entity_id = u.entity_id AND s.doc_id = u.doc_id
    ON CONFLICT DO NOTHING;
    UPDATE kgrag.alias_source AS s SET entity_id = u.new_id
      FROM unnest(olds, news, moved_docs) AS u(entity_id, new_id, doc_id)
     WHERE s.tenant_id = t AND s.entity_id = u.entity_id AND s.doc_id = u.doc_id;
    PERFORM kgrag_private.forget_aliases(olds);
    INSERT INTO pg_temp.kgrag_touched (a, b, rel, n)
    SELECT DISTINCT x.id, NULL::text, 'ENTITY', 0
      FROM pg_temp.kgrag_namesake AS n CROSS JOIN LATERAL (VALUES (n.entity_id), (n.new_id)) AS x(id);
    IF cardinality(others) > 0 THEN
        PERFORM kgrag_private.touch_documents(others, 1);
        -- the other entities of those documents keep their sources and their co-occurrences with
        -- each other (counted out and in: no change); only the moved ids are theirs to refresh, so
        -- no entity another writer holds is derived again here
        DELETE FROM pg_temp.kgrag_touched AS k
         WHERE k.rel = 'ENTITY' AND k.a <> ALL (present) AND k.a <> ALL (olds) AND k.a <> ALL (news);
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.move_namesakes(text[]) IS
'Private. Returns nothing; moves each occurrence left in pg_temp.kgrag_namesake to its new entity (created with the old one''s name and type): its document''s mentions, evidence, source and aliases, and notes in pg_temp.kgrag_touched what the graph refresh must recompute (documents not in batch_docs are counted out before and in after, so co-occurrence weights move exactly). For kgrag_private.resolve_namesakes.';

CREATE OR REPLACE FUNCTION kgrag_private.resolve_namesakes(keys text[], batch_docs text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    moved integer;
BEGIN
    keys := ARRAY(SELECT DISTINCT k FROM unnest(keys) AS k WHERE k IS NOT NULL ORDER BY 1);
    IF cardinality(keys) = 0 THEN
        RETURN 0;
    END IF;
    -- Every writer of a document of a name locks its name key before anything else (ingestion and
    -- deletion; the build's decisions take nothing before): taken again here, it waits for nothing.
    -- So no other writer changes an occurrence of these names, and moving the mentions of
    -- documents this transaction did not lock is safe.
    PERFORM kgrag_private.lock_keys('namesake', keys);
    PERFORM kgrag_private.namesake_occurrences(keys);
    PERFORM kgrag_private.namesake_links(keys, batch_docs);
    moved := kgrag_private.namesake_entities();
    IF moved > 0 THEN
        PERFORM kgrag_private.move_namesakes(batch_docs);
    END IF;
    RETURN moved;
END
$$;
COMMENT ON FUNCTION kgrag_private.resolve_namesakes(text[], text[]) IS
'Private. Resolves the documents that give these name keys (kgrag.entity_source.name_key) into entities (their neighbours computed once per document, kgrag.namesake_context; those of batch_docs again): two documents'' namesakes are one entity where they share the setting namesake_shared_neighbours of neighbours (other entities cited in the same chunks; a namesake neighbour by its name key) or a curator merged them (kgrag.merge_entities), unless one was split off later (kgrag.split_entity); a name of a type namesake_types no longer lists is one entity again; linked documents are one entity through any chain. The entity of the most documents keeps the name key as its id, each other one the key marked with its least document ("person:joao souza@1f3a9c2e"): the same ids for the same documents and decisions, whatever the order they came in. A name given by more than 500 documents is one entity. The caller holds the names'' locks (kgrag_private.lock_keys kind namesake, taken before the documents''): no other writer changes an occurrence meanwhile. Moves each document''s mentions, evidence, source and aliases to its entity, and notes in pg_temp.kgrag_touched what the graph refresh must recompute (documents not in batch_docs are counted out and in). Returns the number of documents moved.';

-- What extractors ask of the database: the names the tenant's graph knows (the gazetteer), the
-- ontology an LLM extraction must keep to, and the cache of validated LLM extractions.

CREATE OR REPLACE FUNCTION kgrag_private.known_names()
RETURNS TABLE (name text, type text, aliases text[])
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN QUERY
    SELECT e.name, e.type,
           COALESCE(array_agg(a.alias ORDER BY a.alias) FILTER (WHERE a.alias <> e.name), '{}')
      FROM kgrag.entity AS e
      LEFT JOIN kgrag.alias AS a ON a.tenant_id = e.tenant_id AND a.entity_id = e.entity_id
     WHERE e.tenant_id = t
     GROUP BY e.entity_id, e.name, e.type
     ORDER BY e.entity_id;
END
$$;
COMMENT ON FUNCTION kgrag_private.known_names() IS
'Private. Returns the names the current tenant''s graph knows: (name, type, aliases other than the name), one row per entity in entity_id order. The gazetteer extractor looks for these in new text when no names file is given.';

CREATE OR REPLACE FUNCTION kgrag.ontology_entity_type(entity_type text) RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT o.t FROM jsonb_array_elements_text(kgrag.setting('ontology') -> 'entity_types') WITH ORDINALITY AS o(t, i)
     WHERE lower(o.t) = lower(btrim(entity_type))
     ORDER BY o.i LIMIT 1
$$;
COMMENT ON FUNCTION kgrag.ontology_entity_type(text) IS
'Returns the entity type of the tenant''s ontology (setting ontology, entity_types) that the given type names, case-insensitively, spelled as the ontology spells it; NULL when the ontology has no such type.';

CREATE OR REPLACE FUNCTION kgrag.ontology_relation_type(relation text) RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT kgrag.relation_key(o.t)
      FROM jsonb_array_elements_text(kgrag.setting('ontology') -> 'relation_types') WITH ORDINALITY AS o(t, i)
     WHERE kgrag.relation_key(o.t) = kgrag.relation_key(relation)
     ORDER BY o.i LIMIT 1
$$;
COMMENT ON FUNCTION kgrag.ontology_relation_type(text) IS
'Returns the key (kgrag.relation_key) of the relation type of the tenant''s ontology (setting ontology, relation_types) that the given type names ("depends on" -> DEPENDS_ON); NULL when the ontology has no such type.';

CREATE OR REPLACE FUNCTION kgrag_private.llm_cache_get(cache_keys text[])
RETURNS TABLE (cache_key text, response jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    PERFORM kgrag_private.check_writing(t);  -- (a reader's API key extracts nothing)
    RETURN QUERY
    SELECT c.cache_key, c.response FROM kgrag.llm_cache AS c
     WHERE c.tenant_id = t AND c.cache_key OPERATOR(pg_catalog.=) ANY (cache_keys)
     ORDER BY c.cache_key;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag_private.llm_cache_get(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.llm_cache_get(text[]) TO kgrag_writer;
COMMENT ON FUNCTION kgrag_private.llm_cache_get(text[]) IS
'Private. Returns the cached validated LLM extractions of the current tenant for the given keys (chunk hash + model + prompt version + ontology): (cache_key, response). SECURITY DEFINER, owned by the schema owner, on the allow-list: no tenant role selects the responses themselves (revision 0042), since a cached extraction may be of a document for an audience; a key is a hash of the chunk''s text, so a caller gets the extraction of a text it already holds. For kgrag_writer.';

CREATE OR REPLACE FUNCTION kgrag_private.llm_cache_put(cache_key text, model text, response jsonb, content_hash text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    -- Only a validated extraction is cached: an object with entities and relations arrays.
    IF response IS NULL OR jsonb_typeof(response) <> 'object'
       OR jsonb_typeof(response -> 'entities') IS DISTINCT FROM 'array'
       OR jsonb_typeof(response -> 'relations') IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'an LLM cache entry must be a jsonb object with "entities" and "relations" arrays'
            USING ERRCODE = '22023';
    END IF;
    IF content_hash IS NULL OR content_hash = '' THEN
        RAISE EXCEPTION 'an LLM cache entry names the content hash of the chunk text it was made from'
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO kgrag.llm_cache (tenant_id, cache_key, model, response, content_hash)
    VALUES (kgrag.current_tenant(), llm_cache_put.cache_key, llm_cache_put.model, llm_cache_put.response,
            llm_cache_put.content_hash)
    ON CONFLICT DO NOTHING;
    RETURN FOUND;
END
$$;
COMMENT ON FUNCTION kgrag_private.llm_cache_put(text, text, jsonb, text) IS
'Private. Caches a validated LLM extraction of the current tenant under its key, with the content hash of the chunk text it was made from (when the last chunk with that text goes, so does the entry); a key already cached is kept as it is. Refuses (SQLSTATE 22023) anything but an object with "entities" and "relations" arrays. Returns true when the entry was added.';

CREATE OR REPLACE FUNCTION kgrag_private.forget_extractions(content_hashes text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    n integer;
BEGIN
    DELETE FROM kgrag.llm_cache AS l
     WHERE l.tenant_id = t AND l.content_hash = ANY (content_hashes)
       AND NOT EXISTS (SELECT 1 FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.content_hash = l.content_hash);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION kgrag_private.forget_extractions(text[]) IS
'Private. Deletes the cached LLM extractions of these chunk texts that no chunk of the current tenant holds any more; returns how many.';

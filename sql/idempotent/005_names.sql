-- Names as SQL compares them. The forms that generated columns depend on (fold, canonical_name,
-- squash, trigrams, entity_key) live with the tables in sql/incremental; these are the others.

CREATE OR REPLACE FUNCTION kgrag.relation_key(relation text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT upper(replace(kgrag.canonical_name(relation), ' ', '_'))
$$;
COMMENT ON FUNCTION kgrag.relation_key(text) IS
'Returns the key a relation type is stored under: canonical, spaces as underscores, upper case ("depends on", "Depends-On" -> "DEPENDS_ON"). Ingestion stores typed relations under this key and the LLM extractor compares it with the ontology (kgrag.ontology_relation_type).';

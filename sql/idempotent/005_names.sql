-- Names as SQL compares them. The forms that tables store (fold, canonical_name, squash,
-- trigrams, entity_key) are kept in 001_names.kept.sql; these are the others.

CREATE OR REPLACE FUNCTION kgrag.relation_key(relation text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT upper(replace(kgrag.canonical_name(relation), ' ', '_'))
$$;
COMMENT ON FUNCTION kgrag.relation_key(text) IS
'Returns the key a relation type is stored under: canonical, spaces as underscores, upper case ("depends on", "Depends-On" -> "DEPENDS_ON"). Ingestion stores typed relations under this key and the LLM extractor compares it with the ontology (kgrag.ontology_relation_type).';

CREATE OR REPLACE FUNCTION kgrag.is_page_about(title text, name text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT kgrag.canonical_name(name) IN (kgrag.canonical_name(title),
                                          kgrag.canonical_name(regexp_replace(title, '\s*\([^()]*\)\s*$', '')))
$$;
COMMENT ON FUNCTION kgrag.is_page_about(text, text) IS
'Returns whether a document title makes the document the page about a name (its own page): the title is the name, canonically, or the name followed by a qualifier in parentheses, as wikis tell pages apart ("Scott Howell (political consultant)" is a page about Scott Howell). An entity''s answer comes from its own page (kgrag_private.refresh_answers), and the local route puts the seeds'' own pages first.';

CREATE OR REPLACE FUNCTION kgrag.capitalized_words(content text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT COALESCE(array_agg(DISTINCT kgrag.canonical_name(w.word)), '{}')
      FROM regexp_split_to_table(left(content, 1000000), '[[:space:][:punct:]]+') AS w(word)
     WHERE w.word ~ '[[:upper:]]'
$$;
COMMENT ON FUNCTION kgrag.capitalized_words(text) IS
'Returns the words a text capitalizes (a capital anywhere in the word: "Time", "TIME", "12Stone", "iPhone"), canonical (kgrag.canonical_name) and distinct; empty when it capitalizes nothing (there is no case to read). The case rule of one-word names reads it: a capitalized one-word name ("Taken", a film) names what a question (kgrag.link_entities) or a chunk (the gazetteer extractor) says only where that text capitalizes the word too ("taken by the British" is not the film), unless the text capitalizes nothing. Reads the first 1,000,000 characters.';

CREATE OR REPLACE FUNCTION kgrag.is_cased_name(name text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT name <> lower(name) AND strpos(kgrag.canonical_name(name), ' ') = 0
$$;
COMMENT ON FUNCTION kgrag.is_cased_name(text) IS
'Returns whether a name falls under the case rule of one-word names: one word (canonically) with a capital ("Time", "Taken", "iPhone"; not "time", not "Payment Module"). Such a name names what a text says only where the text capitalizes that word too (kgrag.capitalized_words) or capitalizes nothing: kgrag.link_entities reads questions so, the gazetteer extractor chunks. Give the name its lower-case form as an alias to have it found in any case.';

-- Settings as data: the tenant's own value, else the default (tenant '*').

CREATE OR REPLACE FUNCTION kgrag.setting(setting_key text) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- The policy on kgrag.settings checks the tenant (kgrag.current_tenant()) before a tenant's own
    -- row is read; the setting read here only narrows the index scan, so it is not checked twice.
    SELECT CASE WHEN s.tenant_id = '*' THEN s.value ELSE kgrag_private.within_limits(setting_key, s.value) END
      FROM kgrag.settings AS s
     WHERE s.tenant_id IN ('*', pg_catalog.current_setting('kgrag.tenant', true))
       AND s.key = setting_key
     ORDER BY (s.tenant_id = '*')
     LIMIT 1
$$;
COMMENT ON FUNCTION kgrag.setting(text) IS
'Returns the jsonb value of a setting for the current tenant: the tenant''s own row when there is one, within the limits the schema owner set (setting setting_limits: kgrag_private.within_limits), else the default row (tenant ''*''); NULL when the key is unknown.';

CREATE OR REPLACE VIEW kgrag.settings_in_force WITH (security_invoker = true) AS
SELECT s.key, s.value AS own_value, kgrag_private.within_limits(s.key, s.value) AS in_force,
       kgrag_private.within_limits(s.key, s.value) IS DISTINCT FROM s.value AS limited,
       l.value -> s.key AS limits
  FROM kgrag.settings AS s
  LEFT JOIN kgrag.settings AS l ON l.tenant_id = '*' AND l.key = 'setting_limits'
 WHERE s.tenant_id = kgrag.current_tenant();
GRANT SELECT ON kgrag.settings_in_force TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON VIEW kgrag.settings_in_force IS
'The current tenant''s own settings: the value it wrote, the value in force (kgrag.setting: within the limits of the setting setting_limits of tenant ''*''), whether a limit changed it (a row written before the limit, or above one the owner lowered since) and the limits.';

CREATE OR REPLACE FUNCTION kgrag_private.settings_of(setting_keys text[]) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- kgrag.setting for several keys in one statement (a search reads a few dozen: on a Citus
    -- worker each statement costs a plan of its own); the same rule: the tenant's own row within
    -- the owner's limits, else the default; an unknown key is left out
    SELECT COALESCE(jsonb_object_agg(k.key, k.value), '{}')
      FROM (SELECT DISTINCT ON (s.key) s.key,
                   CASE WHEN s.tenant_id = '*' THEN s.value ELSE kgrag_private.within_limits(s.key, s.value) END AS value
              FROM kgrag.settings AS s
             WHERE s.tenant_id IN ('*', pg_catalog.current_setting('kgrag.tenant', true))
               AND s.key = ANY (setting_keys)
             ORDER BY s.key, (s.tenant_id = '*')) AS k
$$;
COMMENT ON FUNCTION kgrag_private.settings_of(text[]) IS
'Private. Returns, as one jsonb object, what kgrag.setting returns for each of several keys (the tenant''s own row within the owner''s limits, else the default; an unknown key is left out), in one statement.';

CREATE OR REPLACE FUNCTION kgrag_private.floors_of(setting_keys text[]) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    -- the tenant's own value, else the one for its embedder's similarity scale, else the default
    SELECT COALESCE(jsonb_object_agg(k.key, COALESCE(own.value,
                                                     d.v -> 'embedder_floors' -> (d.v ->> 'embedder') -> k.key,
                                                     d.v -> k.key)), '{}')
      FROM (SELECT kgrag_private.settings_of(setting_keys || ARRAY['embedder_floors', 'embedder']) AS v
              OFFSET 0) AS d  -- (a fence: once, not once per reference)
     CROSS JOIN unnest(setting_keys) AS k(key)
      LEFT JOIN kgrag.settings AS own
        ON own.tenant_id = pg_catalog.current_setting('kgrag.tenant', true) AND own.key = k.key
$$;
COMMENT ON FUNCTION kgrag_private.floors_of(text[]) IS
'Private. Returns, as one jsonb object, each of several similarity floors (chunk_min_similarity, report_min_similarity, entity_min_similarity, entity_seed_min_similarity, router_flat_gap) for the current tenant: its own setting, else the value the setting embedder_floors gives its embedder (another model spreads similarities otherwise: benchmarks/floors.py carries USE''s floors over by quantile), else the default.';

CREATE OR REPLACE FUNCTION kgrag_private.floor(setting_key text) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT kgrag_private.floors_of(ARRAY[setting_key]) -> setting_key
$$;
COMMENT ON FUNCTION kgrag_private.floor(text) IS
'Private. Returns one similarity floor for the current tenant (kgrag_private.floors_of).';

CREATE OR REPLACE FUNCTION kgrag.dimension() RETURNS integer
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
     WHERE s.tenant_id = '*' AND s.key = 'embedding_dimension'
$$;
COMMENT ON FUNCTION kgrag.dimension() IS
'Returns the embedding dimension chosen at install time (every vector column is vector(dimension)).';

CREATE OR REPLACE FUNCTION kgrag_private.check_embedder(embedder text, dimension integer) RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF embedder IS NULL OR embedder !~ '^[a-z][a-z0-9_-]{0,63}$' THEN
        RAISE EXCEPTION 'embedder must be a name like use, e5, hash or openai, got %', COALESCE(quote_literal(embedder), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF dimension IS NULL OR dimension NOT BETWEEN 1 AND kgrag.dimension() THEN
        RAISE EXCEPTION 'the embedder % makes % dimensions: this database stores at most % (installed with --dim %)',
            embedder, COALESCE(dimension::text, 'NULL'), kgrag.dimension(), kgrag.dimension() USING ERRCODE = '22023';
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.check_embedder(text, integer) IS
'Private. Returns nothing; raises SQLSTATE 22023 for an embedder name that is not one (lower case letters, digits, _ and -, up to 64) or a dimension outside 1..kgrag.dimension(). What kgrag.use_embedder and the reembed functions take.';

CREATE OR REPLACE FUNCTION kgrag.use_embedder(embedder text, dimension integer DEFAULT NULL) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
    recorded text := kgrag.setting('embedder') #>> '{}';
    d integer := kgrag.dimension();
    own integer := COALESCE((kgrag.setting('embedder_dimension') #>> '{}')::integer, d);
BEGIN
    dimension := COALESCE(dimension, d);
    PERFORM kgrag_private.check_embedder(embedder, dimension);
    -- Vectors of two models do not compare: once something is embedded, the choice is fixed
    -- (kgrag.reembed_switch moves a tenant to another).
    IF (recorded IS DISTINCT FROM embedder OR own <> dimension) AND (
           EXISTS (SELECT 1 FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.embedding IS NOT NULL)
        OR EXISTS (SELECT 1 FROM kgrag.entity AS e WHERE e.tenant_id = t AND e.embedding IS NOT NULL)) THEN
        RAISE EXCEPTION 'tenant % was embedded with % (% dimensions), not % (% dimensions)', quote_literal(t),
                        quote_literal(recorded), own, quote_literal(embedder), dimension
            USING ERRCODE = '55000',
                  HINT = format('Use the embedder %s (pgkgrag: --embedder %s), or move the tenant to %s with '
                                'pgkgrag reembed --tenant %s --embedder %s.', recorded, recorded, embedder, t, embedder);
    END IF;
    PERFORM kgrag_private.record_embedder(embedder, dimension);
    RETURN embedder;
END
$$;
COMMENT ON FUNCTION kgrag.use_embedder(text, integer) IS
'Records the embedder of the current tenant''s vectors and the dimension of its vectors (default kgrag.dimension(); a narrower one is stored zero-padded, kgrag_private.fit_vector) and returns it. A tenant keeps the embedder it started with: once any of its chunks or entities is embedded, naming another raises SQLSTATE 55000 with the one to use (pgkgrag reembed moves it: kgrag.reembed_switch). Read it back with kgrag.setting(''embedder'') and kgrag.setting(''embedder_dimension'') (default: the ''*'' row, and kgrag.dimension()).';

CREATE OR REPLACE FUNCTION kgrag_private.record_embedder(embedder text, dimension integer) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    INSERT INTO kgrag.settings AS s (tenant_id, key, value, description)
    VALUES (t, 'embedder', to_jsonb(embedder), 'The embedder of this tenant''s vectors; questions must be embedded with it.'),
           (t, 'embedder_dimension', to_jsonb(dimension), 'The dimension of this tenant''s embedder (its vectors are stored zero-padded to kgrag.dimension()).')
    ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value WHERE s.value IS DISTINCT FROM excluded.value;
END
$$;
COMMENT ON FUNCTION kgrag_private.record_embedder(text, integer) IS
'Private. Returns nothing; records the current tenant''s embedder and its dimension (settings embedder, embedder_dimension).';

CREATE OR REPLACE FUNCTION kgrag.text_search_config(lang text) RETURNS regconfig
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    WITH wanted AS (
        SELECT lower(btrim(COALESCE(NULLIF(btrim(lang), ''), kgrag.setting('text_search_config') #>> '{}'))) AS name
    ), named AS (
        SELECT COALESCE(kgrag.setting('language_codes') ->> split_part(w.name, '-', 1), w.name) AS name FROM wanted AS w
    )
    SELECT c.oid::regconfig FROM named AS n JOIN pg_catalog.pg_ts_config AS c ON c.cfgname = n.name
     ORDER BY c.cfgnamespace = 'pg_catalog'::regnamespace DESC LIMIT 1
$$;
COMMENT ON FUNCTION kgrag.text_search_config(text) IS
'Returns the text search configuration a document''s language stands for: a code of the setting language_codes (en, pt, pt-BR, ...), or the name of a configuration (english, portuguese, simple, ...); NULL or blank means the setting text_search_config. NULL when the language is unknown, and ingestion rejects the document.';

CREATE OR REPLACE FUNCTION kgrag_private.check_question(question text) RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    longest integer := kgrag.setting('max_question_chars')::integer;
BEGIN
    IF length(question) > longest THEN
        RAISE EXCEPTION 'the question is % characters long, above the limit of % (setting max_question_chars)',
            length(question), longest
            USING ERRCODE = '22023', HINT = 'Ask a question, not a document: search with its key sentence.';
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.check_question(text) IS
'Private. Returns nothing; raises SQLSTATE 22023 for a question longer than the setting max_question_chars (every function that reads a question''s words calls it: their work grows with its length).';

-- What a setting may be, and what a tenant may set it to. Kept (see README.md): the policy
-- tenant_write of kgrag.settings (revision 0039) calls kgrag_private.setting_allowed, which calls
-- kgrag_private.setting_rule (revision 0041) and kgrag_private.within_limits, so all three are
-- replaced in place, never dropped.
--
-- Two layers. kgrag_private.setting_rule is the product's: every setting's type, floor and
-- ceiling, and whether it is the schema owner's alone (a URL, a model endpoint, a process limit),
-- checked for every row written, the owner's included. The setting setting_limits of tenant '*' is
-- the owner's: how far a tenant may go within those (a lower ceiling, a higher floor, the values
-- allowed). within_limits is the rule kgrag.setting reads a tenant's row through (a row written
-- before a limit is read clamped), and setting_allowed refuses a row it would change, saying why.

CREATE OR REPLACE FUNCTION kgrag_private.setting_rule(setting_key text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- type: integer, number, boolean, string, url, array or object; min and max (numbers, inclusive);
    -- allowed (the values it may take); null (whether JSON null is a value); owner (the schema
    -- owner's alone: tenant rows only the owner writes); for an object, values (what each of its
    -- values may be) and max_keys. A key not here is not a setting a tenant has.
    -- (PL/pgSQL, not SQL: a SQL function would be inlined into its callers' queries, which would
    -- parse this text again each time they are planned)
    rules CONSTANT jsonb := $rules${
      "answer_log_days": {"type": "integer", "min": 1, "max": 36500},
      "answer_map_reports": {"type": "integer", "min": 1, "max": 1000},
      "answer_max_chars": {"type": "integer", "min": 100, "max": 2147483647},
      "chunk_max_chars": {"type": "integer", "min": 50, "max": 2147483647},
      "chunk_min_chars": {"type": "integer", "min": 0, "max": 2147483647},
      "chunk_min_similarity": {"type": "number", "min": -1, "max": 1},
      "chunk_overlap_chars": {"type": "integer", "min": 0, "max": 2147483647},
      "chunk_spread": {"type": "object"},
      "community_max_size": {"type": "integer", "min": 2, "max": 2147483647},
      "community_resolution": {"type": "number", "min": 0.0001, "max": 10000},
      "community_seed": {"type": "integer", "min": 0, "max": 2147483647},
      "edge_rank_depth": {"type": "integer", "min": 1, "max": 2147483647},
      "embedder": {"type": "string", "pattern": "^[a-z][a-z0-9_-]{0,63}$"},
      "embedder_centres": {"type": "object", "owner": true},
      "embedder_dimension": {"type": "integer", "min": 1, "max": 16000, "null": true},
      "embedder_floors": {"type": "object", "owner": true},
      "embedding_dimension": {"type": "integer", "min": 1, "max": 16000, "owner": true},
      "entity_min_similarity": {"type": "number", "min": -1, "max": 1},
      "entity_seed_min_similarity": {"type": "number", "min": -1, "max": 1},
      "graph_chunks_per_entity": {"type": "integer", "min": 1, "max": 2147483647},
      "hnsw_ef_search": {"type": "integer", "min": 1, "max": 1000},
      "hnsw_max_scan_tuples": {"type": "integer", "min": 1, "max": 2147483647},
      "idempotent_objects": {"type": "array", "owner": true},
      "idempotent_sha256": {"type": "string", "owner": true},
      "identifier_kinds": {"type": "object", "values": ["code", "digits", "url"], "max_keys": 1000},
      "ingest_failure_days": {"type": "integer", "min": 1, "max": 36500},
      "ingest_claim_minutes": {"type": "integer", "min": 1, "max": 10080},
      "ingest_max_attempts": {"type": "integer", "min": 1, "max": 100},
      "ingest_ticket_days": {"type": "integer", "min": 1, "max": 36500},
      "khop_timeout_ms": {"type": "integer", "min": 1, "max": 86400000},
      "language_codes": {"type": "object"},
      "lexical_candidates": {"type": "integer", "min": 1, "max": 2147483647},
      "lexical_min_coverage": {"type": "number", "min": 0, "max": 1},
      "link_min_ratio": {"type": "number", "min": 0, "max": 1},
      "link_min_trigram": {"type": "number", "min": 0, "max": 1},
      "link_stopwords": {"type": "array"},
      "log_question_text": {"type": "boolean"},
      "log_rate_per_minute": {"type": "integer", "min": 1, "max": 2147483647},
      "max_alias_chars": {"type": "integer", "min": 10, "max": 2147483647},
      "max_aliases_per_entity": {"type": "integer", "min": 1, "max": 2147483647},
      "max_document_mb": {"type": "number", "min": 0.001, "max": 100000},
      "max_file_mb": {"type": "number", "min": 0.001, "max": 1000000},
      "max_hops": {"type": "integer", "min": 0, "max": 100},
      "max_paths_walked": {"type": "integer", "min": 1, "max": 2147483647},
      "max_question_chars": {"type": "integer", "min": 1, "max": 2147483647},
      "max_quote_chars": {"type": "integer", "min": 10, "max": 2147483647},
      "max_title_chars": {"type": "integer", "min": 10, "max": 2147483647},
      "namesake_shared_neighbours": {"type": "integer", "min": 1, "max": 2147483647},
      "namesake_types": {"type": "array"},
      "ontology": {"type": "object"},
      "ppr_chunk_seed_weight": {"type": "number", "min": 0, "max": 1000000},
      "ppr_damping": {"type": "number", "min": 0, "max": 0.99},
      "ppr_hops": {"type": "integer", "min": 1, "max": 100},
      "ppr_max_edges": {"type": "integer", "min": 1, "max": 2147483647},
      "ppr_max_iterations": {"type": "integer", "min": 1, "max": 2147483647},
      "ppr_tolerance": {"type": "number", "min": 1e-12, "max": 1},
      "query_log": {"type": "boolean"},
      "queue_max_documents": {"type": "integer", "min": 1, "max": 100000000, "owner": true},
      "queue_max_mb": {"type": "number", "min": 0.001, "max": 10000000, "owner": true},
      "query_log_days": {"type": "integer", "min": 1, "max": 36500},
      "reader_memory_mb": {"type": "integer", "min": 64, "max": 1048576, "owner": true},
      "reader_timeout_s": {"type": "number", "min": 1, "max": 86400, "owner": true},
      "report_evidence_chunks": {"type": "integer", "min": 0, "max": 2147483647},
      "report_min_similarity": {"type": "number", "min": -1, "max": 1},
      "rerank_api": {"type": "string", "allowed": ["tei", "cohere"], "owner": true},
      "rerank_candidates": {"type": "integer", "min": 1, "max": 1000},
      "rerank_model": {"type": "string", "owner": true},
      "rerank_timeout_ms": {"type": "integer", "min": 1, "max": 60000},
      "rerank_url": {"type": "url", "owner": true},
      "review_min_confidence": {"type": "number", "min": 0, "max": 1},
      "review_sample_percent": {"type": "number", "min": 0, "max": 100},
      "router_flat_gap": {"type": "number", "min": 0, "max": 2},
      "rrf_graph_weight": {"type": "number", "min": 0, "max": 100},
      "rrf_k": {"type": "integer", "min": 0, "max": 1000},
      "search_degree_cap": {"type": "integer", "min": 1, "max": 2147483647, "null": true},
      "search_entities": {"type": "integer", "min": 0, "max": 100},
      "search_graph_ranking": {"type": "string", "allowed": ["paths", "pagerank", "both"]},
      "search_hops": {"type": "integer", "min": 0, "max": 100},
      "search_neighbours": {"type": "boolean"},
      "search_reports": {"type": "integer", "min": 1, "max": 1000},
      "search_seeds": {"type": "integer", "min": 1, "max": 100},
      "search_timeout_ms": {"type": "integer", "min": 1, "max": 86400000},
      "setting_limits": {"type": "object", "owner": true},
      "short_form_types": {"type": "array"},
      "text_search_config": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,128}$"},
      "vector_index": {"type": "string", "allowed": ["bq", "halfvec"], "owner": true},
      "vector_min_candidates": {"type": "integer", "min": 1, "max": 2147483647},
      "vector_overfetch": {"type": "integer", "min": 1, "max": 2147483647},
      "walk_min_confidence": {"type": "number", "min": 0, "max": 1}
    }$rules$::jsonb;
BEGIN
    RETURN rules -> setting_key;
END
$$;
COMMENT ON FUNCTION kgrag_private.setting_rule(text) IS
'Private. Returns what a setting may be, as jsonb: its type (integer, number, boolean, string, url: an http(s) URL, array, object), its floor and ceiling (min, max, inclusive) or the values allowed, whether JSON null is a value (null), whether it is the schema owner''s alone (owner: a URL, a model endpoint, a process limit; a tenant''s row only the owner writes), a pattern for a name, for an object what each value may be (values) and how many keys it may have (max_keys); NULL for a key that is no setting. kgrag_private.setting_allowed checks every row of kgrag.settings against it when it is written.';

CREATE OR REPLACE FUNCTION kgrag_private.one_of(allowed jsonb, value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    -- containment is equality for a scalar; an array or an object would match a part of one
    SELECT pg_catalog.jsonb_typeof(value) NOT IN ('array', 'object') AND allowed @> pg_catalog.jsonb_build_array(value)
$$;
COMMENT ON FUNCTION kgrag_private.one_of(jsonb, jsonb) IS
'Private. Returns whether a value (a scalar: allowed values are) is one of the JSON array allowed, exactly.';

CREATE OR REPLACE FUNCTION kgrag_private.setting_fault(setting_key text, value jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rule jsonb := kgrag_private.setting_rule(setting_key);
    kind text := pg_catalog.jsonb_typeof(value);
    want text := rule ->> 'type';
    fault text;
BEGIN
    -- what is wrong with the value as the setting's rule sees it (NULL: nothing)
    IF rule IS NULL THEN
        RETURN pg_catalog.format('%s is not a setting', pg_catalog.quote_literal(setting_key));
    END IF;
    IF value IS NULL OR kind = 'null' THEN
        RETURN CASE WHEN (rule ->> 'null')::boolean THEN NULL ELSE pg_catalog.format('setting %s takes a %s, not null', setting_key, want) END;
    END IF;
    IF rule ? 'allowed' AND NOT kgrag_private.one_of(rule -> 'allowed', value) THEN
        RETURN pg_catalog.format('setting %s takes one of %s, got %s', setting_key, rule -> 'allowed', value);
    END IF;
    IF want IN ('integer', 'number') THEN
        IF kind <> 'number' OR (want = 'integer' AND value::numeric <> pg_catalog.trunc(value::numeric)) THEN
            RETURN pg_catalog.format('setting %s takes a number%s, got %s', setting_key,
                                     CASE WHEN want = 'integer' THEN ' (a whole one)' ELSE '' END, value);
        END IF;
        IF value::numeric < (rule ->> 'min')::numeric OR value::numeric > (rule ->> 'max')::numeric THEN
            RETURN pg_catalog.format('setting %s = %s is outside the range it may take, %s..%s', setting_key, value,
                                     rule ->> 'min', rule ->> 'max');
        END IF;
        RETURN NULL;
    END IF;
    IF want IN ('string', 'url') AND kind <> 'string' OR want NOT IN ('string', 'url') AND kind <> want THEN
        RETURN pg_catalog.format('setting %s takes %s %s, got %s', setting_key,
                                 CASE WHEN want IN ('array', 'object') THEN 'an' ELSE 'a' END,
                                 CASE WHEN want = 'url' THEN 'string (an http(s) URL, or empty)' ELSE want END,
                                 pg_catalog.left(value::text, 100));
    END IF;
    IF want = 'url' AND value #>> '{}' <> '' AND (value #>> '{}' !~ '^https?://[^[:space:]]+$' OR pg_catalog.length(value #>> '{}') > 2000) THEN
        RETURN pg_catalog.format('setting %s takes an http(s) URL of at most 2,000 characters, or empty, got %s', setting_key,
                                 pg_catalog.left(value::text, 100));
    END IF;
    IF rule ? 'max_keys' AND (SELECT count(*) FROM pg_catalog.jsonb_object_keys(value)) > (rule ->> 'max_keys')::integer THEN
        RETURN pg_catalog.format('setting %s takes at most %s keys, got %s', setting_key, rule ->> 'max_keys',
                                 (SELECT count(*) FROM pg_catalog.jsonb_object_keys(value)));
    END IF;
    IF rule ? 'values' THEN  -- an object whose every value is one of these
        SELECT pg_catalog.format('setting %s takes one of %s for each key, got %s for %s', setting_key,
                                 rule -> 'values', pg_catalog.left(v.value::text, 100),
                                 pg_catalog.quote_literal(pg_catalog.left(v.key, 100)))
          INTO fault FROM pg_catalog.jsonb_each(value) AS v
         WHERE NOT kgrag_private.one_of(rule -> 'values', v.value)
         ORDER BY v.key LIMIT 1;
        IF fault IS NOT NULL THEN
            RETURN fault;
        END IF;
    END IF;
    IF rule ? 'pattern' AND value #>> '{}' !~ (rule ->> 'pattern') THEN
        RETURN pg_catalog.format('setting %s takes a name matching %s, got %s', setting_key, rule ->> 'pattern',
                                 pg_catalog.left(value::text, 100));
    END IF;
    IF pg_catalog.length(value::text) > 1000000 THEN
        RETURN pg_catalog.format('setting %s is %s characters of JSON, above 1,000,000', setting_key, pg_catalog.length(value::text));
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION kgrag_private.setting_fault(text, jsonb) IS
'Private. Returns what is wrong with a value of a setting by its rule (kgrag_private.setting_rule): not a setting, null where null is no value, not one of the values allowed, of another type, a fraction where a whole number is wanted, outside the floor and ceiling, not an http(s) URL, not matching the name''s pattern, an object with too many keys or a value not allowed, longer than 1,000,000 characters of JSON; NULL when nothing is.';

CREATE OR REPLACE FUNCTION kgrag_private.within_limits(setting_key text, value jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    rule jsonb := kgrag_private.setting_rule(setting_key);
    kind text := jsonb_typeof(value);
    limits jsonb;
    n numeric;
BEGIN
    -- A tenant's row written before a rule or a limit (or beyond one the owner moved since): a
    -- number is clamped, first into the setting's own floor and ceiling, then into the owner's
    -- limits; another value its rule refuses (kgrag_private.setting_fault), or outside the owner's
    -- allowed ones, gives way to the default. (PL/pgSQL: its statements'
    -- plans are kept, where a SQL function's query would be planned at every call.)
    IF rule ->> 'type' IN ('integer', 'number') AND kind = 'number' THEN
        n := value::numeric;
        IF rule ->> 'type' = 'integer' THEN
            n := round(n);
        END IF;
        n := least(greatest(n, (rule ->> 'min')::numeric), (rule ->> 'max')::numeric);
        IF n <> value::numeric THEN
            value := to_jsonb(n);
        END IF;
    ELSIF rule IS NOT NULL AND kgrag_private.setting_fault(setting_key, value) IS NOT NULL THEN
        RETURN (SELECT d.value FROM kgrag.settings AS d WHERE d.tenant_id = '*' AND d.key = setting_key);
    END IF;
    limits := (SELECT s.value -> setting_key FROM kgrag.settings AS s WHERE s.tenant_id = '*' AND s.key = 'setting_limits');
    IF limits IS NULL OR (limits ? 'allowed' AND kgrag_private.one_of(limits -> 'allowed', value)) THEN
        RETURN value;
    ELSIF limits ? 'allowed' OR jsonb_typeof(value) IS DISTINCT FROM 'number' THEN
        RETURN (SELECT d.value FROM kgrag.settings AS d WHERE d.tenant_id = '*' AND d.key = setting_key);
    ELSIF value::numeric > (limits ->> 'max')::numeric THEN
        RETURN limits -> 'max';
    ELSIF value::numeric < (limits ->> 'min')::numeric THEN
        RETURN limits -> 'min';
    END IF;
    RETURN value;
END
$$;
COMMENT ON FUNCTION kgrag_private.within_limits(text, jsonb) IS
'Private. Returns a tenant''s value of a setting within the setting''s own floor and ceiling (kgrag_private.setting_rule) and then within the limits of the setting setting_limits of tenant ''*'': a number above a max is the max, below a min the min (a fraction where a whole number is wanted: rounded); a value of another type, or outside the allowed ones, is the default. kgrag.setting reads every tenant row through it (a row written before a rule or a limit); kgrag_private.setting_allowed refuses such a row when it is written.';

CREATE OR REPLACE FUNCTION kgrag_private.setting_allowed(tenant text, setting_key text, value jsonb) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rule jsonb := kgrag_private.setting_rule(setting_key);
    fault text;
    limits jsonb;
    hint text := 'The schema owner sets what a tenant may set: the setting setting_limits of tenant ''*''.';
BEGIN
    IF rule IS NULL THEN
        IF tenant = '*' THEN  -- the owner's own row of a setting a revision adds
            RETURN true;
        END IF;
        RAISE EXCEPTION '% is not a setting', pg_catalog.quote_literal(setting_key) USING ERRCODE = '22023',
            HINT = 'The settings are the keys of tenant ''*'': SELECT key, value, description FROM kgrag.settings WHERE tenant_id = ''*'';';
    END IF;
    -- a URL, a model endpoint, a process limit: the schema owner's alone, for '*' or for one tenant
    IF tenant <> '*' AND (rule ->> 'owner')::boolean
       AND NOT pg_catalog.has_schema_privilege(session_user, 'kgrag', 'CREATE') THEN
        RAISE EXCEPTION 'setting % is the schema owner''s alone: a tenant may not set it', setting_key USING ERRCODE = '42501',
            HINT = 'The schema owner sets it for every tenant (tenant ''*'') or, acting as one tenant, for that tenant.';
    END IF;
    -- the owner's limits on a tenant's row first (its own floor and ceiling are the narrower ones)
    limits := CASE WHEN tenant <> '*' THEN (SELECT s.value -> setting_key FROM kgrag.settings AS s
                                            WHERE s.tenant_id = '*' AND s.key = 'setting_limits') END;
    IF limits ? 'allowed' AND NOT kgrag_private.one_of(limits -> 'allowed', value) THEN
        RAISE EXCEPTION 'a tenant may not set % to %: the schema owner allows % only', setting_key, value,
            limits -> 'allowed' USING ERRCODE = '42501', HINT = hint;
    ELSIF pg_catalog.jsonb_typeof(value) = 'number' AND value::numeric > (limits ->> 'max')::numeric THEN
        RAISE EXCEPTION 'setting % = % is above the ceiling of % the schema owner set', setting_key, value,
            limits ->> 'max' USING ERRCODE = '42501', HINT = hint;
    ELSIF pg_catalog.jsonb_typeof(value) = 'number' AND value::numeric < (limits ->> 'min')::numeric THEN
        RAISE EXCEPTION 'setting % = % is below the floor of % the schema owner set', setting_key, value,
            limits ->> 'min' USING ERRCODE = '42501', HINT = hint;
    END IF;
    fault := kgrag_private.setting_fault(setting_key, value);
    IF fault IS NOT NULL THEN
        RAISE EXCEPTION '%', fault USING ERRCODE = '22023';
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION kgrag_private.setting_allowed(text, text, jsonb) IS
'Private. Returns true when a row of kgrag.settings may be written; else raises. For every row: SQLSTATE 22023 when the value breaks the setting''s rule (kgrag_private.setting_fault: its type, floor, ceiling, values allowed); for a tenant''s row also 22023 for a key that is no setting, 42501 for a setting that is the schema owner''s alone (kgrag_private.setting_rule: a URL, a model endpoint, a process limit) unless the session''s role owns the schema, and 42501 naming the limit when the setting setting_limits of tenant ''*'' puts the value above its max, below its min or outside its allowed values. The owner''s own rows (tenant ''*'') are checked against the rule, not against setting_limits, and may name a setting the rules do not know yet. The policy tenant_write of kgrag.settings checks every row written with it.';

CREATE OR REPLACE FUNCTION kgrag_private.setting_writable(tenant text, setting_key text) RETURNS boolean
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
    -- a tenant's row of a setting that is the schema owner's alone: the owner's to change or delete
    SELECT tenant = '*' OR NOT COALESCE((kgrag_private.setting_rule(setting_key) ->> 'owner')::boolean, false)
        OR pg_catalog.has_schema_privilege(session_user, 'kgrag', 'CREATE')
$$;
COMMENT ON FUNCTION kgrag_private.setting_writable(text, text) IS
'Private. Returns whether the session may change or delete a row of kgrag.settings as it stands: any row but a tenant''s row of a setting that is the schema owner''s alone (kgrag_private.setting_rule: owner), which only the schema owner may. The policy tenant_write of kgrag.settings checks every row before it is changed or deleted with it (revision 0042; in 0041, two restrictive policies, which Citus makes permissive on its shards).';

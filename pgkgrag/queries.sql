-- The driver's SQL: every statement pgkgrag runs, by name (see pgkgrag/queries.py).
-- Values are bound with %s; {fields} are identifiers composed with psycopg.sql.Identifier.
-- The rules live in the kgrag.* functions these call: an application or a psql session calling
-- the same functions gets the same behaviour as pgkgrag.

-- ---------------------------------------------------------------------------------------------
-- connections and tenants (pgkgrag.db.connections, pgkgrag.db.schema_version, pgkgrag.db.server)
-- ---------------------------------------------------------------------------------------------

-- name: vector_type_exists
-- Whether pgvector is installed, so that its type can be registered on the connection.
SELECT 1 FROM pg_catalog.pg_type WHERE typname = 'vector';

-- name: may_use_role
-- Whether the role exists and the login role may act as it. Never on a Citus cluster
-- (pg_dist_partition is Citus's): its workers are reached as the current role, and the
-- application roles cannot log in; the login role's own membership gives the same rights there.
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s)
       AND pg_catalog.pg_has_role(session_user, %s, 'MEMBER')
       AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL;

-- name: set_role
SET ROLE {role};

-- name: use_tenant
-- The tenant of this transaction, checked against the session's grants and sealed to it.
SELECT kgrag.use_tenant(%s);

-- name: use_groups
-- Narrows the groups this transaction holds to the end user's (never beyond the key's or role's).
SELECT kgrag.use_groups(%s);

-- name: use_key
-- The tenant of a transaction, from an API key (pgkgrag serve): the database checks the key.
SELECT kgrag.use_key(%s, %s);

-- name: check_question
-- A question's length, against the tenant's setting max_question_chars (22023 above it): pgkgrag
-- serve asks before it embeds the question, whose cost grows with its length.
SELECT kgrag_private.check_question(%s);

-- name: check_search_options
-- Search options as kgrag_search would take them (22023 for an unknown one or a value out of its
-- range): pgkgrag serve asks before it embeds the question.
SELECT kgrag_private.search_options(%s::jsonb);

-- name: create_key
SELECT kgrag.create_key(%s, %s, %s, %s);

-- name: list_keys
SELECT name, tenants, role, groups, created_at, revoked_at FROM kgrag.list_keys();

-- name: revoke_key
SELECT kgrag.revoke_key(%s);

-- name: current_tenant_setting
-- The tenant the caller's transaction has set, if any.
SELECT pg_catalog.current_setting('kgrag.tenant', true);

-- name: clear_tenant
-- No tenant for the rest of this transaction.
SELECT pg_catalog.set_config('kgrag.tenant', '', true);

-- name: schema_installed
-- Whether the kgrag schema exists and whether it can tell its revision (kgrag.version, at head).
SELECT pg_catalog.to_regnamespace('kgrag') IS NOT NULL, pg_catalog.to_regprocedure('kgrag.version()') IS NOT NULL;

-- name: schema_version
SELECT kgrag.version();

-- name: database_exists
SELECT 1 FROM pg_catalog.pg_database WHERE datname = %s;

-- name: create_database
CREATE DATABASE {database};

-- name: superuser_password
-- The embedded server's superuser gets its password (scram-sha-256: the server's default); a
-- literal, as ALTER ROLE takes no parameter.
ALTER ROLE postgres PASSWORD {password};

-- name: private_socket
-- The embedded server's socket, its owner's alone (from its next start).
ALTER SYSTEM SET unix_socket_permissions = '0700';

-- ---------------------------------------------------------------------------------------------
-- the installer (pgkgrag.db.installer): run by the schema owner during a migration, before the
-- functions of sql/idempotent exist or while they are created again, so its bookkeeping in
-- kgrag.settings (tenant '*') is the one place the driver touches a table itself
-- ---------------------------------------------------------------------------------------------

-- name: installer_lock
-- Concurrent migration runs (two pods starting at once) take turns.
SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext(%s));

-- name: installer_delegate_calls
-- on a distributed schema, the calls a public function delegates to the tenant's worker (else nothing)
SELECT kgrag_private.delegate_calls();

-- name: installer_citus_sequential
-- On a Citus coordinator: the run's DDL reaches each node's shards over one connection, so that the
-- functions created later in the same transaction can be propagated too (after DDL run on shards
-- in parallel, Citus refuses to propagate a function in that transaction).
SELECT pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true)
  FROM pg_catalog.pg_extension WHERE extname = 'citus';

-- name: installer_missing_privileges
-- What the role running a migration lacks, asked before anything changes: one row per missing
-- privilege and the statement an administrator runs for it. A superuser lacks nothing; pgvector
-- is tried instead (providers let their admin role create it without marking it trusted).
WITH me AS (
    SELECT r.rolname, r.rolsuper, r.rolcreaterole, pg_catalog.current_database() AS db
    FROM pg_catalog.pg_roles r
    WHERE r.rolname = CURRENT_USER
), kgrag_schema AS (
    SELECT n.nspowner::regrole::text AS owner, n.nspowner
    FROM pg_catalog.pg_namespace n
    WHERE n.nspname = 'kgrag'
), wanted(name, owns) AS (
    VALUES ('kgrag_curator', false), ('kgrag_logger', true), ('kgrag_probe', true), ('kgrag_reader', false),
           ('kgrag_writer', false)
), lacking AS (
    SELECT pg_catalog.format('CREATE on database %I (to create schema kgrag)', me.db) AS missing,
           pg_catalog.format('GRANT CREATE ON DATABASE %I TO %I;', me.db, me.rolname) AS fix
    FROM me
    WHERE NOT EXISTS (SELECT 1 FROM kgrag_schema)
      AND NOT pg_catalog.has_database_privilege(me.db, 'CREATE')
    UNION ALL
    SELECT pg_catalog.format('ownership of schema kgrag (its owner is %s)', s.owner),
           pg_catalog.format('-- none: run the migration as %s, the owner of schema kgrag', s.owner)
    FROM me, kgrag_schema s
    WHERE NOT pg_catalog.pg_has_role(CURRENT_USER, s.nspowner, 'USAGE')
    UNION ALL
    SELECT 'CREATEROLE (to create the kgrag roles where missing, and a role per tenant: kgrag.grant_tenant)',
           pg_catalog.format('ALTER ROLE %I CREATEROLE;', me.rolname)
    FROM me
    WHERE NOT me.rolcreaterole
    UNION ALL
    -- the owner hands functions to kgrag_probe and kgrag_logger (it must be able to SET ROLE to
    -- them, or grant that to itself) and grants kgrag_reader, kgrag_writer and kgrag_curator to application
    -- roles: the creator of the roles holds ADMIN OPTION on them, another database's owner needs it
    SELECT pg_catalog.format('ADMIN OPTION on %s (roles another owner created)',
                             pg_catalog.string_agg(w.name, ', ' ORDER BY w.name)),
           pg_catalog.format('GRANT %s TO %I WITH ADMIN OPTION;  -- by a role holding ADMIN OPTION on them: %s',
                             pg_catalog.string_agg(w.name, ', ' ORDER BY w.name), me.rolname,
                             COALESCE((SELECT pg_catalog.string_agg(DISTINCT m.rolname::text, ', ')
                                       FROM pg_catalog.pg_auth_members a
                                       JOIN pg_catalog.pg_roles m ON m.oid = a.member
                                       WHERE a.admin_option AND NOT m.rolsuper
                                         AND a.roleid IN (SELECT pg_catalog.to_regrole(x.name) FROM wanted x)
                                      ) || ' or a superuser', 'a superuser'))
    FROM me, wanted w
    WHERE pg_catalog.to_regrole(w.name) IS NOT NULL
      AND NOT pg_catalog.pg_has_role(CURRENT_USER, w.name, 'MEMBER WITH ADMIN OPTION')
      AND NOT (w.owns AND pg_catalog.pg_has_role(CURRENT_USER, w.name, 'SET')
               AND pg_catalog.pg_has_role(CURRENT_USER, w.name, 'USAGE'))
    GROUP BY me.rolname
)
SELECT l.missing, l.fix FROM lacking l, me WHERE NOT me.rolsuper ORDER BY 1;

-- name: installer_role
SELECT CURRENT_USER::text;

-- name: installer_vector_lacking
-- The preflight's row for pgvector: refused in this database (the parameter: whether the server
-- has it at all), or absent from the server.
SELECT CASE WHEN %(available)s THEN pg_catalog.format('pgvector in database %%I', pg_catalog.current_database())
            ELSE 'pgvector on this server' END,
       CASE WHEN %(available)s
            THEN pg_catalog.format('CREATE EXTENSION vector;  -- in database %%I', pg_catalog.current_database())
            ELSE '-- none in SQL: install pgvector >= 0.7 on the server' END;

-- name: installer_vector_installed
SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'vector';

-- name: installer_vector_available
SELECT 1 FROM pg_catalog.pg_available_extensions WHERE name = 'vector';

-- name: installer_create_vector
CREATE EXTENSION vector;

-- name: installer_vector_schema
-- The schema pgvector is installed in: the functions' pinned search_path names it.
SELECT n.nspname FROM pg_catalog.pg_extension AS e JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace
 WHERE e.extname = 'vector';

-- name: installer_search_path
SELECT pg_catalog.current_setting('search_path');

-- name: installer_pin_search_path
-- The path a sql/ file runs with; `SET search_path FROM CURRENT` pins it in every function.
SET LOCAL search_path = pg_catalog, {schema}, pg_temp;

-- name: installer_restore_search_path
SELECT pg_catalog.set_config('search_path', %s, true);

-- name: installer_set_dimension
-- Read back by sql/incremental/0001_base.sql, which sizes the vector columns with it.
SELECT pg_catalog.set_config('kgrag.install_dimension', %s, true);

-- name: installer_has_use_tenant
-- Whether the schema seals tenants to their transaction (revision 0011 on).
SELECT pg_catalog.to_regprocedure('kgrag.use_tenant(text)') IS NOT NULL;

-- name: installer_set_tenant
-- The tenant of the migration, before revision 0011 (it is then sealed by kgrag.use_tenant).
SELECT pg_catalog.set_config('kgrag.tenant', %s, true);

-- name: installer_settings_exist
SELECT pg_catalog.to_regclass('kgrag.settings') IS NOT NULL;

-- name: installer_dimension
SELECT (value #>> '{}')::integer FROM kgrag.settings WHERE tenant_id = '*' AND key = 'embedding_dimension';

-- name: installer_set_vector_index
-- Read back by sql/incremental/0024_vector_index.sql: the kind asked for, '' to choose by the dimension.
SELECT pg_catalog.set_config('kgrag.install_vector_index', %s, true);

-- name: installer_vector_index
SELECT value #>> '{}' FROM kgrag.settings WHERE tenant_id = '*' AND key = 'vector_index';

-- name: installer_name_revision
-- The revision a run reached, read by sql/idempotent/006_version.sql as kgrag.version()'s result.
SELECT pg_catalog.set_config('kgrag.install_revision', %s, true);

-- name: installer_drop_version
DROP FUNCTION IF EXISTS kgrag.version();

-- name: installer_objects
-- The functions and views in schemas kgrag and kgrag_private (from 0016), as the catalog names them.
SELECT 'FUNCTION', p.oid::pg_catalog.regprocedure::text FROM pg_catalog.pg_proc AS p
 WHERE p.pronamespace IN ('kgrag'::pg_catalog.regnamespace, pg_catalog.to_regnamespace('kgrag_private'))
UNION ALL
SELECT 'VIEW', c.oid::pg_catalog.regclass::text FROM pg_catalog.pg_class AS c
 WHERE c.relnamespace IN ('kgrag'::pg_catalog.regnamespace, pg_catalog.to_regnamespace('kgrag_private'))
   AND c.relkind = 'v';

-- name: installer_drop_order
-- The recorded objects that still exist, in the order they can be dropped: views before the
-- functions they use, and a view before every view it depends on (its rank: the longest chain of
-- recorded views that depend on it, through their rewrite rules in pg_depend; 0 for one nothing
-- depends on). Names tie the order.
WITH RECURSIVE recorded AS (
    SELECT r.kind, r.identity, CASE WHEN r.kind = 'VIEW' THEN pg_catalog.to_regclass(r.identity) END AS view
      FROM pg_catalog.jsonb_to_recordset(%s::jsonb) AS r(kind text, identity text)
), views AS (
    SELECT v.view FROM recorded AS v JOIN pg_catalog.pg_class AS c ON c.oid = v.view AND c.relkind = 'v'
), uses AS (  -- (dependent view, view it reads), both recorded
    SELECT DISTINCT w.ev_class AS dependent, d.refobjid AS used
      FROM pg_catalog.pg_depend AS d
      JOIN pg_catalog.pg_rewrite AS w ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND d.objid = w.oid
     WHERE d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refobjid <> w.ev_class
       AND w.ev_class IN (SELECT v.view FROM views AS v) AND d.refobjid IN (SELECT v.view FROM views AS v)
), chain(view, depth) AS (
    SELECT v.view, 0 FROM views AS v
    UNION ALL
    SELECT u.used, c.depth + 1 FROM chain AS c JOIN uses AS u ON u.dependent = c.view WHERE c.depth < 100
)
SELECT r.kind, r.identity
  FROM recorded AS r
  LEFT JOIN (SELECT c.view, max(c.depth) AS depth FROM chain AS c GROUP BY c.view) AS ranked ON ranked.view = r.view
 WHERE r.kind <> 'VIEW' OR ranked.view IS NOT NULL
 ORDER BY r.kind = 'VIEW' DESC, ranked.depth, r.identity;

-- name: installer_drop_object
DROP {kind} IF EXISTS {object};

-- name: installer_get_setting
SELECT value FROM kgrag.settings WHERE tenant_id = '*' AND key = %s;

-- name: installer_put_setting
INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES ('*', %s, %s::jsonb, %s)
ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value;

-- ---------------------------------------------------------------------------------------------
-- embeddings (pgkgrag.embed.vectors)
-- ---------------------------------------------------------------------------------------------

-- name: columns_dimension
-- The dimension of the vector columns, from the catalog: needs no tenant (kgrag.dimension() does).
SELECT a.atttypmod FROM pg_catalog.pg_attribute AS a
 WHERE a.attrelid = 'kgrag.chunk'::regclass AND a.attname = 'embedding';

-- name: tenant_embedder
-- The dimension of every vector column and the embedder of the tenant's vectors.
SELECT kgrag.dimension(), kgrag.setting('embedder') #>> '{}';

-- name: use_embedder
-- name, the model's dimension
SELECT kgrag.use_embedder(%s, %s);

-- name: reembed_todo
-- embedder, kind, after (the last id of the previous page, or NULL), how many.
SELECT ref_id, body, body_hash FROM kgrag.reembed_todo(%s, %s, %s, %s);

-- name: reembed_store
-- embedder, its dimension, kind, ids, vectors, text hashes.
SELECT kgrag.reembed_store(%s, %s, %s, %s, %s, %s);

-- name: reembed_switch
SELECT kgrag.reembed_switch(%s, %s);

-- name: embedding_todo
-- kind, after (the last id of the previous page, or NULL), how many.
SELECT ref_id, body, body_hash FROM kgrag.embedding_todo(%s, %s, %s);

-- name: store_embeddings
SELECT kgrag.store_embeddings(%s, %s, %s, %s);

-- name: chunk_texts_with_vectors
SELECT kgrag_private.chunk_texts_with_vectors(%s);

-- ---------------------------------------------------------------------------------------------
-- ingestion (pgkgrag.ingest.batch, pgkgrag.ingest.staging)
-- ---------------------------------------------------------------------------------------------

-- name: ingest_settings
-- What a batch needs to know before it writes: chunk sizes and the document size limit.
SELECT kgrag.setting('chunk_max_chars')::integer AS chunk_max_chars,
       kgrag.setting('chunk_min_chars')::integer AS chunk_min_chars,
       kgrag.setting('chunk_overlap_chars')::integer AS chunk_overlap,
       kgrag.setting('max_document_mb')::float8 AS max_document_mb,
       kgrag.setting('max_file_mb')::float8 AS max_file_mb,
       kgrag.setting('reader_timeout_s')::float8 AS reader_timeout_s,
       kgrag.setting('reader_memory_mb')::float8 AS reader_memory_mb;

-- name: text_search_configs
-- The text search configuration each language stands for (NULL: unknown), in the order given.
SELECT u.lang, kgrag.text_search_config(u.lang)::text
  FROM unnest(%s::text[]) WITH ORDINALITY AS u(lang, i) ORDER BY u.i;

-- name: stored_documents
SELECT doc_id, content_hash FROM kgrag_private.stored_documents(%s);

-- name: record_ingest_failure
SELECT kgrag_private.record_ingest_failure(%s, %s, %s, %s);

-- name: record_input_failures
SELECT kgrag_private.record_input_failures(%s, %s, %s, %s);

-- name: failed_sources
SELECT kgrag_private.failed_sources();

-- name: stage_begin
SELECT kgrag_private.stage_begin();

-- name: copy_text
COPY {table} ({columns}) FROM STDIN;

-- name: copy_binary
COPY {table} ({columns}) FROM STDIN (FORMAT BINARY);

-- name: batch_embedder
-- The embedder of the batch's vectors, for kgrag_private.ingest_apply to check against the tenant's.
SELECT set_config('kgrag.batch_embedder', %s, true);

-- name: ingest_apply
SELECT kgrag_private.ingest_apply();

-- name: delete_documents
SELECT kgrag.delete_documents(%s);

-- ---------------------------------------------------------------------------------------------
-- building communities, reports and answers (pgkgrag.graph.build, pgkgrag.llm.reports)
-- ---------------------------------------------------------------------------------------------

-- name: communities_outdated
SELECT kgrag_private.communities_outdated();

-- name: community_settings
-- Hierarchical Leiden's seed, resolution and maximum community size for this tenant.
SELECT kgrag.setting('community_seed')::integer, kgrag.setting('community_resolution')::float8,
       kgrag.setting('community_max_size')::integer;

-- name: community_partition
SELECT entity_id, level, community_id, stale FROM kgrag_private.community_partition();

-- name: community_graph
SELECT graph, src, dst, weight FROM kgrag_private.community_graph();

-- name: replace_communities
SELECT kgrag_private.replace_communities();

-- name: rekey_identifiers
-- Documents whose identified entities were keyed by an older rule, applied again (a page a call).
SELECT kgrag_private.rekey_identifiers(%(most)s);

-- name: apply_decisions
-- The curators' decisions (kgrag.curation): names, and the relations whose edge disagrees.
SELECT kgrag_private.apply_decisions();

-- name: refresh_answers
SELECT kgrag_private.refresh_answers();

-- name: refresh_reports
SELECT kgrag_private.refresh_reports();

-- name: refresh_lexeme_stats
SELECT kgrag.refresh_lexeme_stats();

-- name: refresh_common_words
SELECT kgrag.refresh_common_words();

-- name: refresh_chunk_spread
SELECT kgrag.refresh_chunk_spread();

-- name: refresh_alias_trigram_stats
SELECT kgrag.refresh_alias_trigram_stats();

-- name: template_reports
SELECT community_id, report FROM kgrag_private.template_reports();

-- name: set_report_text
SELECT kgrag_private.set_report_text(%s, %s, %s);

-- ---------------------------------------------------------------------------------------------
-- extraction (pgkgrag.ingest.extractors)
-- ---------------------------------------------------------------------------------------------

-- name: map_texts
-- One kgrag function of a text (canonical_name, squash, ontology_entity_type, ...) over many.
SELECT kgrag.{function}(u.x) FROM unnest(%s::text[]) WITH ORDINALITY AS u(x, i) ORDER BY u.i;

-- name: known_names
SELECT name, type, aliases FROM kgrag_private.known_names();

-- name: llm_cache_get
SELECT cache_key, response FROM kgrag_private.llm_cache_get(%s);

-- name: llm_cache_put
-- cache key, model, the validated extraction, the content hash of the chunk text.
SELECT kgrag_private.llm_cache_put(%s, %s, %s, %s);

-- name: ontology
-- The entity and relation types an LLM extraction may produce (setting ontology).
SELECT kgrag.setting('ontology');

-- ---------------------------------------------------------------------------------------------
-- search (pgkgrag.retrieval, pgkgrag.graph.picture)
-- ---------------------------------------------------------------------------------------------

-- name: kgrag_search
-- question vector, route, question text, k, options.
SELECT rank, ref_id, kind, source, score, route, reason, payload FROM kgrag.kgrag_search(%s, %s, %s, %s, %s::jsonb);

-- name: last_search
-- The route, reason and community reports of the last search of this transaction.
SELECT route, reason, COALESCE(reports, '{}') AS reports FROM kgrag.last_search();

-- name: context
-- question vector, route, question text, max_chars, k, options.
SELECT kgrag.context(%s, %s, %s, %s, %s, %s::jsonb);

-- name: cited_chunks
SELECT chunk_id, doc_id, title, text, page, headings FROM kgrag.cited_chunks(%s);

-- name: reranker
SELECT url, api, model, timeout_ms, candidates FROM kgrag.reranker();

-- name: routes
SELECT route FROM kgrag.routes();

-- ---------------------------------------------------------------------------------------------
-- answers (pgkgrag.llm.answers)
-- ---------------------------------------------------------------------------------------------

-- name: answer_settings
SELECT (kgrag.setting('answer_max_chars') #>> '{}')::integer AS max_chars,
       (kgrag.setting('answer_map_reports') #>> '{}')::integer AS map_reports;

-- name: context_blocks
-- question vector, route, question text, max_chars, k, options.
SELECT kind, ref_id, body FROM kgrag.context_blocks(%s, %s, %s, %s, %s, %s::jsonb) ORDER BY block;

-- name: report_context
-- community id, max_chars: a map step's report and the chunks it cites.
SELECT body, chunk_ids FROM kgrag.report_context(%s, %s);

-- name: check_citations
-- cited chunk ids, the chunk ids sent.
SELECT chunk_id, status, doc_id, title, quote, page, headings, source FROM kgrag.check_citations(%s, %s);

-- name: log_answer
SELECT kgrag.log_answer(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);

-- name: neighbourhood
-- seeds, hops, degree cap, relations, direction.
SELECT entity_id, name, hop, src, rel, dst, evidence_chunk_id, evidence_quote
  FROM kgrag.neighbourhood(%s, %s, %s, %s, NULL, %s);

-- ---------------------------------------------------------------------------------------------
-- tenants (pgkgrag.graph.totals, pgkgrag.graph.entities)
-- ---------------------------------------------------------------------------------------------

-- name: tenants
-- The tenants that hold documents, and how many (needs no tenant set).
SELECT tenant_id, documents FROM kgrag.tenants();

-- name: entity_card
-- An entity by id, name or alias (kgrag.resolve_entities refuses an unknown or ambiguous one).
SELECT entity_id, name, type, description, aliases, degree, answer, answer_chunk_id, community_title,
       answer_stale, no_community
  FROM kgrag.entities WHERE entity_id = (kgrag.resolve_entities(ARRAY[%s]))[1];

-- name: entity_edges
-- Its strongest edges, stated relations first: both ways for those, out for co-occurrence (stored both ways).
SELECT src_name, rel, dst_name, weight, evidence_chunk_id FROM kgrag.edges
 WHERE src = %(id)s OR (dst = %(id)s AND rel <> 'CO_OCCURS')
 ORDER BY rel = 'CO_OCCURS', weight DESC, rel, src, dst LIMIT 20;

-- name: staleness
SELECT what, how_many, fix FROM kgrag.staleness;

-- name: graph_totals
-- One tenant's counts.
SELECT documents, chunks, entities, edges, communities, reports FROM kgrag.graph_totals();

-- name: purge
SELECT kgrag.purge();

-- name: log_llm_calls
-- The LLM calls made for the current tenant (kgrag.llm_call; kgrag.llm_cost sums them).
SELECT kgrag_private.log_llm_calls(%s);

-- name: claim_tickets
-- Up to a page of the tenant's queued tickets, claimed by this session (pgkgrag worker).
SELECT ticket, doc_id, document, attempts FROM kgrag_private.claim_tickets(%s);

-- name: settle_tickets
SELECT kgrag_private.settle_tickets(%s);

-- name: submit_document
SELECT kgrag.submit_document(%s);

-- name: ticket_state
SELECT ticket, doc_id, state, attempts, reason, submitted_at, finished_at FROM kgrag.ingest_queue WHERE ticket = %s;

-- name: queue_states
-- The tenant's tickets by state; "waiting": queued after an endpoint failed them (the breaker).
SELECT CASE WHEN state = 'queued' AND not_before > now() AND reason LIKE 'waiting %%' THEN 'waiting' ELSE state END,
       count(*)
  FROM kgrag.ingest_queue GROUP BY 1 ORDER BY 1;

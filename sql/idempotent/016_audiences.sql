-- Audiences inside a tenant (revision 0042): a document may be for groups (kgrag.document.access);
-- a session sees it when it holds one of them (kgrag.current_groups, in 002_tenancy.kept.sql, with
-- the policies' helpers and the names of the groups' roles). The schema owner grants groups to login roles (kgrag.grant_groups), an
-- API key carries them (kgrag.create_key), and a transaction may narrow what it holds
-- (kgrag.use_groups) for the end user it acts for.
--
-- A document for an audience is found by its chunks (vector, full text, counts) by those who hold
-- its groups; what was extracted from it is kept on the document (kgrag.document.extraction) and
-- stays out of the shared graph, so no entity, relation, description, answer or report tells
-- anything of it to anyone (docs/audiences.md).

CREATE OR REPLACE FUNCTION kgrag_private.checked_groups(groups text[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF groups IS NULL OR pg_catalog.cardinality(groups) > 32
       OR EXISTS (SELECT 1 FROM pg_catalog.unnest(groups) AS g(x) WHERE x IS NULL OR x !~ '^[a-z0-9][a-z0-9_.-]{0,62}$') THEN
        RAISE EXCEPTION 'groups are 0 to 32 names of 1-63 lower-case letters, digits or _.- (starting with a letter or digit), got %',
            COALESCE(pg_catalog.quote_literal(groups::text), 'NULL') USING ERRCODE = '22023';
    END IF;
    RETURN ARRAY(SELECT DISTINCT x FROM pg_catalog.unnest(groups) AS g(x) ORDER BY 1);
END
$$;
COMMENT ON FUNCTION kgrag_private.checked_groups(text[]) IS
'Private. Returns a list of groups sorted and without repeats; raises 22023 for more than 32, a NULL, or a name that is not 1-63 lower-case letters, digits or _.- starting with a letter or digit.';

CREATE OR REPLACE FUNCTION kgrag_private.checked_grant(role_name text, tenant text, groups text[]) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF to_regrole(quote_ident(role_name)) IS NULL THEN
        RAISE EXCEPTION 'role % does not exist', COALESCE(quote_ident(role_name), 'NULL') USING ERRCODE = '42704';
    END IF;
    IF tenant IS NULL OR tenant = '*' OR NOT kgrag_private.is_tenant_name(tenant) THEN
        RAISE EXCEPTION 'invalid tenant %', COALESCE(quote_literal(tenant), 'NULL') USING ERRCODE = '22023';
    END IF;
    RETURN kgrag_private.checked_groups(groups);
END
$$;
COMMENT ON FUNCTION kgrag_private.checked_grant(text, text, text[]) IS
'Private. Returns the groups of a grant or revoke of groups, sorted and without repeats (kgrag_private.checked_groups), after checking that the role exists (42704) and the tenant is a tenant''s name, not ''*'' (22023). For kgrag.grant_groups and kgrag.revoke_groups.';

CREATE OR REPLACE FUNCTION kgrag.grant_groups(role_name text, tenant text, groups text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    g text;
    group_role text;
    granted integer := 0;
BEGIN
    groups := kgrag_private.checked_grant(role_name, tenant, groups);
    -- a group is a tenant's: its holder must act for that tenant first (which also takes the role
    -- to the workers of a Citus cluster, so the memberships below reach them)
    IF to_regrole(kgrag_private.tenant_role(tenant)) IS NULL
       OR NOT pg_has_role(to_regrole(quote_ident(role_name)), to_regrole(kgrag_private.tenant_role(tenant)), 'MEMBER') THEN
        RAISE EXCEPTION 'role % may not act for tenant %', quote_ident(role_name), quote_literal(tenant)
            USING ERRCODE = '42501', HINT = format('Grant the tenant first: SELECT kgrag.grant_tenant(%L, %L);', role_name, tenant);
    END IF;
    FOREACH g IN ARRAY groups LOOP
        group_role := kgrag_private.group_role(tenant, g);
        IF to_regrole(group_role) IS NULL THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', group_role);
            EXECUTE format('COMMENT ON ROLE %I IS %L', group_role,
                format('pgkgrag: holds group %s of tenant %s of database %s', g, tenant, current_database()));
        END IF;
        INSERT INTO kgrag_private.audience (tenant_id, group_name, role_name) VALUES (tenant, g, group_role)
        ON CONFLICT DO NOTHING;
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members AS m
                        WHERE m.roleid = to_regrole(group_role) AND m.member = to_regrole(quote_ident(role_name))) THEN
            EXECUTE format('GRANT %I TO %I', group_role, role_name);
            granted := granted + 1;
        END IF;
    END LOOP;
    RETURN granted;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.grant_groups(text, text, text[]) FROM PUBLIC;
COMMENT ON FUNCTION kgrag.grant_groups(text, text, text[]) IS
'Lets a login role (and every role that is a member of it) hold groups of a tenant it may act for (kgrag.grant_tenant first, else 42501): it then sees the documents for those groups (kgrag.document.access, kgrag.current_groups). Each group is a role (kgrag_private.group_role, created on its first grant, listed in kgrag_private.audience); the grantee becomes a member. Returns how many grants are new. For the schema owner (it needs CREATEROLE).';

CREATE OR REPLACE FUNCTION kgrag.revoke_groups(role_name text, tenant text, groups text[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    g text;
    group_role text;
    revoked integer := 0;
BEGIN
    groups := kgrag_private.checked_grant(role_name, tenant, groups);
    FOREACH g IN ARRAY groups LOOP
        group_role := kgrag_private.group_role(tenant, g);
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members AS m
                    WHERE m.roleid = to_regrole(group_role) AND m.member = to_regrole(quote_ident(role_name))) THEN
            EXECUTE format('REVOKE %I FROM %I', group_role, role_name);
            revoked := revoked + 1;
        END IF;
    END LOOP;
    RETURN revoked;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.revoke_groups(text, text, text[]) FROM PUBLIC;
COMMENT ON FUNCTION kgrag.revoke_groups(text, text, text[]) IS
'Takes back groups kgrag.grant_groups granted to a role for a tenant: from its next transaction on it no longer sees their documents. Returns how many it held. For the schema owner.';

CREATE OR REPLACE FUNCTION kgrag.use_groups(groups text[]) RETURNS text[]
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    held text[] := kgrag_private.groups_for(kgrag.current_tenant());  -- (fails closed without a tenant)
    missing text[];
BEGIN
    groups := kgrag_private.checked_groups(groups);
    missing := ARRAY(SELECT x FROM unnest(groups) AS g(x) WHERE NOT (x = ANY (held) OR held = ARRAY['*']));
    IF cardinality(missing) > 0 THEN
        RAISE EXCEPTION 'this transaction does not hold group %', quote_literal(missing[1])
            USING ERRCODE = '42501',
                  HINT = 'A narrowing is within what the role or key holds (SELECT kgrag.current_groups();): the schema owner grants groups (kgrag.grant_groups) or gives a key them (pgkgrag keys create --group).';
    END IF;
    -- SET LOCAL (Citus passes it on to the workers); ',' stands for no group at all
    EXECUTE format('SET LOCAL kgrag.groups TO %L', CASE WHEN cardinality(groups) = 0 THEN ',' ELSE array_to_string(groups, ',') END);
    RETURN kgrag.current_groups();
END
$$;
COMMENT ON FUNCTION kgrag.use_groups(text[]) IS
'Narrows, for the rest of the transaction, the groups it holds to those named (an application that connects as one role and acts for its end users names the user''s groups after kgrag.use_tenant or kgrag.use_key) and returns them; {} holds none, so only documents for everyone are seen. A narrowing only narrows: a group the role or key does not hold is refused (42501), and a second call narrows what the first left. 22023 for a name that is not a group''s.';

CREATE OR REPLACE FUNCTION kgrag_private.check_audiences(groups text[]) RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    held text[] := kgrag_private.groups_for(kgrag.current_tenant());
    missing text;
BEGIN
    SELECT x INTO missing FROM unnest(groups) AS g(x) WHERE NOT (x = ANY (held) OR held = ARRAY['*']) ORDER BY 1 LIMIT 1;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'this transaction does not hold group %, so it may not write documents for it', quote_literal(missing)
            USING ERRCODE = '42501',
                  HINT = 'A writer writes documents for the groups it holds (kgrag.current_groups): the schema owner grants them (kgrag.grant_groups, or a key''s --group).';
    END IF;
END
$$;
COMMENT ON FUNCTION kgrag_private.check_audiences(text[]) IS
'Private. Raises 42501 naming the first of these groups the transaction does not hold (kgrag.current_groups): a document is written only for audiences its writer holds (the policy of kgrag.document refuses the row too, less clearly).';

CREATE OR REPLACE FUNCTION kgrag_private.stage_stored(doc_ids text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();
BEGIN
    -- the documents as they are stored, with what was extracted from them (no extraction, no
    -- embedding): kgrag_private.ingest_apply applies them again
    INSERT INTO pg_temp.kgrag_stage_document (doc_id, title, source_uri, metadata, lang, content_hash, access)
    SELECT d.doc_id, d.title, d.source_uri, d.metadata, d.lang::text, d.content_hash, d.access
      FROM kgrag.document AS d WHERE d.tenant_id = t AND d.doc_id = ANY (doc_ids);
    INSERT INTO pg_temp.kgrag_stage_chunk (doc_id, ordinal, char_start, char_end, title, text, content_hash, embedding,
                                           page, headings)
    SELECT c.doc_id, c.ordinal, c.char_start, c.char_end, c.title, c.text, c.content_hash, c.embedding, c.page, c.headings
      FROM kgrag.chunk AS c WHERE c.tenant_id = t AND c.doc_id = ANY (doc_ids);
    INSERT INTO pg_temp.kgrag_stage_entity (doc_id, name, type, description, answer, answer_ordinal, aliases, ordinals,
                                            identifier)
    SELECT x.doc_id, x.name, x.type, x.description, x.answer, x.answer_ordinal, x.aliases, x.ordinals, x.identifier
      FROM kgrag.document AS d
     CROSS JOIN LATERAL pg_catalog.jsonb_populate_recordset(NULL::pg_temp.kgrag_stage_entity, d.extraction -> 'entities') AS x
     WHERE d.tenant_id = t AND d.doc_id = ANY (doc_ids);
    INSERT INTO pg_temp.kgrag_stage_relation
    SELECT x.* FROM kgrag.document AS d
     CROSS JOIN LATERAL pg_catalog.jsonb_populate_recordset(NULL::pg_temp.kgrag_stage_relation, d.extraction -> 'relations') AS x
     WHERE d.tenant_id = t AND d.doc_id = ANY (doc_ids);
    INSERT INTO pg_temp.kgrag_stage_set_aside
    SELECT x.* FROM kgrag.document AS d
     CROSS JOIN LATERAL pg_catalog.jsonb_populate_recordset(NULL::pg_temp.kgrag_stage_set_aside, d.extraction -> 'set_aside') AS x
     WHERE d.tenant_id = t AND d.doc_id = ANY (doc_ids);
END
$$;
COMMENT ON FUNCTION kgrag_private.stage_stored(text[]) IS
'Private. Returns nothing; stages these documents of the current tenant (those the caller sees, with a kept extraction: kgrag.document.extraction) as they are stored: their rows, chunks with their vectors, and the entities, relations and what was set aside that were extracted from them, so that kgrag_private.ingest_apply applies them again without extracting or embedding anything. For kgrag.set_access and kgrag_private.rekey_identifiers; the caller has called kgrag_private.stage_begin on an empty batch.';

CREATE OR REPLACE FUNCTION kgrag.set_access(doc_ids text[], groups text[]) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
DECLARE
    t text := kgrag.current_tenant();
    held text[] := kgrag_private.groups_for(t);  -- the caller's (session_user's, or its key's)
    target text[];
    moving text[];
    into_audience text[];  -- documents for everyone going into an audience
    unkept text;
    noted jsonb;
    counts jsonb;
BEGIN
    -- As the schema owner (SECURITY DEFINER), as kgrag.delete_documents: the decisions about a
    -- document going into an audience end and the query log forgets it, which no tenant role may
    -- do itself. The caller names documents it sees, for groups it holds, nothing else.
    PERFORM kgrag_private.check_writing(t);
    PERFORM kgrag_private.own_scratch();
    IF doc_ids IS NULL OR pg_catalog.cardinality(doc_ids) > 100000 THEN
        RAISE EXCEPTION 'name 0 to 100,000 documents a call, got %', COALESCE(pg_catalog.cardinality(doc_ids)::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    target := NULLIF(kgrag_private.checked_groups(COALESCE(groups, '{}')), '{}');
    PERFORM kgrag_private.check_audiences(COALESCE(target, '{}'));
    -- the documents the caller sees whose audience changes, in doc_id order (as the owner every row
    -- is visible: the caller's groups are checked here)
    -- (and those for this audience already that were stored before revision 0044, when a document
    -- for an audience gave no graph: their entities are its graph's now)
    moving := ARRAY(SELECT d.doc_id FROM kgrag.document AS d
                     WHERE d.tenant_id = t AND d.doc_id = ANY (doc_ids) AND kgrag_private.sees(d.access, held)
                       AND (d.access IS DISTINCT FROM target
                            OR (d.access IS NOT NULL AND pg_catalog.jsonb_array_length(d.extraction -> 'entities') > 0
                                AND NOT EXISTS (SELECT 1 FROM kgrag.entity_source AS x
                                                 WHERE x.tenant_id = t AND x.doc_id = d.doc_id)))
                     ORDER BY d.doc_id COLLATE "C");
    IF pg_catalog.cardinality(moving) = 0 THEN
        RETURN pg_catalog.jsonb_build_object('moved', 0);
    END IF;
    SELECT d.doc_id INTO unkept FROM kgrag.document AS d
     WHERE d.tenant_id = t AND d.doc_id = ANY (moving) AND d.extraction IS NULL ORDER BY d.doc_id COLLATE "C" LIMIT 1;
    IF unkept IS NOT NULL THEN
        RAISE EXCEPTION 'document % was stored before revision 0042 and keeps no extraction to move', pg_catalog.quote_literal(unkept)
            USING ERRCODE = '55000',
                  HINT = 'Ingest it again with its audience (pgkgrag ingest PATH --access GROUP, or "access" in its JSONL line).';
    END IF;
    into_audience := ARRAY(SELECT d.doc_id FROM kgrag.document AS d
                            WHERE d.tenant_id = t AND d.doc_id = ANY (moving) AND d.access IS NULL AND target IS NOT NULL
                            ORDER BY d.doc_id COLLATE "C");
    noted := kgrag_private.forgettable(into_audience);
    PERFORM kgrag_private.stage_begin();
    IF EXISTS (SELECT 1 FROM pg_temp.kgrag_stage_document) THEN
        RAISE EXCEPTION 'an ingestion batch is staged in this transaction: move documents in a transaction of their own'
            USING ERRCODE = '55000';
    END IF;
    -- the documents go in again as they are stored, with their new audience and what was
    -- extracted from them (no extraction, no embedding): kgrag_private.ingest_apply does the rest
    PERFORM kgrag_private.stage_stored(moving);
    UPDATE pg_temp.kgrag_stage_document SET access = target;
    counts := pg_catalog.jsonb_build_object('moved', pg_catalog.cardinality(moving), 'access', target)
              || kgrag_private.ingest_apply();
    IF pg_catalog.cardinality(into_audience) > 0 THEN
        -- nothing of them stays for everyone: what was decided about them (kept for the audience,
        -- kgrag.curation_ended), the answers a person saw, the communities they fed (until the
        -- next build) and what the query log says of them
        PERFORM kgrag_private.retract_documents(into_audience);
        PERFORM kgrag_private.end_decisions(into_audience);
        counts := counts || pg_catalog.jsonb_build_object('graph', kgrag_private.refresh_graph());
        PERFORM kgrag_private.end_entity_decisions(ARRAY(SELECT pg_catalog.jsonb_array_elements_text(noted -> 'entities')));
        PERFORM kgrag_private.delete_communities(ARRAY(SELECT c.community_id FROM kgrag.community AS c WHERE c.tenant_id = t AND c.stale));
        PERFORM kgrag_private.forget_in_logs(noted);
    END IF;
    RETURN counts;
END
$$;
REVOKE EXECUTE ON FUNCTION kgrag.set_access(text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.set_access(text[], text[]) TO kgrag_writer;
COMMENT ON FUNCTION kgrag.set_access(text[], text[]) IS
'Changes the audience of documents of the current tenant, in one transaction, without extracting them again: groups (1 to 32) make them for those groups only (a session sees them when it holds one, kgrag.current_groups), NULL or {} for everyone. A document for everyone contributes to the shared graph, one for an audience to that audience''s graph (its entities'' ids marked with the audience, read by its holders alone: kgrag_private.id_access): what was extracted from it (kgrag.document.extraction) moves from one to the other, with everything derived (entities, relations, aliases, answers; communities and reports at the next build). A document already for those groups that was stored before revision 0044, and so gave no graph, is applied again into its audience''s graph. A document going into an audience leaves nothing for everyone: the decisions about it end (kgrag.curation_ended, read by its audience), the communities it fed go until the next build, and the query log forgets it (kgrag_private.forget_in_logs). Documents the caller does not see are ignored, and so are unknown ids; the caller must hold every group it names and every group a document it moves is for (42501); a document stored before revision 0042 is refused (55000: ingest it again); so is a reader''s API key (42501). Returns {"moved": n, "access": groups, ...} with the counts of kgrag_private.ingest_apply. SECURITY DEFINER, owned by the schema owner, on the allow-list: it ends decisions and redacts the query log, as kgrag.delete_documents does. For kgrag_writer.';

CREATE OR REPLACE FUNCTION kgrag_private.seen_audiences(tenant text) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
SET plan_cache_mode = force_custom_plan  -- see kgrag_private.search_at: no generic plan of a one-shard read
AS $$
DECLARE
    held text[];
    most constant integer := 500;  -- distinct audiences read, at most
    every text[];
BEGIN
    IF tenant IS DISTINCT FROM kgrag.current_tenant() THEN  -- (raises when no tenant is set)
        RAISE EXCEPTION 'the audiences of tenant % are listed only in a transaction for it (kgrag.use_tenant)',
            COALESCE(pg_catalog.quote_literal(tenant), 'NULL') USING ERRCODE = '42501';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM kgrag.chunk AS c WHERE c.tenant_id = tenant AND c.audience IS NOT NULL) THEN
        RETURN '{}';  -- a tenant without audiences (one index probe): nobody's groups to read
    END IF;
    held := kgrag_private.groups_for(tenant);
    IF held = ARRAY['*'] THEN
        RETURN NULL;  -- every audience: no list needed
    ELSIF pg_catalog.cardinality(held) = 0 THEN
        RETURN '{}';
    END IF;
    -- the tenant's distinct audiences, one index probe each (chunk_audience_idx)
    WITH RECURSIVE d(k, n) AS (
        (SELECT c.audience, 1 FROM kgrag.chunk AS c
          WHERE c.tenant_id = tenant AND c.audience IS NOT NULL ORDER BY c.audience LIMIT 1)
        UNION ALL
        SELECT (SELECT c.audience FROM kgrag.chunk AS c
                 WHERE c.tenant_id = tenant AND c.audience OPERATOR(pg_catalog.>) d.k
                 ORDER BY c.audience LIMIT 1), d.n + 1
          FROM d WHERE d.k IS NOT NULL AND d.n <= most
    )
    SELECT pg_catalog.array_agg(d.k ORDER BY d.k) INTO every FROM d WHERE d.k IS NOT NULL;
    IF pg_catalog.cardinality(every) > most THEN
        RETURN NULL;  -- too many to list: the caller filters row by row (kgrag_private.may_see)
    END IF;
    RETURN ARRAY(SELECT k FROM pg_catalog.unnest(every) AS u(k)
                  WHERE pg_catalog.string_to_array(k, ',') OPERATOR(pg_catalog.&&) held ORDER BY k);
END
$$;
GRANT CREATE ON SCHEMA kgrag_private TO kgrag_probe;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag_private.seen_audiences(text) OWNER TO kgrag_probe;
REVOKE CREATE ON SCHEMA kgrag_private FROM kgrag_probe;
REVOKE EXECUTE ON FUNCTION kgrag_private.seen_audiences(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag_private.seen_audiences(text) TO kgrag_probe;  -- its callers are kgrag_probe's
COMMENT ON FUNCTION kgrag_private.seen_audiences(text) IS
'Private. Returns the audiences (kgrag.chunk.audience) of the current tenant''s chunks (another tenant''s name: 42501) that the current transaction sees, those naming a group it holds (kgrag_private.groups_for), sorted; {} when it holds none; NULL when it holds every group (the schema owner) or the tenant has more than 500 distinct audiences (then a caller filters row by row, kgrag_private.may_see). With it kgrag_private.fts_probe and kgrag_private.audience_nearest find a session''s chunks through chunk_audience_idx instead of reading every chunk of the tenant. SECURITY DEFINER, owned by kgrag_probe (on the allow-list), because listing a tenant''s audiences reads past the audience policy; it returns only audiences that name a group the caller holds, nothing of a row. Executable by kgrag_probe alone: kgrag_private.fts_probe and kgrag_private.audience_nearest call it.';

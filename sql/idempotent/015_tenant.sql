-- What a tenant holds, counted; and the tenant a delegated call is made for.

CREATE OR REPLACE FUNCTION kgrag_private.check_delegated_tenant(tenant text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    acting text := kgrag.current_tenant();  -- fails closed where the transaction acts for no tenant
BEGIN
    IF tenant IS DISTINCT FROM acting THEN
        RAISE EXCEPTION 'this transaction acts for tenant %, not for %', quote_literal(acting),
                        COALESCE(quote_literal(tenant), 'NULL')
            USING ERRCODE = '42501',
                  HINT = 'Call the public function (kgrag.kgrag_search, kgrag.context, ...): it passes the tenant of kgrag.use_tenant.';
    END IF;
    RETURN acting;
END
$$;
COMMENT ON FUNCTION kgrag_private.check_delegated_tenant(text) IS
'Private. Returns the tenant the transaction acts for (kgrag.current_tenant) when it is the tenant named, and raises 42501 otherwise. The functions a public one delegates to (their first argument is the tenant: on a Citus cluster, what sends the call to the worker holding its shards, kgrag_private.delegate_calls) check it first, so that naming another tenant reaches nothing; row-level security holds as well.';

CREATE OR REPLACE FUNCTION kgrag.graph_totals()
RETURNS TABLE (documents bigint, chunks bigint, entities bigint, edges bigint, communities bigint, reports bigint)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
DECLARE
    t text := kgrag.current_tenant();  -- a bound value: Citus routes the query to one shard
BEGIN
    RETURN QUERY
    SELECT (SELECT count(*) FROM kgrag.document AS d WHERE d.tenant_id = t),
           (SELECT count(*) FROM kgrag.chunk AS c WHERE c.tenant_id = t),
           (SELECT count(*) FROM kgrag.entity AS e WHERE e.tenant_id = t),
           (SELECT count(*) FROM kgrag.edge AS g WHERE g.tenant_id = t),
           (SELECT count(*) FROM kgrag.community AS m WHERE m.tenant_id = t),
           (SELECT count(*) FROM kgrag.community_report AS r WHERE r.tenant_id = t);
END
$$;
COMMENT ON FUNCTION kgrag.graph_totals() IS
'Returns how big the current tenant''s graph is: (documents, chunks, entities, edges, communities, reports). Edges count both directions of a co-occurrence.';

CREATE OR REPLACE FUNCTION kgrag.tenants()
RETURNS TABLE (tenant_id text, documents bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp  -- a SECURITY DEFINER path: nothing a caller can write
AS $$
    -- (the documents of each tenant the caller sees: the groups it holds there, kgrag_private.groups_for)
    SELECT d.tenant_id, count(*) FILTER (WHERE d.access IS NULL OR kgrag_private.may_see(d.tenant_id, d.access))
      FROM kgrag.document AS d
     GROUP BY d.tenant_id HAVING kgrag_private.may_use_tenant(d.tenant_id)
     ORDER BY d.tenant_id
$$;
GRANT CREATE ON SCHEMA kgrag TO kgrag_probe;  -- a new owner must be able to create in the schema
ALTER FUNCTION kgrag.tenants() OWNER TO kgrag_probe;
REVOKE CREATE ON SCHEMA kgrag FROM kgrag_probe;
REVOKE EXECUTE ON FUNCTION kgrag.tenants() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kgrag.tenants() TO kgrag_reader, kgrag_writer, kgrag_curator;
COMMENT ON FUNCTION kgrag.tenants() IS
'Returns the tenants that hold documents and that the session''s role may act for (kgrag.grant_tenant), with how many of their documents it sees (those for everyone, and those for a group it holds there: kgrag_private.groups_for): (tenant_id, documents). Needs no tenant set. SECURITY DEFINER, owned by kgrag_probe (on the allow-list), because listing tenants reads past the tenant policy; it returns names and counts, nothing of their contents. For a tenant''s own counts, kgrag.graph_totals().';

-- What a tenant holds, counted.

CREATE OR REPLACE FUNCTION kgrag.graph_totals()
RETURNS TABLE (documents bigint, chunks bigint, entities bigint, edges bigint, communities bigint, reports bigint)
LANGUAGE sql STABLE SECURITY INVOKER
SET search_path FROM CURRENT
AS $$
    SELECT (SELECT count(*) FROM kgrag.document AS d WHERE d.tenant_id = kgrag.current_tenant()),
           (SELECT count(*) FROM kgrag.chunk AS c WHERE c.tenant_id = kgrag.current_tenant()),
           (SELECT count(*) FROM kgrag.entity AS e WHERE e.tenant_id = kgrag.current_tenant()),
           (SELECT count(*) FROM kgrag.edge AS g WHERE g.tenant_id = kgrag.current_tenant()),
           (SELECT count(*) FROM kgrag.community AS m WHERE m.tenant_id = kgrag.current_tenant()),
           (SELECT count(*) FROM kgrag.community_report AS r WHERE r.tenant_id = kgrag.current_tenant())
$$;
COMMENT ON FUNCTION kgrag.graph_totals() IS
'Returns how big the current tenant''s graph is: (documents, chunks, entities, edges, communities, reports). Edges count both directions of a co-occurrence.';

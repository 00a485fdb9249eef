-- 0043_audience_indexes: a session that sees a few of a tenant's chunks finds them without walking the rest.
--
-- With audiences (0042) a session holding one group of twenty sees 5% of the chunks; the vector
-- index and the full-text index list every chunk, and the policy dropped the others after the
-- walk (benchmarks/audiences.py: vector list x8, lexical list x16, kgrag_search x12).
-- - kgrag.chunk.audience: the chunk's groups as one text (kgrag_private.audience_key; NULL: for
--   everyone), stored, so an index holds it and a count reads the index alone;
-- - chunk_audience_idx (tenant_id, audience, with chunk_id and quantized): the chunks for everyone,
--   and those of each audience, counted, found and (binary-quantized) ranked without reading the
--   rest (kgrag_private.audience_nearest, fts_probe).
-- - kgrag.lexeme_stats.audience: the full-text statistics are counted per audience ('' for
--   everyone), each row read only by a session that sees that audience (and written only by one
--   holding all its groups: a row may not steer the search of a group the writer lacks), so
--   lexical search knows an audience's common words without telling them to anyone else (0042
--   counted documents for everyone only: a tenant whose documents were all for audiences had no
--   statistics).
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
BEGIN
    -- first created here: a column stores its results (body: sql/idempotent/002_tenancy.kept.sql)
    EXECUTE $q$
CREATE FUNCTION kgrag_private.audience_key(access text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $body$ SELECT pg_catalog.array_to_string(access, ',') $body$
$q$;
    EXECUTE 'ALTER TABLE kgrag.chunk ADD COLUMN audience text'
            ' GENERATED ALWAYS AS (kgrag_private.audience_key(access)) STORED';
    -- (with each chunk's id and quantized vector: a session's few chunks are ranked by the index alone)
    EXECUTE 'CREATE INDEX chunk_audience_idx ON kgrag.chunk (tenant_id, audience) INCLUDE (chunk_id, quantized)';
    EXECUTE $q$ALTER TABLE kgrag.lexeme_stats ADD COLUMN audience text NOT NULL DEFAULT ''
        CONSTRAINT lexeme_stats_audience_check
        CHECK (audience = '' OR audience ~ '^[a-z0-9][a-z0-9_.-]{0,62}(,[a-z0-9][a-z0-9_.-]{0,62})*$')$q$;
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats DROP CONSTRAINT lexeme_stats_pkey';
    EXECUTE 'ALTER TABLE kgrag.lexeme_stats ADD CONSTRAINT lexeme_stats_pkey PRIMARY KEY (tenant_id, lang, lexeme, audience)';
    EXECUTE $q$ALTER POLICY tenant_isolation ON kgrag.lexeme_stats
        USING (tenant_id = kgrag.current_tenant()
               AND (audience = '' OR kgrag_private.may_see(tenant_id, pg_catalog.string_to_array(audience, ','))))
        WITH CHECK (tenant_id = kgrag.current_tenant()
               AND (audience = '' OR kgrag_private.holds_all(pg_catalog.string_to_array(audience, ','),
                                                             kgrag_private.groups_for(tenant_id))))$q$;
    EXECUTE $q$COMMENT ON COLUMN kgrag.lexeme_stats.audience IS
'The audience whose chunks were counted (kgrag.chunk.audience; '''' for documents for everyone): a row is read only by a session that sees that audience, and written only by one that holds every group it names; lexical search adds up the rows it reads.'$q$;
END
$$;

-- 0036_reembed, down: the vectors made for a move go, and kgrag.use_embedder takes a name alone
-- again (created back by sql/idempotent/010_settings.sql of 0035), and the default embedder is use
-- again. Tenants keep their own embedder settings (a tenant moved to a narrower model keeps its
-- padded vectors: 0035 cannot search them).
DO $$
BEGIN
    DELETE FROM kgrag.settings WHERE key = 'embedder_floors' OR (tenant_id = '*' AND key = 'embedder_dimension');
    UPDATE kgrag.settings SET value = '"use"' WHERE tenant_id = '*' AND key = 'embedder';
    EXECUTE 'DROP TABLE kgrag.reembedding';
    EXECUTE 'DROP FUNCTION IF EXISTS kgrag.use_embedder(text, integer)';
END
$$;

-- 0036_reembed, down: the vectors made for a move go, and kgrag.use_embedder takes a name alone
-- again (created back by sql/idempotent/010_settings.sql of 0035). Tenants already moved to a
-- narrower model keep their padded vectors and their setting embedder_dimension.
DO $$
BEGIN
    EXECUTE 'DROP TABLE kgrag.reembedding';
    EXECUTE 'DROP FUNCTION IF EXISTS kgrag.use_embedder(text, integer)';
END
$$;

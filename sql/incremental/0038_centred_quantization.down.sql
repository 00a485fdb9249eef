-- 0038_centred_quantization, down: the bq indexes go back to binary_quantize(embedding), the
-- quantized columns and the setting embedder_centres go.
DO $$
DECLARE
    d integer := (SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
                   WHERE s.tenant_id = '*' AND s.key = 'embedding_dimension');
    bq boolean := COALESCE((SELECT s.value #>> '{}' FROM kgrag.settings AS s
                             WHERE s.tenant_id = '*' AND s.key = 'vector_index'), 'bq') = 'bq';
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['chunk', 'entity', 'community_report'] LOOP
        IF bq THEN
            EXECUTE pg_catalog.format('DROP INDEX kgrag.%I', t || '_embedding_bq_idx');
        END IF;
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I DROP COLUMN quantized', t);
        IF bq THEN
            EXECUTE pg_catalog.format(
                'CREATE INDEX %I ON kgrag.%I USING hnsw ((binary_quantize(embedding)::bit(%s)) bit_hamming_ops) '
                'WITH (m = 8, ef_construction = 64)', t || '_embedding_bq_idx', t, d);
        END IF;
    END LOOP;
    DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key = 'embedder_centres';
END
$$;

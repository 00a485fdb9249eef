-- 0024_vector_index down: the binary-quantized indexes again, at every dimension.
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    d integer := (SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
                   WHERE s.tenant_id = '*' AND s.key = 'embedding_dimension');
    t text;
BEGIN
    IF (SELECT s.value #>> '{}' FROM kgrag.settings AS s WHERE s.tenant_id = '*' AND s.key = 'vector_index') = 'halfvec' THEN
        FOREACH t IN ARRAY ARRAY['chunk', 'entity', 'community_report'] LOOP
            EXECUTE pg_catalog.format(
                'CREATE INDEX %I ON kgrag.%I USING hnsw ((binary_quantize(embedding)::bit(%s)) bit_hamming_ops) '
                'WITH (m = 8, ef_construction = 64)', t || '_embedding_bq_idx', t, d);
            EXECUTE pg_catalog.format('DROP INDEX kgrag.%I', t || '_embedding_half_idx');
        END LOOP;
        UPDATE kgrag.settings SET value = '30' WHERE tenant_id = '*' AND key = 'vector_overfetch';
        UPDATE kgrag.settings SET value = '100' WHERE tenant_id = '*' AND key = 'vector_min_candidates';
    END IF;
    DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key = 'vector_index';
    UPDATE kgrag.settings
       SET description = 'Vector search fetches k * vector_overfetch candidates by Hamming distance on the binary-quantized index, then re-ranks them by exact cosine.'
     WHERE tenant_id = '*' AND key = 'vector_overfetch';
END
$$;

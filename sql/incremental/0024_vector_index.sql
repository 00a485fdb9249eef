-- 0024_vector_index: the vector index chosen by measurement, per dimension.
--
-- On 50,983 real texts embedded at 512 dimensions (docs/benchmarks.md, "Vector search"), at
-- recall@10 >= 0.98: an HNSW index on the vectors cast to halfvec, its 40 best re-ranked on the
-- full vectors, answered in 2.6 ms p50 (recall 0.980), as fast as the full-vector index (2.6 ms,
-- 0.981) at half its size (66 MB against 133); the binary-quantized index took 4.1 ms for 0.980
-- (300 candidates re-ranked) at a fifth of that size (13 MB). So, by search, below the 4,000
-- dimensions pgvector indexes as halfvec the halfvec index replaces the binary-quantized one;
-- above, the binary-quantized index stays (bit indexes reach 64,000 dimensions). Inserting costs
-- the other way round (1.08 ms a row into 49k rows against 0.29 for the binary index): an
-- installer that would rather ingest faster, or keep the index small, asks for bq
-- (kgrag.install_vector_index, from pgkgrag db upgrade --vector-index). Setting vector_index names
-- the index kgrag_private.nearest queries; vector_overfetch and vector_min_candidates follow it
-- (a halfvec candidate list of 4 x k, at least 40, is as good as 300 binary ones).
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    d integer := (SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
                   WHERE s.tenant_id = '*' AND s.key = 'embedding_dimension');
    -- asked for (pgkgrag db upgrade --vector-index, alembic -x vector_index=...), else by the dimension
    kind text := COALESCE(NULLIF(pg_catalog.current_setting('kgrag.install_vector_index', true), ''),
                          CASE WHEN d <= 4000 THEN 'halfvec' ELSE 'bq' END);
    t text;
BEGIN
    IF kind = 'halfvec' AND d > 4000 THEN
        RAISE EXCEPTION 'a halfvec index reaches 4,000 dimensions and this database stores %: use the bq index', d
            USING ERRCODE = '22023';
    END IF;
    IF kind = 'halfvec' THEN
        FOREACH t IN ARRAY ARRAY['chunk', 'entity', 'community_report'] LOOP
            EXECUTE pg_catalog.format(
                'CREATE INDEX %I ON kgrag.%I USING hnsw ((embedding::halfvec(%s)) halfvec_cosine_ops) '
                'WITH (m = 16, ef_construction = 64)', t || '_embedding_half_idx', t, d);
            EXECUTE pg_catalog.format('DROP INDEX kgrag.%I', t || '_embedding_bq_idx');
        END LOOP;
        UPDATE kgrag.settings SET value = '4' WHERE tenant_id = '*' AND key = 'vector_overfetch';
        UPDATE kgrag.settings SET value = '40' WHERE tenant_id = '*' AND key = 'vector_min_candidates';
    END IF;
    INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
        ('*', 'vector_index', pg_catalog.to_jsonb(kind),
         'The vector index of the embeddings, chosen when revision 0024 ran (pgkgrag db upgrade --vector-index, else by the dimension): halfvec (HNSW on the vectors cast to halfvec, up to 4,000 dimensions) or bq (HNSW on their binary quantization; above 4,000 dimensions, or asked for). Vector search draws its candidates from it and re-ranks them on the full vectors. Set by the migration: changing it by hand does not build the other index.');
    UPDATE kgrag.settings
       SET description = 'Vector search draws k * vector_overfetch candidates from the vector index (setting vector_index), then re-ranks them by exact cosine on the full vectors.'
     WHERE tenant_id = '*' AND key = 'vector_overfetch';
END
$$;

-- 0024_vector_index: the vector index chosen by measurement, and by the installer.
--
-- On 50,983 real texts embedded at 512 dimensions (docs/benchmarks.md, "Vector search"), at
-- recall@10 >= 0.98: an HNSW index on the vectors cast to halfvec, its 40 best re-ranked on the
-- full vectors, answered in 2.6 ms p50 (recall 0.980), as fast as the full-vector index (2.6 ms,
-- 0.981) at half its size (66 MB against 133); the binary-quantized index took 4.1 ms for 0.980
-- (300 candidates re-ranked), at a fifth of the halfvec's size (13 MB), built in 3.5 s against
-- 8.9, and a row cost 0.29 ms to insert into it against 1.08: ingestion from an empty database
-- to 197k chunks ran at 596 chunks/s on average with it against 305 (benchmarks/growth.py
-- --vector-index both, the same batches in turn). The binary index wins
-- three measures of four and the one it loses by a few milliseconds of a search that takes tens,
-- so it stays the default at every dimension (bit indexes reach 64,000); an installer that wants
-- the fastest search asks for halfvec (kgrag.install_vector_index, from pgkgrag db upgrade
-- --vector-index halfvec), up to the 4,000 dimensions pgvector indexes as halfvec. Setting
-- vector_index names the index kgrag_private.nearest queries; with halfvec, vector_overfetch and
-- vector_min_candidates follow it (4 x k candidates, at least 40, are as good as 300 binary ones).
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    d integer := (SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
                   WHERE s.tenant_id = '*' AND s.key = 'embedding_dimension');
    -- asked for (pgkgrag db upgrade --vector-index, alembic -x vector_index=...), else binary
    kind text := COALESCE(NULLIF(pg_catalog.current_setting('kgrag.install_vector_index', true), ''), 'bq');
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
         'The vector index of the embeddings, chosen when revision 0024 ran (pgkgrag db upgrade --vector-index): bq (HNSW on their binary quantization, the default) or halfvec (HNSW on the vectors cast to halfvec, up to 4,000 dimensions: faster to search, five times the size, slower to insert into). Vector search draws its candidates from it and re-ranks them on the full vectors. Set by the migration: changing it by hand does not build the other index.');
    UPDATE kgrag.settings
       SET description = 'Vector search draws k * vector_overfetch candidates from the vector index (setting vector_index), then re-ranks them by exact cosine on the full vectors.'
     WHERE tenant_id = '*' AND key = 'vector_overfetch';
END
$$;

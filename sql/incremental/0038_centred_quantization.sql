-- 0038_centred_quantization: the binary-quantized index codes each vector less its embedder's centre.
--
-- e5's vectors share a common component (the norm of their mean is near 0.9): quantized as they
-- are, most of their bits are the same in every vector, and the Hamming candidates missed what the
-- exact cosine finds (brute force on the multi-hop sets, 150 candidates: MuSiQue recall@5 54.8
-- against 61.7 exact, HotpotQA 83.5 against 87.5; less the centre: 60.7 and 87.5;
-- benchmarks/centre.py, docs/benchmarks.md). The centre depends on the embedder, and tenants of
-- several embedders share the columns, so the code of each vector is stored beside it:
--
-- - Setting embedder_centres (tenant '*'): {"embedder": [centre]}; e5's is the mean of its vectors
--   of the shipped sample corpus (python benchmarks/centre.py --print-centre e5). USE's vectors
--   have no common component to speak of (their mean's norm is 0.4, and its centre changes no
--   figure), and no other embedder has one: their vectors are quantized as they are.
-- - kgrag.chunk, kgrag.entity, kgrag.community_report: column quantized bit(D), the binary
--   quantization of the embedding less its tenant's embedder's centre (kgrag.quantize), NULL exactly
--   when the embedding is (a CHECK: a vector written without its code would never be found through
--   the index); the bq indexes move from binary_quantize(embedding) to it, under the same names.
--   The exact re-rank still compares the vectors themselves: no similarity, floor or answer changes.
--
-- One statement (a DO block), each DDL through EXECUTE: see 0021_edge_rank_index.sql (Citus).
DO $$
DECLARE
    d integer := (SELECT (s.value #>> '{}')::integer FROM kgrag.settings AS s
                   WHERE s.tenant_id = '*' AND s.key = 'embedding_dimension');
    bq boolean := COALESCE((SELECT s.value #>> '{}' FROM kgrag.settings AS s
                             WHERE s.tenant_id = '*' AND s.key = 'vector_index'), 'bq') = 'bq';
    e5 vector := '[0.01751, -0.02371, -0.04249, -0.04649, 0.04726, -0.041, 0.02629, 0.04021, 0.06382, -0.01161, 0.04204, 0.02629, 0.04957, -0.02593, -0.04483, 0.05876, 0.03727, -0.03953, -0.01192, -0.06863, 0.02912, 0.00962, -0.03614, 0.04201, 0.06295, 0.07294, -0.03168, -0.00602, 0.04052, -0.08184, -0.05625, -0.02523, 0.03417, -0.06994, 0.04221, 0.01714, -0.03562, -0.05611, 0.05088, -0.05649, -0.01548, 0.03747, 0.03311, 0.05629, 0.03199, 0.04228, -0.04031, 0.02285, -0.03773, -0.02868, -0.02277, 0.06232, 0.01238, 0.02216, 0.04398, -0.05886, -0.07631, -0.07118, -0.05579, 0.02528, 0.0473, -0.02977, 0.02929, 0.0297, 0.08975, 0.05916, 0.04782, 0.06223, -0.07485, -0.03009, -0.07137, 0.06136, 0.00436, -0.02342, 0.00699, 0.04314, 0.0258, -0.04853, 0.01484, -0.03372, -0.05279, -0.03632, -0.03551, 0.03269, -0.04941, 0.04688, 0.04379, -0.06967, 0.06482, -0.02112, 0.06389, 0.02487, -0.03499, -0.06111, -0.06831, -0.08228, -0.0341, 0.03582, 0.05003, -0.0386, 0.06192, -0.03656, 0.06814, -0.05049, -0.01826, 0.04754, 0.02375, -0.07402, 0.05522, -0.05301, -0.06657, 0.0393, 0.08265, 0.04465, -0.05406, -0.03434, 0.00395, -0.07409, 0.03269, -0.02193, 0.03706, -0.03003, -0.04817, -0.07421, -0.05714, -0.04862, 0.02607, 0.04367, 0.03147, 0.00253, 0.01164, 0.00935, 0.02861, 0.04446, 0.03981, 0.06095, -0.06965, -0.00543, -0.01625, 0.01001, -0.04462, 0.05287, -0.02746, 0.05911, 0.07248, 0.03266, 0.08621, -0.04326, 0.07389, -0.03285, 0.05522, -0.03095, 0.07647, 0.04533, 0.02609, -0.04116, -0.04927, -0.02194, 0.04574, 0.05239, -0.04384, -0.04579, -0.07065, -0.01963, -0.05479, 0.00419, 0.00567, 0.05223, -0.03053, -0.0254, -0.04491, 0.03484, -0.03137, 0.04748, -0.00669, 0.05864, -0.05839, 0.02516, 0.07274, 0.05359, -0.02442, -0.04686, -0.04859, -0.06894, -0.07271, -0.06527, -0.04762, 0.03906, -0.00781, -0.01503, -0.00686, 0.03041, -0.02286, -0.049, -0.06584, 0.02985, -0.04882, 0.05196, 0.05386, 0.04593, -0.01427, -0.01199, 0.03563, 0.04188, 0.01213, -0.00464, -0.06238, 0.06091, -0.05414, 0.03173, 0.0622, -0.05205, -0.0424, 0.04815, -0.01712, -0.03556, -2e-05, 0.05311, -0.02231, 0.04646, 0.03557, -0.00859, 0.03232, -0.1024, -0.06663, 0.0379, 0.05447, -0.04983, -0.0296, 0.04962, -0.03745, -0.05191, -0.08008, -0.07348, -0.05604, -0.05186, -0.01315, 0.04365, 0.02707, -0.05573, -0.05259, -0.02884, 0.0304, -0.06225, 0.04636, -0.02509, -0.03557, 0.01415, -0.00182, 0.03053, 0.02867, -0.0633, -0.03787, -0.03003, -0.03369, 0.0553, 0.03677, 0.10024, -0.04102, 0.03682, -0.00666, -0.03601, 0.08792, 0.02829, 0.03999, 0.02319, -0.04269, -0.01396, -0.04795, -0.03482, -0.05899, 0.03435, 0.01553, -0.05757, -0.07472, -0.04737, 0.01791, 0.06882, -0.04355, -0.02265, 0.06043, 0.01872, 0.05339, 0.07589, 0.06537, 0.00203, -0.01909, 0.06476, -0.0487, -0.03878, -0.01681, -0.07012, 0.04678, -0.03198, 0.06208, 0.03616, 0.00323, 0.06981, -0.01904, 0.04107, -0.02725, -0.03242, 0.02785, 0.05112, -0.08353, 0.01716, 0.01045, 0.04505, 0.01506, 0.02972, 0.04665, 0.04829, -0.03661, -0.03597, 0.03844, 0.07649, 0.01, 0.04328, -0.03462, -0.05636, -0.04283, -0.05931, 0.00113, -0.03385, 0.0315, 0.04214, -0.05918, -0.04395, 0.02411, -0.00071, 0.0245, -0.04043, -0.03319, 0.05291, -0.06556, -0.02851, -0.01008, 0.05737, -0.04483, -0.06725, 0.02639, 0.04984, -0.05594, 0.0348, -0.02296, -0.05951, 0.04475, -0.03749, -0.01127, 0.02052, 0.08978, -0.09222, 0.01474, 0.04148, -0.03715, 0.05211, -0.03755, -0.02837, 0.05335, 0.05444, -0.05199, -0.0279, 0.04689, 0.03505, 0.05752, 0.05348, -0.02237, 0.01826, 0.02028, -0.0548, 0.06071, 0.04926, -0.03615, -0.01165, -0.03616, -0.05328, -0.03623, 0.05241, -0.0393, -0.05563, 0.0566, 0.05994, 0.03286, 0.06036]';
    centred text[];
    t text;
BEGIN
    IF d >= 384 THEN  -- e5 fits the columns (revision 0036)
        INSERT INTO kgrag.settings (tenant_id, key, value, description) VALUES
        ('*', 'embedder_centres', pg_catalog.jsonb_build_object('e5', e5::real[]),
         'The centre of each embedder whose vectors share a common component: {"embedder": [centre]}. The binary-quantized index codes each vector less its tenant''s embedder''s centre (kgrag.quantize); e5''s is the mean of its vectors of the shipped sample corpus (benchmarks/centre.py). Set by revisions: a centre changed by hand leaves the codes already stored as they were.');
        e5 := (e5::real[] || pg_catalog.array_fill(0::real, ARRAY[d - 384]))::vector;
    END IF;
    -- every tenant's rows: row-level security lifted for the owner meanwhile
    EXECUTE 'ALTER TABLE kgrag.settings NO FORCE ROW LEVEL SECURITY';
    -- the tenants that recorded e5 as their embedder (every tenant with vectors of a model pgkgrag
    -- runs has recorded it since revision 0036; one that recorded none wrote its own model's)
    centred := ARRAY(SELECT s.tenant_id FROM kgrag.settings AS s
                      WHERE s.tenant_id <> '*' AND s.key = 'embedder' AND s.value #>> '{}' = 'e5'
                      ORDER BY 1);
    EXECUTE 'ALTER TABLE kgrag.settings FORCE ROW LEVEL SECURITY';
    IF d < 384 THEN
        centred := ARRAY[]::text[];
    END IF;
    FOREACH t IN ARRAY ARRAY['chunk', 'entity', 'community_report'] LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I ADD COLUMN quantized bit(%s)', t, d);
        EXECUTE pg_catalog.format($q$COMMENT ON COLUMN kgrag.%I.quantized IS 'The binary quantization of the embedding less the centre of its tenant''s embedder (kgrag.quantize; setting embedder_centres), NULL exactly when the embedding is: what the bq vector index holds.'$q$, t);
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I NO FORCE ROW LEVEL SECURITY', t);
        EXECUTE pg_catalog.format(
            'UPDATE kgrag.%I SET quantized = binary_quantize(CASE WHEN tenant_id = ANY ($1) THEN embedding - $2 ELSE embedding END)'
            ' WHERE embedding IS NOT NULL', t) USING centred, e5;
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE pg_catalog.format('ALTER TABLE kgrag.%I ADD CONSTRAINT %I CHECK ((embedding IS NULL) = (quantized IS NULL))',
                                  t, t || '_quantized_check');
        IF bq THEN
            EXECUTE pg_catalog.format('DROP INDEX kgrag.%I', t || '_embedding_bq_idx');
            EXECUTE pg_catalog.format('CREATE INDEX %I ON kgrag.%I USING hnsw (quantized bit_hamming_ops) WITH (m = 8, ef_construction = 64)',
                                      t || '_embedding_bq_idx', t);
        END IF;
    END LOOP;
END
$$;

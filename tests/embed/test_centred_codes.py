"""The binary-quantized index codes each vector less its tenant's embedder's centre (revision 0038):
the codes every write path stores agree with kgrag.quantize, a tenant moved to e5 takes e5's codes,
a vector written without its code is refused, and on real text e5's index candidates hold what the
exact cosine ranks first better than codes of the vectors as they are."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pytest
from ingesting import OPS, ingest
from realtext import paragraphs

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.reembed import reembed
from pgkgrag.graph.build import build

# every stored vector, with whether its code is kgrag.quantize's and binary_quantize's of it as it is
CODES = """
SELECT x.kind, count(*), count(*) FILTER (WHERE x.code = kgrag.quantize(x.embedding)),
       count(*) FILTER (WHERE x.code = binary_quantize(x.embedding))
  FROM (SELECT 'chunk' AS kind, embedding, quantized AS code FROM kgrag.chunk WHERE tenant_id = %(t)s
        UNION ALL SELECT 'entity', embedding, quantized FROM kgrag.entity WHERE tenant_id = %(t)s
        UNION ALL SELECT 'report', embedding, quantized FROM kgrag.community_report WHERE tenant_id = %(t)s) AS x
 WHERE x.embedding IS NOT NULL
 GROUP BY x.kind ORDER BY x.kind
"""


def codes(conn: psycopg.Connection, tenant: str) -> dict[str, tuple[int, int, int]]:
    with tenant_transaction(conn, tenant):
        return {kind: (n, agree, as_is) for kind, n, agree, as_is in conn.execute(CODES, {"t": tenant})}


def test_every_write_path_stores_the_code_of_its_tenants_embedder(
    conn: psycopg.Connection, tmp_path: Path, use: Embedder, e5: Embedder
) -> None:
    for tenant, embedder in (("u", use), ("e", e5)):
        assert ingest(conn, tmp_path, OPS, tenant=tenant, embedder=embedder).ok
        build(conn, tenant, embedder)
    used, e5s = codes(conn, "u"), codes(conn, "e")
    assert set(used) == set(e5s) == {"chunk", "entity", "report"}
    # use has no centre: its codes are its vectors' as they are; e5's are less e5's centre
    assert all(n > 0 and agree == as_is == n for n, agree, as_is in used.values()), used
    assert all(n > 0 and agree == n and as_is == 0 for n, agree, as_is in e5s.values()), e5s
    reembed(conn, "u", e5, batch=16)  # the switch writes the new model's codes
    moved = codes(conn, "u")
    assert all(n > 0 and agree == n and as_is == 0 for n, agree, as_is in moved.values()), moved


def test_a_vector_written_without_its_code_is_refused(conn: psycopg.Connection, tmp_path: Path) -> None:
    assert ingest(conn, tmp_path, OPS).ok
    with tenant_transaction(conn, "t1"), pytest.raises(psycopg.errors.CheckViolation, match="chunk_quantized_check"):
        conn.execute(
            "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text, content_hash,"
            " embedding) SELECT tenant_id, 'd1#9', doc_id, 9, 0, 1, 'x', 'h', embedding FROM kgrag.chunk"
            " WHERE chunk_id = 'd1#0'"
        )


def overlap(found: list[list[str]], exact: list[list[str]]) -> float:
    return float(np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found, exact, strict=True)]))


@pytest.mark.slow
def test_e5s_candidates_hold_the_exact_neighbours_better_less_the_centre(
    conn: psycopg.Connection, tmp_path: Path, e5: Embedder
) -> None:
    """600 paragraphs of real text, 40 others as questions, 20 candidates drawn through the index
    for the 10 nearest: compared with the exact 10 nearest, and with 20 candidates coded from the
    vectors as they are (brute force, the code the index held before revision 0038)."""
    texts = paragraphs(640)
    docs = [{"doc_id": f"p{i:03d}", "title": "", "text": text} for i, text in enumerate(texts[:600])]
    assert ingest(conn, tmp_path, docs, embedder=e5, batch_size=200).ok
    questions = e5.embed_queries([text.split(". ")[0] for text in texts[600:]])
    with tenant_transaction(conn, "t1"):
        conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'vector_min_candidates', '20')")
        ids, stored = zip(
            *conn.execute("SELECT chunk_id, embedding FROM kgrag.chunk ORDER BY chunk_id").fetchall(), strict=True
        )
        matrix = np.vstack([np.asarray(v.to_numpy(), dtype=np.float32) for v in stored])
        padded = np.hstack([questions, np.zeros((len(questions), matrix.shape[1] - questions.shape[1]), np.float32)])
        centre = conn.execute("SELECT kgrag_private.centre('e5')").fetchone()[0].to_numpy()  # type: ignore[index]
        exact, index, brute, as_is = [], [], [], []
        for q in padded:
            sims = matrix @ q
            exact.append([ids[i] for i in np.argsort(-sims, kind="stable")[:10]])
            for found, shift in ((brute, centre), (as_is, 0 * centre)):
                hamming = ((matrix - shift > 0) != (q - shift > 0)).sum(axis=1)
                drawn = np.argsort(hamming, kind="stable")[:20]
                found.append([ids[i] for i in drawn[np.argsort(-sims[drawn], kind="stable")][:10]])
            rows = conn.execute("SELECT chunk_id FROM kgrag.search_chunks_vector(%s, 10, overfetch => 2)", [q[:384]])
            index.append([r[0] for r in rows])
    centred, expected, plain = overlap(index, exact), overlap(brute, exact), overlap(as_is, exact)
    print(f"recall@10 of 20 candidates: index {centred:.3f}, less the centre {expected:.3f}, as is {plain:.3f}")
    # the index draws what the centred codes rank first (HNSW approximates), which the codes of the
    # vectors as they are do much worse (measured: index 0.500, brute force 0.510, as they are 0.260)
    assert centred >= expected - 0.05
    assert centred >= plain + 0.15

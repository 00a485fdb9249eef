"""Vector search: HNSW candidates + exact re-rank agree with brute force, on real text embeddings
(USE over standard-library docstrings), also for a tenant holding 1% of rows; with each kind of
index (kgrag.vector_index()): binary-quantized, what revision 0024 keeps by default, and halfvec,
what it builds when asked (here: the database taken back to 0023 and up again asking for it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import psycopg
import pytest
from corpus import add_chunks
from plans import explain
from realtext import paragraphs

from pgkgrag import migrations
from pgkgrag.embed.embedders import get_embedder

CORPUS, QUERIES, SMALL = 2800, 50, 28


@pytest.fixture(scope="module")
def embedded() -> tuple[list[str], np.ndarray]:
    texts = paragraphs(CORPUS + QUERIES)
    assert len(texts) == CORPUS + QUERIES
    return texts, get_embedder("use", 512).embed(texts)


@pytest.fixture(params=["bq", "halfvec"])
def vectors(
    request: pytest.FixtureRequest,
    dsn: str,
    tconn: psycopg.Connection,
    admin: psycopg.Connection,
    embedded: tuple[list[str], np.ndarray],
) -> Iterator[psycopg.Connection]:
    if request.param == "halfvec":
        migrations.downgrade(dsn, "0023")
        migrations.upgrade(dsn, "head", vector_index="halfvec")
    assert admin.execute("SELECT kgrag.vector_index()").fetchone() == (request.param,)
    admin.commit()
    texts, vecs = embedded
    add_chunks(tconn, "big", {f"p{i:04d}": texts[i] for i in range(CORPUS)}, vectors=list(vecs[:CORPUS]))
    add_chunks(
        tconn,
        "small",
        {f"s{i:04d}": texts[i] for i in range(0, CORPUS, CORPUS // SMALL)},
        vectors=list(vecs[0 : CORPUS : CORPUS // SMALL]),
    )
    admin.execute("ANALYZE kgrag.chunk")  # the owner's job (autovacuum does it in production)
    admin.commit()
    yield tconn


def exact(conn: psycopg.Connection, q: np.ndarray, k: int = 10) -> list[str]:
    rows = conn.execute(
        "SELECT chunk_id FROM kgrag.chunk WHERE tenant_id = kgrag.current_tenant()"
        " ORDER BY embedding <=> %s, chunk_id LIMIT %s",
        [q, k],
    ).fetchall()
    return [r[0] for r in rows]


def approx(conn: psycopg.Connection, q: np.ndarray, k: int = 10) -> list[str]:
    return [r[0] for r in conn.execute("SELECT chunk_id FROM kgrag.search_chunks_vector(%s, %s)", [q, k])]


def recall(conn: psycopg.Connection, queries: np.ndarray) -> float:
    hits = [len(set(approx(conn, q)) & set(exact(conn, q))) / 10 for q in queries]
    return float(np.mean(hits))


@pytest.mark.slow
def test_search_agrees_with_brute_force(vectors: psycopg.Connection, embedded: tuple[list[str], np.ndarray]) -> None:
    _, vecs = embedded
    vectors.use("big")
    r = recall(vectors, vecs[CORPUS:])
    assert r >= 0.95, f"recall@10 {r:.3f}"
    rows = vectors.execute("SELECT * FROM kgrag.search_chunks_vector(%s, 5)", [vecs[CORPUS]]).fetchall()
    assert [rank for _, rank, _ in rows] == [1, 2, 3, 4, 5]
    sims = [s for _, _, s in rows]
    assert sims == sorted(sims, reverse=True) and all(0 < s <= 1 for s in sims)
    # a stored paragraph finds itself first, with similarity 1
    top = vectors.execute("SELECT chunk_id, similarity FROM kgrag.search_chunks_vector(%s, 1)", [vecs[7]]).fetchone()
    assert top is not None and top[0] == "p0007#0" and top[1] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_a_tenant_with_one_percent_of_rows_still_gets_k_through_the_index(
    vectors: psycopg.Connection, admin: psycopg.Connection, embedded: tuple[list[str], np.ndarray]
) -> None:
    """Fewer candidates than the tenant's rows: the shared index is walked (iterative scans) until k
    of the tenant's rows pass its filter."""
    _, vecs = embedded
    admin.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('small', 'vector_min_candidates', '10')")
    admin.commit()
    vectors.use("small")
    for q in vecs[CORPUS:]:
        found = [r[0] for r in vectors.execute("SELECT chunk_id FROM kgrag.search_chunks_vector(%s, 10, 1)", [q])]
        assert len(found) == 10 and all(c.startswith("s") for c in found)


@pytest.mark.slow
def test_a_tenant_with_no_more_rows_than_candidates_is_ranked_exactly(
    vectors: psycopg.Connection,
    admin: psycopg.Connection,
    embedded: tuple[list[str], np.ndarray],
    record_property: Callable[[str, object], None],
) -> None:
    """The default candidate count (300 for k = 10 with bq) covers the 28-row tenant: it is read
    whole, so its answer is exact and does not depend on the 2,800 rows beside it in the index (here
    the index walk would stop after 100 of them); a chunk waiting for its embedding is left out, as
    the index leaves it out."""
    _, vecs = embedded
    admin.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('small', 'hnsw_max_scan_tuples', '100')")
    admin.execute(
        "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text, content_hash)"
        " SELECT tenant_id, doc_id || '#99', doc_id, 99, 0, 0, text, content_hash FROM kgrag.chunk"
        " WHERE tenant_id = 'small' LIMIT 1"
    )
    admin.commit()
    vectors.use("small")
    for q in vecs[CORPUS:]:
        assert approx(vectors, q, 30) == exact(vectors, q, 29)[:28], "every embedded row, in exact order"
    record_property("rows", f"{SMALL} of {CORPUS + SMALL} chunks in the index ({SMALL / (CORPUS + SMALL):.1%})")
    record_property("queries", QUERIES)


@pytest.mark.slow
def test_the_index_is_used_under_row_level_security(
    vectors: psycopg.Connection, dsn: str, embedded: tuple[list[str], np.ndarray]
) -> None:
    _, vecs = embedded
    plans = explain(dsn, "big", "SELECT * FROM kgrag.search_chunks_vector(%s, 10)", [vecs[CORPUS]])
    kind = vectors.execute("SELECT kgrag.vector_index()").fetchone()
    index = {("halfvec",): "chunk_embedding_half_idx", ("bq",): "chunk_embedding_bq_idx"}[kind]
    assert any(index in p for p in plans), plans


@pytest.mark.slow
def test_entity_search_agrees_with_brute_force(
    vectors: psycopg.Connection, admin: psycopg.Connection, embedded: tuple[list[str], np.ndarray]
) -> None:
    """One statement (kgrag_private.nearest) serves chunks, entities and reports."""
    _, vecs = embedded
    admin.execute("SELECT kgrag.use_tenant('big')")
    admin.execute(
        "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type, embedding, quantized)"
        " SELECT tenant_id, 'e:' || chunk_id, chunk_id, 'e', embedding, quantized FROM kgrag.chunk"
        " WHERE tenant_id = 'big'"
    )
    admin.execute("ANALYZE kgrag.entity")
    admin.commit()
    vectors.use("big")
    for q in vecs[CORPUS : CORPUS + 5]:
        found = [r[0] for r in vectors.execute("SELECT entity_id FROM kgrag.search_entities_vector(%s, 10, -1)", [q])]
        assert [f.removeprefix("e:") for f in found] == approx(vectors, q)


@pytest.mark.slow
def test_bad_question_vectors_are_named(vectors: psycopg.Connection) -> None:
    with pytest.raises(
        psycopg.errors.DataException, match="has 3 dimensions, but tenant 't1' embeds with e5 \\(384 dimensions\\)"
    ):
        vectors.execute("SELECT * FROM kgrag.search_chunks_vector('[1,2,3]')")
    with pytest.raises(psycopg.errors.NullValueNotAllowed, match="question vector is NULL"):
        vectors.execute("SELECT * FROM kgrag.search_chunks_vector(NULL)")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="k must be between"):
        vectors.execute("SELECT * FROM kgrag.search_chunks_vector(%s, 0)", [np.ones(512, dtype=np.float32)])
    with pytest.raises(psycopg.errors.DataException, match="NaN"):
        vectors.execute("SELECT * FROM kgrag.search_chunks_vector(%s)", [np.full(512, np.nan, dtype=np.float32)])


@pytest.mark.slow
def test_settings_are_restored_after_a_search(
    vectors: psycopg.Connection, embedded: tuple[list[str], np.ndarray]
) -> None:
    _, vecs = embedded
    vectors.use("big")
    vectors.execute("SET hnsw.ef_search = 77")
    with vectors.transaction():
        vectors.execute("SELECT * FROM kgrag.search_chunks_vector(%s, 10)", [vecs[0]]).fetchall()
        assert vectors.execute("SHOW hnsw.ef_search").fetchone() == ("77",)
        assert vectors.execute("SHOW hnsw.iterative_scan").fetchone() == ("off",)


def test_entity_profile_and_floor(tconn: psycopg.Connection) -> None:
    use = get_embedder("use", 512)
    names = ["Payment service", "Billing team", "Kubernetes cluster", "Authentication service", "Coffee machine"]
    for name, vec in zip(names, use.embed(names), strict=True):
        tconn.execute(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type, embedding, quantized)"
            " VALUES ('t1', kgrag.entity_key('x', %s), %s, 'x', %s, kgrag.quantize(%s))",
            [name, name, vec, vec],
        )
    q = use.embed(["payment service"])[0]
    floor = tconn.execute("SELECT entity_id, similarity FROM kgrag.search_entities_vector(%s, 5, 0.6)", [q]).fetchall()
    assert [e for e, _ in floor] == ["x:payment service"]
    profile = tconn.execute("SELECT similarity FROM kgrag.search_entities_vector(%s, 5, 0.99, true)", [q]).fetchall()
    assert len(profile) == 5  # the floor does not apply to the profile
    sims = [s for (s,) in profile]
    assert sims == sorted(sims, reverse=True) and sims[0] - sims[3] > 0.2  # a peak, not a flat line

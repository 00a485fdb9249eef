"""Degrade, don't fail: a walk over its budget falls back to vector and lexical search, the
neighbouring chunks widen the evidence, and a reranker (a real local HTTP server) reorders the
chunks or, when it fails, leaves the fused order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from corpus import add_mesh
from fake_openai import FakeOpenAI
from ingesting import ingest

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.retrieval.results import SearchResult
from pgkgrag.retrieval.search import run_search

EMBEDDER = HashEmbedder(512)
NODES = [f"Node {i:02d}" for i in range(30)]


def q(conn: psycopg.Connection, query: str, *params: object) -> list[tuple]:
    with tenant_transaction(conn, "t1"):
        return conn.execute(query, list(params)).fetchall()  # type: ignore[arg-type]


def setting(conn: psycopg.Connection, key: str, value: str) -> None:
    q(
        conn,
        "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', %s, %s::jsonb)"
        " ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value RETURNING key",
        key,
        value,
    )


def search(
    conn: psycopg.Connection, question: str, route: str = "auto", k: int = 10, **options: object
) -> SearchResult:
    return run_search(conn, "t1", EMBEDDER, question, route, k, options)


@pytest.fixture
def mesh(conn: psycopg.Connection, tmp_path: Path) -> psycopg.Connection:
    """Six documents naming all thirty nodes: every pair of nodes linked, a 4-hop walk blows up."""
    docs = [
        {
            "doc_id": f"mesh-{d}",
            "title": f"Mesh report {d}",
            "text": f"Mesh report {d}: " + ", ".join(NODES) + " are linked in the mesh.",
            "entities": [{"name": name, "type": "Thing"} for name in NODES],
        }
        for d in range(6)
    ]
    assert ingest(conn, tmp_path, docs).ok
    return conn


def test_a_walk_over_budget_falls_back_to_vector_and_lexical(mesh: psycopg.Connection) -> None:
    walked = search(mesh, "What is Node 00 linked to?", hops=1, degree_cap=3)
    assert walked.route == "local" and "over budget" not in walked.reason
    assert any(row.kind == "entity" for row in walked.rows)
    assert all("coverage" not in row.payload for row in walked.rows)

    setting(mesh, "max_paths_walked", "10")  # capped at 4 edges a node, the second hop follows 16
    result = search(mesh, "What is Node 00 linked to?", hops=4, degree_cap=None)
    assert result.route == "local"
    assert "the graph was over budget (graph traversal stopped after 10 paths" in result.reason
    assert "vector and lexical chunks returned instead" in result.reason
    assert result.rows and all(row.kind == "chunk" for row in result.rows)
    assert all(row.payload["coverage"] == "reduced" for row in result.rows)
    assert {row.source for row in result.rows} <= {"vector", "lexical"}

    logged = q(mesh, "SELECT route, fallback FROM kgrag.query_log ORDER BY searched_at")
    assert logged == [("local", False), ("local", True)]
    by_route = q(mesh, "SELECT route, questions, fallbacks, empty FROM kgrag.search_by_route")
    assert by_route == [("local", 2, 1, 0)]


def test_the_walk_error_stands_when_the_fallback_finds_nothing(mesh: psycopg.Connection) -> None:
    setting(mesh, "max_paths_walked", "10")
    with pytest.raises(psycopg.errors.QueryCanceled, match="graph traversal stopped") as caught:
        q(
            mesh,
            "SELECT * FROM kgrag.kgrag_search(NULL, 'local', 'Node 00 zebra quasar nebula',"
            """ options => '{"hops": 4, "degree_cap": null, "lexical_min_coverage": 1}')""",
        )
    assert "found nothing either" in (caught.value.diag.message_hint or "")


@pytest.mark.slow
def test_a_cancel_from_outside_is_not_taken_for_the_walk_budget(
    mesh: psycopg.Connection, admin: psycopg.Connection
) -> None:
    (node,) = q(mesh, "SELECT kgrag.resolve_entities(ARRAY['Node 00'])")[0]
    # the second hop follows 640,000 edges: several times the statement timeout on this machine
    add_mesh(admin, "t1", [f"x:{i:03d}" for i in range(800)], hub=node[0])
    setting(mesh, "khop_timeout_ms", "30000")  # the ceilings a tenant may set (revision 0039)
    setting(mesh, "max_paths_walked", "2000000")
    with tenant_transaction(mesh, "t1"):
        mesh.execute("SET LOCAL statement_timeout = '100ms'")
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            mesh.execute(
                "SELECT * FROM kgrag.kgrag_search(NULL, 'local', 'Node 00',"
                """ options => '{"hops": 4, "degree_cap": null}')"""
            )


def _paragraph(word: str) -> str:
    return " ".join(f"The {word} clause number {i} is written out in full here." for i in range(8))


@pytest.fixture
def long_docs(conn: psycopg.Connection, tmp_path: Path) -> psycopg.Connection:
    """Two documents of three chunks each; the middle chunk of each says 'xylophone'."""
    for key, value in (("chunk_max_chars", "500"), ("chunk_min_chars", "100"), ("chunk_overlap_chars", "0")):
        setting(conn, key, value)
    docs = [
        {"doc_id": doc, "title": doc, "text": "\n\n".join(_paragraph(w) for w in words)}
        for doc, words in (("L1", ("amber", "xylophone", "cobalt")), ("L2", ("dune", "xylophone", "ember")))
    ]
    assert ingest(conn, tmp_path, docs).ok
    chunks = q(conn, "SELECT chunk_id FROM kgrag.chunk WHERE text LIKE '%%xylophone%%' ORDER BY 1")
    assert chunks == [("L1#1",), ("L2#1",)], chunks
    return conn


def test_neighbours_follow_each_chunk_once(long_docs: psycopg.Connection) -> None:
    plain = search(long_docs, "xylophone", "vector")
    assert sorted(plain.chunks()) == ["L1#1", "L2#1"]
    first, second = plain.chunks()
    doc1, doc2 = first.split("#")[0], second.split("#")[0]
    widened = search(long_docs, "xylophone", "vector", neighbours=True)
    assert widened.chunks() == [first, f"{doc1}#0", f"{doc1}#2", second, f"{doc2}#0", f"{doc2}#2"]
    near = [row for row in widened.rows if row.source == "neighbour"]
    assert [(row.payload["neighbour_of"], row.payload["side"]) for row in near] == [
        (first, "before"),
        (first, "after"),
        (second, "before"),
        (second, "after"),
    ]
    assert all(row.payload["evidence_refs"] == [row.ref_id] for row in near)

    # a chunk found on its own is not repeated as a neighbour
    both = search(long_docs, "amber xylophone", "vector", neighbours=True)
    assert len(both.chunks()) == len(set(both.chunks()))
    assert "L1#0" in both.chunks() and "L1#2" in both.chunks()


def test_the_context_gives_neighbours_the_room_the_chunks_leave(long_docs: psycopg.Connection) -> None:
    def blocks(max_chars: int) -> list[tuple[str, str]]:
        return q(
            long_docs,
            "SELECT ref_id, body FROM kgrag.context_blocks(NULL, 'vector', 'xylophone', %s, 10,"
            """ '{"neighbours": true}') ORDER BY block""",
            max_chars,
        )

    wide = blocks(20000)
    assert len(wide) == 6
    assert sum("(neighbour before" in body or "(neighbour after" in body for _, body in wide) == 4
    tight_budget = sum(len(body) for ref, body in wide if ref.endswith("#1")) + 2
    tight = blocks(tight_budget)
    assert sorted(ref for ref, _ in tight) == ["L1#1", "L2#1"]  # the neighbours came first in rank, not in room


WORDS = {"L1#0": "amber", "L1#2": "cobalt", "L2#0": "dune", "L2#2": "ember"}


@pytest.fixture
def reranker(long_docs: psycopg.Connection) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    setting(long_docs, "rerank_url", f'"{fake.url}/rerank"')
    setting(long_docs, "rerank_timeout_ms", "300")
    yield fake
    fake.close()


def fused_order(conn: psycopg.Connection) -> list[str]:
    """The fused chunks of every candidate the reranker would see, no reranker."""
    setting(conn, "rerank_url", '""')
    plain = search(conn, "clause", "vector", k=30)
    assert "rerank" not in plain.reason and len(plain.chunks()) == 6
    return plain.chunks()


@pytest.mark.parametrize("api", ["tei", "cohere"])
def test_a_reranker_reorders_the_chunks(long_docs: psycopg.Connection, reranker: FakeOpenAI, api: str) -> None:
    fused = fused_order(long_docs)
    last = [chunk for chunk in fused if chunk in WORDS][-1]  # the weakest fused chunk with a word of its own
    setting(long_docs, "rerank_url", f'"{reranker.url}/rerank"')
    setting(long_docs, "rerank_api", f'"{api}"')
    reranker.rerank_prefer = WORDS[last]
    result = search(long_docs, "clause", "vector", k=3)
    assert f"chunks reranked by {reranker.url}/rerank" in result.reason
    assert result.chunks()[0] == last and len(result.chunks()) == 3
    assert result.rows[0].payload["rerank_score"] == 1.0
    assert result.chunks()[1:] == [c for c in fused if c != last][:2]  # ties keep the fused order
    assert [row.rank for row in result.rows] == list(range(1, len(result.rows) + 1))
    sent = reranker.requests[-1]["body"]
    assert ("texts" in sent) == (api == "tei") and ("documents" in sent) == (api == "cohere")
    assert len(sent.get("texts", sent.get("documents", []))) == 6  # every candidate, not only k


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        ("slow", "no answer within 300 ms"),
        ("error", "HTTP 503"),
        ("garbage", "not JSON"),
        ("shape", "out of shape"),
    ],
)
def test_a_failing_reranker_keeps_the_fused_order(
    long_docs: psycopg.Connection, reranker: FakeOpenAI, failure: str, said: str
) -> None:
    fused = fused_order(long_docs)
    setting(long_docs, "rerank_url", f'"{reranker.url}/rerank"')
    reranker.rerank_prefer = WORDS[[chunk for chunk in fused if chunk in WORDS][-1]]
    if failure == "slow":
        reranker.rerank_delay = 1.5
    else:
        reranker.rerank_failure = {
            "error": (503, '{"error": "overloaded"}'),
            "garbage": (200, "<html>"),
            "shape": (200, '[{"index": 99, "score": 1}]'),
        }[failure]
    result = search(long_docs, "clause", "vector", k=3)
    assert said in result.reason and "fused order kept" in result.reason
    assert result.chunks() == fused[:3]


def test_a_reranker_setting_out_of_shape_is_refused(long_docs: psycopg.Connection) -> None:
    # when it is written (revision 0041: every setting has a rule), by the schema owner too
    for key, value, refusal in (
        ("rerank_api", '"soap"', r'rerank_api takes one of \["tei", "cohere"\]'),
        ("rerank_url", '"ftp://127.0.0.1:9/rerank"', "rerank_url takes an http"),
        ("rerank_timeout_ms", "0", "rerank_timeout_ms = 0 is outside"),
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=refusal):
            setting(long_docs, key, value)
        long_docs.rollback()

"""Deleting a document forgets it, and the graph depends on the final input only.

A marker word planted everywhere a document can put text (title, text, metadata, an entity's name,
alias, description and answer, a relation's quote, the LLM cache, the query log of a search naming
it) is searched for in every table
and in the answers of every public function after the delete: it is nowhere. And the same final
input gives the same tables whatever the history: changed versions, deletes, concurrent writers.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from catalog import tables as catalog_tables
from ingesting import checksums, ingest
from tenant_calls import reads

from pgkgrag.db.connections import WRITER, connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.ingestor import delete_documents
from pgkgrag.retrieval.search import run_search

MARK = "Zyxquorp"
G1 = {
    "doc_id": "g1",
    "title": f"The {MARK} memo",
    "text": f"The {MARK} Gateway calls the Auth Service. The {MARK} Gateway is retired in May.",
    "metadata": {"note": f"{MARK} secret"},
    "entities": [
        {
            "name": f"{MARK} Gateway",
            "type": "Service",
            "aliases": [f"{MARK.lower()}gw"],
            "description": f"the {MARK} front door",
            "answer": f"The {MARK} Gateway is retired in May.",
        },
        {"name": "Auth Service", "type": "Service", "description": f"issues tokens, as the {MARK} memo says at length"},
    ],
    "relations": [
        {
            "source": f"{MARK} Gateway",
            "target": "Auth Service",
            "type": "DEPENDS_ON",
            "quote": f"The {MARK} Gateway calls the Auth Service.",
        }
    ],
}
G2 = {
    "doc_id": "g2",
    "title": "Auth",
    "text": "The Auth Service depends on the Session Store. The Auth Service issues tokens.",
    "entities": [
        {"name": "Auth Service", "type": "Service", "description": "issues tokens"},
        {"name": "Session Store", "type": "Service"},
    ],
    "relations": [
        {
            "source": "Auth Service",
            "target": "Session Store",
            "type": "DEPENDS_ON",
            "quote": "The Auth Service depends on the Session Store.",
        }
    ],
}


def _everywhere(admin: psycopg.Connection, word: str) -> dict[str, int]:
    """Rows of every kgrag table (every tenant, the owner reading past the policies) holding the word."""
    found = {}
    for table in catalog_tables(admin):
        (n,) = admin.execute(
            f"SELECT count(*) FROM kgrag.{table} AS x WHERE strpos(lower(x::text), %s) > 0", [word.lower()]
        ).fetchone()  # type: ignore[misc]
        if n:
            found[table] = n
    admin.rollback()
    return found


def test_a_deleted_document_is_forgotten_everywhere(
    dsn: str, admin: psycopg.Connection, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    with connect(dsn, role=WRITER) as conn:
        ingest(conn, tmp_path, [G1, G2], tenant="m")
        build(conn, "m", HashEmbedder(512))
        with tenant_transaction(conn, "m"):
            for doc, text in (("g1", G1["text"]), ("g2", G2["text"])):
                conn.execute(  # an extraction cached for each chunk text, as the LLM extractor does
                    "SELECT kgrag_private.llm_cache_put(%s, 'm', %s, %s)",
                    [
                        f"key-{doc}",
                        json.dumps({"entities": [], "relations": [], "from": str(text)[:30]}),
                        hashlib.sha256(str(text).encode()).hexdigest(),
                    ],
                )
            before_vector = conn.execute(
                "SELECT embedding::text FROM kgrag.entity WHERE entity_id = 'service:auth service'"
            ).fetchone()
        # a search naming the gateway: the query log keeps its seed, the chunks it returned and
        # the router's reason, which names it
        run_search(conn, "m", HashEmbedder(512), f"What does the {MARK} Gateway call?", "auto", 5, {})
        planted = _everywhere(admin, MARK)
        assert {
            "query_log",
            "document",
            "chunk",
            "entity",
            "entity_source",
            "alias",
            "alias_source",
            "relation_evidence",
            "edge",
            "community",
            "community_report",
            "llm_cache",
        } <= set(planted), planted

        delete_documents(conn, "m", ["g1"])

        assert _everywhere(admin, MARK) == {}
        build(conn, "m", HashEmbedder(512))  # and after the next build, logs included
        assert _everywhere(admin, MARK) == {}
        record_property("tables holding the marker before the delete (rows)", planted)
        record_property("tables holding it after", 0)
        with tenant_transaction(conn, "m"):
            auth = conn.execute(
                "SELECT description, embedding::text FROM kgrag.entity WHERE entity_id = 'service:auth service'"
            ).fetchone()
            assert auth is not None and auth[0] == "issues tokens" and auth[1] != (before_vector or [None])[0]
            assert conn.execute("SELECT count(*) FROM kgrag.llm_cache").fetchone() == (1,)  # g2's stays
    # nor does any function answer with it
    ids = {
        "docs": ["g1", "g2"],
        "chunks": ["g1#0", "g2#0"],
        "entities": [f"service:{MARK.lower()} gateway", "service:auth service"],
        "communities": [],
        "hashes": [],
    }
    remaining = {**ids, "entities": ["service:auth service"]}  # the walks start from what is left
    with connect(dsn, role=WRITER) as conn:
        with tenant_transaction(conn, "m"):
            calls = reads(f"What is the {MARK} Gateway? Who uses the Auth Service?", ids, remaining)
            for name, (query, params) in calls.items():
                rows = conn.execute(query, params).fetchall()  # type: ignore[arg-type]
                assert MARK.lower() not in json.dumps(rows, default=str).lower(), name
        with tenant_transaction(conn, "m"), pytest.raises(psycopg.errors.InvalidParameterValue, match="no entity"):
            conn.execute("SELECT kgrag.resolve_entities(%s)", [[f"{MARK} Gateway"]])  # by name: gone too


VARIANTS = ["runs on", "calls", "feeds", "backs"]
NAMES = [f"{w} {k}" for w in ("Amber", "Basalt", "Cobalt", "Dune", "Ember") for k in ("Gateway", "Queue", "Ledger")]


def _corpus(seed: int, n: int = 24) -> list[dict[str, object]]:
    """Documents over overlapping entities; each says its own thing about them (descriptions,
    answers, spellings), so which document wins must not depend on the order they came in."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        chosen = rng.sample(NAMES, 3)
        verb = rng.choice(VARIANTS)
        sentence = f"The {chosen[0]} {verb} the {chosen[1]}."
        docs.append(
            {
                "doc_id": f"d{i:02d}",
                "text": f"{sentence} The {chosen[2]} is listed with them. Note {seed}-{i}.",
                "entities": [
                    {
                        "name": chosen[0].upper() if rng.random() < 0.3 else chosen[0],
                        "type": "Service",
                        "description": f"{chosen[0]} as version {seed} of document {i} sees it" * rng.randint(1, 3),
                    },
                    {"name": chosen[1], "type": "Service", "answer": sentence if rng.random() < 0.5 else None},
                    {"name": chosen[2], "type": "Service"},
                ],
                "relations": [
                    {
                        "source": chosen[0],
                        "target": chosen[1],
                        "type": verb.upper().replace(" ", "_"),
                        "quote": sentence,
                    }
                ],
            }
        )
    return docs


COMMUNITY_TABLES = {"community", "community_member", "community_report"}


@pytest.mark.slow
def test_the_same_final_input_gives_the_same_graph_whatever_the_history(
    dsn: str, tmp_path: Path, admin: psycopg.Connection, record_property: Callable[[str, object], None]
) -> None:
    final = _corpus(1)
    embedder = HashEmbedder(512)
    with connect(dsn, role=WRITER) as conn:
        ingest(conn, tmp_path, final, tenant="x", embedder=embedder, batch_size=100)
        build(conn, "x", embedder)
    clean = checksums(admin, "x")

    # a history: older versions, written by two writers at once, deletes, builds in between
    older, other = _corpus(2), _corpus(3)
    errors: list[BaseException] = []

    def write(docs: list[dict[str, object]], batch_size: int, folder: Path) -> None:
        try:
            folder.mkdir()
            with connect(dsn, role=WRITER) as conn:
                ingest(conn, folder, docs, tenant="x", embedder=embedder, batch_size=batch_size)
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=write, args=(older[:16], 5, tmp_path / "a")),
        threading.Thread(target=write, args=(other[8:], 3, tmp_path / "b")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with connect(dsn, role=WRITER) as conn:
        build(conn, "x", embedder)
        delete_documents(conn, "x", ["d03", "d07", "d11", "d20"])
        ingest(conn, tmp_path, final[::-1], tenant="x", embedder=embedder, batch_size=7)  # the final input, again
        build(conn, "x", embedder)
    # the default build starts Leiden from the communities it found (pgkgrag.graph.communities):
    # everything but them is the same; a fresh detection makes them the same too
    after = checksums(admin, "x")
    assert {t for t in clean if clean[t] != after[t]} <= COMMUNITY_TABLES
    with connect(dsn, role=WRITER) as conn:
        build(conn, "x", embedder, fresh=True)
    after = checksums(admin, "x")
    assert {t for t in clean if clean[t] != after[t]} == set()
    record_property("tables compared (every one, timestamps aside)", len(clean))

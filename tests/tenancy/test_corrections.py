"""Corrected relations whatever the sequence of decisions: a correction changed, taken back,
rejected, chained or forgotten with its document leaves the edges a fresh tenant with the same
documents and the same decisions gets, and never an edge without evidence."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from ingesting import ingest

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build

ANA, CONTOSO = "person:ana costa", "organization:contoso"
ENTITIES = [{"name": "Ana Costa", "type": "Person"}, {"name": "Contoso", "type": "Organization"}]
TEAM = {
    "doc_id": "team",
    "text": "Ana Costa manages Contoso.",
    "entities": ENTITIES,
    "relations": [
        {"source": "Ana Costa", "target": "Contoso", "type": "MANAGES", "quote": "Ana Costa manages Contoso."}
    ],
}
OTHER = {
    "doc_id": "other",
    "text": "Ana Costa works at Contoso.",
    "entities": ENTITIES,
    "relations": [
        {"source": "Ana Costa", "target": "Contoso", "type": "WORKS_AT", "quote": "Ana Costa works at Contoso."}
    ],
}


def decide(conn: psycopg.Connection, tenant: str, *calls: str) -> None:
    with tenant_transaction(conn, tenant):
        for call in calls:
            conn.execute(call)
    build(conn, tenant, HashEmbedder(512))


def typed(conn: psycopg.Connection, tenant: str) -> list[tuple]:
    with tenant_transaction(conn, tenant):
        return conn.execute(  # type: ignore[return-value]
            "SELECT g.rel, g.weight, (SELECT count(*) FROM kgrag.relation_evidence AS r"
            "  WHERE r.src = g.src AND r.dst = g.dst) FROM kgrag.edge AS g"
            " WHERE g.rel <> 'CO_OCCURS' ORDER BY 1"
        ).fetchall()


def fresh(conn: psycopg.Connection, tmp_path: Path, docs: list[dict], *calls: str) -> list[tuple]:
    """The same documents and the decisions that count, in a tenant that never saw the others."""
    assert ingest(conn, tmp_path, docs, tenant="fresh").ok
    decide(conn, "fresh", *calls)
    return typed(conn, "fresh")


MANAGES = f"'{ANA}', 'MANAGES', '{CONTOSO}'"


@pytest.mark.parametrize(
    ("steps", "final", "edges"),
    [
        # a correction corrected again: the last one counts
        (
            [f"SELECT kgrag.correct_relation({MANAGES}, 'RUNS')", f"SELECT kgrag.correct_relation({MANAGES}, 'LEADS')"],
            [f"SELECT kgrag.correct_relation({MANAGES}, 'LEADS')"],
            ["LEADS", "WORKS_AT"],
        ),
        # a correction, then the relation rejected: nothing of it is left
        (
            [f"SELECT kgrag.correct_relation({MANAGES}, 'RUNS')", f"SELECT kgrag.reject_relation({MANAGES})"],
            [f"SELECT kgrag.reject_relation({MANAGES})"],
            ["WORKS_AT"],
        ),
        # corrected into a type that is then rejected: neither is built
        (
            [
                f"SELECT kgrag.correct_relation({MANAGES}, 'WORKS_AT')",
                f"SELECT kgrag.reject_relation('{ANA}', 'WORKS_AT', '{CONTOSO}')",
            ],
            [
                f"SELECT kgrag.correct_relation({MANAGES}, 'WORKS_AT')",
                f"SELECT kgrag.reject_relation('{ANA}', 'WORKS_AT', '{CONTOSO}')",
            ],
            [],
        ),
        # a chain of corrections is followed to its end
        (
            [
                f"SELECT kgrag.correct_relation({MANAGES}, 'WORKS_AT')",
                f"SELECT kgrag.correct_relation('{ANA}', 'WORKS_AT', '{CONTOSO}', 'EMPLOYED_BY')",
            ],
            [
                f"SELECT kgrag.correct_relation({MANAGES}, 'WORKS_AT')",
                f"SELECT kgrag.correct_relation('{ANA}', 'WORKS_AT', '{CONTOSO}', 'EMPLOYED_BY')",
            ],
            ["EMPLOYED_BY"],
        ),
        # approved: taken back
        (
            [f"SELECT kgrag.correct_relation({MANAGES}, 'RUNS')", f"SELECT kgrag.approve('{ANA}|MANAGES|{CONTOSO}')"],
            [],
            ["MANAGES", "WORKS_AT"],
        ),
    ],
)
def test_decisions_one_after_another_leave_a_fresh_graph(
    conn: psycopg.Connection, tmp_path: Path, steps: list[str], final: list[str], edges: list[str]
) -> None:
    assert ingest(conn, tmp_path, [TEAM, OTHER]).ok
    for step in steps:  # each applied by a build of its own
        decide(conn, "t1", step)
    had = typed(conn, "t1")
    assert [rel for rel, *_ in had] == edges
    assert had == fresh(conn, tmp_path, [TEAM, OTHER], *final)


def test_a_correction_forgotten_with_its_document_leaves_no_edge_behind(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    assert ingest(conn, tmp_path, [TEAM, OTHER]).ok
    decide(conn, "t1", f"SELECT kgrag.correct_relation({MANAGES}, 'RUNS')")
    assert [rel for rel, *_ in typed(conn, "t1")] == ["RUNS", "WORKS_AT"]
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['team'])")
    assert typed(conn, "t1") == [("WORKS_AT", 1.0, 1)] == fresh(conn, tmp_path, [OTHER])

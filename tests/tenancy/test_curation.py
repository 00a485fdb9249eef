"""A curator in psql's place (a login role granted kgrag_curator and one tenant) works the review
queue; the decisions are recorded with who and when, the build applies them, and they survive a
re-ingestion of a changed document and a rebuild; deleting the document forgets them. The curator
may decide and nothing else; a reader may not decide."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from conftest import as_role
from ingesting import ingest, q

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build

ANA, CONTOSO, BRUNO = "person:ana costa", "organization:contoso", "person:bruno lima"
ENTITIES = [
    {"name": "Ana Costa", "type": "Person"},
    {"name": "Contoso", "type": "Organization"},
    {"name": "Bruno Lima", "type": "Person"},
]


def team(text: str) -> dict:
    return {
        "doc_id": "team",
        "text": text,
        "entities": ENTITIES,
        "relations": [
            {"source": "Ana Costa", "target": "Contoso", "type": "MANAGES", "quote": "Ana Costa manages Contoso"},
            {
                "source": "Ana Costa",
                "target": "Bruno Lima",
                "type": "MENTORS",
                "confidence": 0.4,
                "quote": "she may be mentoring Bruno Lima",
            },
            {
                "source": "Bruno Lima",
                "target": "Contoso",
                "type": "OWNS",
                "negated": True,
                "quote": "Bruno Lima does not own Contoso",
            },
        ],
    }


FIRST = team("Ana Costa manages Contoso, and she may be mentoring Bruno Lima. Bruno Lima does not own Contoso.")
CHANGED = team(
    "Ana Costa manages Contoso, they say, and she may be mentoring Bruno Lima. Bruno Lima does not own Contoso."
)


def edges(conn: psycopg.Connection) -> list[tuple]:
    return q(conn, "SELECT src, rel, dst FROM kgrag.edge WHERE rel <> 'CO_OCCURS' ORDER BY 1, 2, 3")


def test_a_curator_works_the_queue_and_the_decisions_last(
    conn: psycopg.Connection, admin: psycopg.Connection, dsn: str, login_roles: Callable[[str], str], tmp_path: Path
) -> None:
    assert ingest(conn, tmp_path, [FIRST]).ok
    build(conn, "t1", HashEmbedder(512))
    assert (ANA, "MANAGES", CONTOSO) in edges(conn)
    curator, reader = login_roles("kgrag_curator"), login_roles("kgrag_reader")
    for role in (curator, reader):
        admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [role])
    admin.commit()

    with psycopg.connect(as_role(dsn, curator)) as own:
        with tenant_transaction(own, "t1"):
            queue = own.execute("SELECT item, target FROM kgrag.review_queue WHERE item <> 'sample'").fetchall()
            assert ("low_confidence", f"{ANA}|MENTORS|{BRUNO}") in queue
            assert ("negated", f"{BRUNO}|OWNS|{CONTOSO}") in queue
            said = own.execute("SELECT kgrag.reject_relation('Ana Costa', 'manages', 'Contoso', 'she works there')")
            assert "rejected" in said.fetchone()[0]  # type: ignore[index]
            own.execute("SELECT kgrag.rename_entity('Bruno Lima', 'Bruno A. Lima')")
            own.execute("SELECT kgrag.approve(%s, 'checked with HR')", [f"{ANA}|MENTORS|{BRUNO}"])
            left = own.execute("SELECT target FROM kgrag.review_queue").fetchall()
            assert (f"{ANA}|MENTORS|{BRUNO}",) not in left
            decided = own.execute("SELECT kind, target, doc_id, decided_by FROM kgrag.decisions ORDER BY 1").fetchall()
        assert decided == [
            ("approve", f"{ANA}|MENTORS|{BRUNO}", "team", curator),
            ("reject_relation", f"{ANA}|MANAGES|{CONTOSO}", "team", curator),
            ("rename_entity", BRUNO, None, curator),
        ]
        # deciding is all it may do: no table of the graph, no forged author, no other tenant
        for statement in (
            "UPDATE kgrag.entity SET name = 'x'",
            "DELETE FROM kgrag.edge",
            "INSERT INTO kgrag.curation (tenant_id, kind, target, decided_by) VALUES ('t1', 'approve', 'x', 'someone')",
            "UPDATE kgrag.curation SET note = 'x'",
            "INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t1', 'd', 'h')",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(own, "t1"):
                own.execute(statement)
        with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(own, "t2"):
            pass
    with (  # a reader reads the queue, and may not decide
        psycopg.connect(as_role(dsn, reader)) as own,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
        tenant_transaction(own, "t1"),
    ):
        own.execute("SELECT kgrag.reject_relation('Bruno Lima', 'owns', 'Contoso')")

    # the build applies them; a changed document and a rebuild keep them
    assert edges(conn) == [(ANA, "MANAGES", CONTOSO), (ANA, "MENTORS", BRUNO)]  # decided, not applied yet
    built = build(conn, "t1", HashEmbedder(512))
    assert (built.renamed, built.relations_decided) == (1, 1)
    assert edges(conn) == [(ANA, "MENTORS", BRUNO)]
    names = "SELECT name FROM kgrag.entity WHERE entity_id = %s"
    assert q(conn, names, BRUNO) == [("Bruno A. Lima",)]
    summary = ingest(conn, tmp_path, [CHANGED])
    assert summary.ok and summary.written == 1
    assert edges(conn) == [(ANA, "MENTORS", BRUNO)] and q(conn, names, BRUNO) == [("Bruno A. Lima",)]
    built = build(conn, "t1", HashEmbedder(512), force=True)
    assert (built.renamed, built.relations_decided) == (0, 0)
    assert edges(conn) == [(ANA, "MENTORS", BRUNO)] and q(conn, names, BRUNO) == [("Bruno A. Lima",)]

    # approving a rejected relation takes the rejection back
    with tenant_transaction(admin, "t1"):
        admin.execute("SELECT kgrag.approve(%s)", [f"{ANA}|MANAGES|{CONTOSO}"])
    admin.commit()
    assert build(conn, "t1", HashEmbedder(512)).relations_decided == 1
    assert edges(conn) == [(ANA, "MANAGES", CONTOSO), (ANA, "MENTORS", BRUNO)]

    # deleting the document forgets what came from it, decisions about it included
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['team'])")
    assert q(conn, "SELECT kind, doc_id FROM kgrag.curation WHERE doc_id IS NOT NULL") == []
    assert q(conn, "SELECT kind FROM kgrag.curation") == [("rename_entity",)]


def test_decisions_are_checked(conn: psycopg.Connection, tmp_path: Path) -> None:
    assert ingest(conn, tmp_path, [FIRST]).ok
    for call, message in (
        ("SELECT kgrag.reject_relation('Ana Costa', 'owns', 'Contoso')", "no relation Ana Costa -\\[owns\\]-> Contoso"),
        ("SELECT kgrag.rename_entity('Bruno Lima', '  ')", "a name has 1 to 300 characters"),
        ("SELECT kgrag.rename_entity('Nobody', 'x')", "no entity is named"),
        ("SELECT kgrag.approve('no-such-thing')", "no review item or entity"),
        ("SELECT kgrag.approve('a|B|c')", "no relation"),
        ("SELECT kgrag.approve('person:ana costa', repeat('n', 2001))", "a note is at most 2,000 characters"),
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=message), tenant_transaction(conn, "t1"):
            conn.execute(call)

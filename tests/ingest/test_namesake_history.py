"""Namesakes whatever the history: documents of one name came one by one in any order, were deleted,
changed and merged, or written by two writers at once, and the graph is the one a fresh ingestion of
the final documents gives (co-occurrence weights, degrees, mentions, sources, aliases, evidence)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest
from ingesting import ingest

from pgkgrag.db.connections import WRITER, connect, tenant_transaction


def sections(*paras: str) -> str:
    return "\n\n".join(f"# S{i}\n\n{p}" for i, p in enumerate(paras))


def person(name: str) -> dict:
    return {"name": name, "type": "Person"}


def org(name: str) -> dict:
    return {"name": name, "type": "Organization"}


# Ana Lima the accountant (a1, a2: Acme), Ana Lima the nurse (b1-b3: Beta Clinic), and a singer (z1)
A1 = {
    "doc_id": "a1",
    "text": sections("Ana Lima works at Acme with Bruno Costa.", "Ana Lima met Bruno Costa at Acme again."),
    "entities": [person("Ana Lima"), person("Bruno Costa"), org("Acme")],
    "relations": [
        {
            "source": "Ana Lima",
            "target": "Bruno Costa",
            "type": "KNOWS",
            "quote": "Ana Lima works at Acme with Bruno Costa.",
        }
    ],
}
A2 = {"doc_id": "a2", "text": sections("Ana Lima audits Acme.", "Ana Lima audits Acme twice."),
      "entities": [person("Ana Lima"), org("Acme")]}  # fmt: skip
B1 = {
    "doc_id": "b1",
    "text": sections("Ana Lima nurses at Beta Clinic with Carla Dias.", "Carla Dias runs Beta Clinic."),
    "entities": [person("Ana Lima"), person("Carla Dias"), org("Beta Clinic")],
    "relations": [
        {
            "source": "Carla Dias",
            "target": "Ana Lima",
            "type": "KNOWS",
            "quote": "Ana Lima nurses at Beta Clinic with Carla Dias.",
        }
    ],
}
B2 = {"doc_id": "b2", "text": sections("Ana Lima joined Beta Clinic.", "Ana Lima likes Beta Clinic."),
      "entities": [person("Ana Lima"), org("Beta Clinic")]}  # fmt: skip
B3 = {"doc_id": "b3", "text": sections("Ana Lima at Beta Clinic on nights."),
      "entities": [person("Ana Lima"), org("Beta Clinic")]}  # fmt: skip
Z1 = {
    "doc_id": "z1",
    "text": sections("Ana Lima sings at Zeta Bar."),
    "entities": [person("Ana Lima"), org("Zeta Bar")],
}
ALL = [A1, A2, B1, B2, B3, Z1]

STATE = {
    "entity": "SELECT entity_id, name, description, degree FROM kgrag.entity ORDER BY 1",
    "edge": "SELECT src, dst, rel, weight FROM kgrag.edge ORDER BY 1, 2, 3",
    "mention": "SELECT entity_id, chunk_id FROM kgrag.mention ORDER BY 1, 2",
    "source": "SELECT entity_id, doc_id, name_key FROM kgrag.entity_source ORDER BY 1, 2",
    "alias": "SELECT entity_id, alias, sourced FROM kgrag.alias ORDER BY 1, 2",
    "alias_source": "SELECT entity_id, alias, doc_id FROM kgrag.alias_source ORDER BY 1, 2, 3",
    "evidence": "SELECT src, dst, rel, chunk_id FROM kgrag.relation_evidence ORDER BY 1, 2, 3, 4",
    # co-occurrence weights that are not the chunks citing both (none, whatever the history)
    "miscounted": """
        WITH truth AS (SELECT m1.entity_id AS a, m2.entity_id AS b, count(*)::float8 AS w
                         FROM kgrag.mention AS m1
                         JOIN kgrag.mention AS m2 ON m1.chunk_id = m2.chunk_id AND m1.entity_id <> m2.entity_id
                        GROUP BY 1, 2),
             held AS (SELECT src AS a, dst AS b, weight AS w FROM kgrag.edge WHERE rel = 'CO_OCCURS')
        SELECT 'missing', * FROM (SELECT * FROM truth EXCEPT SELECT * FROM held) AS x
        UNION ALL SELECT 'extra', * FROM (SELECT * FROM held EXCEPT SELECT * FROM truth) AS y""",
}


def small_chunks(conn: psycopg.Connection, tenant: str) -> None:
    """A chunk a section: several chunks a document, so weights count chunks, not documents."""
    with tenant_transaction(conn, tenant):
        conn.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'chunk_max_chars', '70'),"
            " (%s, 'chunk_min_chars', '10'), (%s, 'chunk_overlap_chars', '0')",
            [tenant] * 3,
        )


def state(conn: psycopg.Connection, tenant: str) -> dict[str, list[tuple]]:
    with tenant_transaction(conn, tenant):
        return {name: conn.execute(query).fetchall() for name, query in STATE.items()}  # type: ignore[arg-type]


def same_as_fresh(conn: psycopg.Connection, tmp_path: Path, tenant: str, final: list[dict]) -> None:
    fresh = f"{tenant}_fresh"
    small_chunks(conn, fresh)
    assert ingest(conn, tmp_path, final, tenant=fresh).ok
    had, want = state(conn, tenant), state(conn, fresh)
    assert had["miscounted"] == [] and want["miscounted"] == []
    assert {k: v for k, v in had.items() if v != want[k]} == {}


@pytest.mark.parametrize("order", [[B3, Z1, A2, B1, A1, B2], [B2, B3, B1, A1, A2, Z1]])
def test_one_by_one_in_any_order_is_a_fresh_ingestion(
    conn: psycopg.Connection, tmp_path: Path, order: list[dict]
) -> None:
    small_chunks(conn, "inc")
    for doc in order:
        assert ingest(conn, tmp_path, [doc], tenant="inc").ok
    same_as_fresh(conn, tmp_path, "inc", ALL)


def test_deletions_changes_and_decisions_leave_a_fresh_graph(conn: psycopg.Connection, tmp_path: Path) -> None:
    small_chunks(conn, "inc")
    assert ingest(conn, tmp_path, ALL, tenant="inc").ok
    with tenant_transaction(conn, "inc"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['a1'])")  # Beta becomes the larger: ids swap
    b2x = dict(
        B2, text=sections("Ana Lima joined Acme.", "Ana Lima likes Acme."), entities=[person("Ana Lima"), org("Acme")]
    )
    assert ingest(conn, tmp_path, [b2x], tenant="inc").ok  # b2 changes side
    same_as_fresh(conn, tmp_path, "inc", [A2, B1, b2x, B3, Z1])


def test_a_merge_holds_all_of_bs_documents_of_the_time(conn: psycopg.Connection, tmp_path: Path) -> None:
    assert ingest(conn, tmp_path, [A2, B2, B3, Z1]).ok

    def owners() -> dict[str, str]:
        with tenant_transaction(conn, "t1"):
            rows = conn.execute("SELECT doc_id, entity_id FROM kgrag.entity_source WHERE name = 'Ana Lima'").fetchall()
        return dict(rows)  # type: ignore[arg-type]

    before = owners()
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.merge_entities(%s, %s)", [before["a2"], before["b2"]])
        conn.execute("SELECT kgrag_private.apply_decisions()")
    merged = owners()
    assert merged["a2"] == merged["b2"] == merged["b3"] != merged["z1"]
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['b2'])")  # b's first document goes
    after = owners()
    assert after["a2"] == after["b3"] != after["z1"]
    # a type the setting no longer lists is one entity again, by name
    with tenant_transaction(conn, "t1"):
        conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'namesake_types', '[]')")
        conn.execute("SELECT kgrag.delete_documents(ARRAY['b3'])")
    assert set(owners().values()) == {"person:ana lima"}


def test_a_writer_of_a_name_waits_for_another_that_moves_its_documents(
    conn: psycopg.Connection, dsn: str, tmp_path: Path
) -> None:
    """One writer deletes a1 (the nurse's documents then take the plain id, moving b2 and b3) while
    another ingests a changed b2: the second waits for the name and counts from what the first left."""
    small_chunks(conn, "inc")
    assert ingest(conn, tmp_path, [A1, A2, B2, B3], tenant="inc").ok
    changed = dict(B2, text=sections("Ana Lima joined Beta Clinic in May.", "Ana Lima likes Beta Clinic."))
    errors: list[Exception] = []

    def second_writer() -> None:
        try:
            with connect(dsn, role=WRITER) as other:
                assert ingest(other, tmp_path, [changed], tenant="inc").ok
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)

    with tenant_transaction(conn, "inc"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['a1'])")
        writer = threading.Thread(target=second_writer)
        writer.start()
        time.sleep(2)  # the second writer is waiting now
    writer.join()
    assert errors == []
    same_as_fresh(conn, tmp_path, "inc", [A2, changed, B3])

"""Identity beyond the name: two people named João Souza in two documents stay two entities (and the
review queue says so), a third document sharing a neighbour with one joins it, a verified identifier
decides whatever the name, and the entities are the same whatever order the documents came in or
went."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from ingesting import ingest, q
from people import ACME_PAYROLL, ACME_STAFF, BETA_CLINIC, JOAO

from pgkgrag.db.connections import tenant_transaction


def entity_of(conn: psycopg.Connection, doc_id: str, name: str = "João Souza") -> str:
    (row,) = q(conn, "SELECT entity_id FROM kgrag.entity_source WHERE doc_id = %s AND name = %s", doc_id, name)
    return row[0]


def reach(conn: psycopg.Connection, start: str, hops: int = 2) -> set[str]:
    rows = q(conn, "SELECT entity_id FROM kgrag.k_hop(ARRAY[%s], %s)", start, hops)
    return {r[0] for r in rows}


def test_namesakes_in_two_documents_stay_two_people(conn: psycopg.Connection, tmp_path: Path) -> None:
    assert ingest(conn, tmp_path, [ACME_STAFF, BETA_CLINIC]).ok
    accountant, nurse = entity_of(conn, "acme-staff"), entity_of(conn, "beta-clinic")
    assert accountant != nurse and {accountant, nurse} >= {JOAO}
    described = dict(q(conn, "SELECT entity_id, description FROM kgrag.entity WHERE name = 'João Souza'"))
    assert described == {accountant: "accountant at Acme", nurse: "nurse at Beta Clinic"}
    # a colleague's 2-hop walk reaches the accountant's employer, never the nurse's
    walked = reach(conn, "Carlos Pereira")
    assert "organization:acme" in walked and "organization:beta clinic" not in walked
    # the ambiguity is queued, naming both, and linking a question says the name is ambiguous
    (item,) = q(conn, "SELECT item, target, what FROM kgrag.review_queue WHERE item = 'namesakes'")
    assert item[1] == f"namesake:{JOAO}" and accountant in item[2] and nurse in item[2]
    assert "acme-staff" in item[2] and "beta-clinic" in item[2]
    (reason,) = q(conn, "SELECT reason FROM kgrag.route(question => 'Where does João Souza work?')")
    assert "ambiguous" in reason[0] and accountant in reason[0] and nurse in reason[0]
    assert "nurse at Beta Clinic" in reason[0]
    # naming him by name alone is refused with the candidates; by id it is answered
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="is ambiguous"):
        q(conn, "SELECT kgrag.resolve_entities(ARRAY['João Souza'])")
    assert "organization:beta clinic" in reach(conn, nurse, 1)


def test_a_shared_neighbour_joins_a_third_document_to_the_right_one(conn: psycopg.Connection, tmp_path: Path) -> None:
    assert ingest(conn, tmp_path, [ACME_STAFF, BETA_CLINIC, ACME_PAYROLL]).ok
    assert entity_of(conn, "acme-payroll") == entity_of(conn, "acme-staff") == JOAO  # the most documents keep the key
    assert entity_of(conn, "beta-clinic") != JOAO
    # deleting the accountant's documents leaves the nurse alone under the plain key
    with tenant_transaction(conn, "t1"):
        conn.execute("SELECT kgrag.delete_documents(ARRAY['acme-staff', 'acme-payroll'])")
    assert entity_of(conn, "beta-clinic") == JOAO
    assert q(conn, "SELECT count(*) FROM kgrag.entity WHERE name = 'João Souza'") == [(1,)]
    assert "organization:acme" not in reach(conn, JOAO)


def test_the_same_documents_make_the_same_entities_whatever_the_order(conn: psycopg.Connection, tmp_path: Path) -> None:
    for doc in (BETA_CLINIC, ACME_PAYROLL, ACME_STAFF):  # one at a time, in another order
        assert ingest(conn, tmp_path, [doc], tenant="t2").ok
    assert ingest(conn, tmp_path, [ACME_STAFF, BETA_CLINIC, ACME_PAYROLL]).ok
    rows = (
        "SELECT e.entity_id, e.name, e.description, e.degree, "
        " (SELECT array_agg(m.chunk_id ORDER BY m.chunk_id) FROM kgrag.mention AS m WHERE m.entity_id = e.entity_id),"
        " (SELECT array_agg(g.dst || ' ' || g.rel || ' ' || g.weight ORDER BY g.dst, g.rel) FROM kgrag.edge AS g"
        "   WHERE g.src = e.entity_id)"
        " FROM kgrag.entity AS e ORDER BY 1"
    )
    with tenant_transaction(conn, "t2"):
        second = conn.execute(rows).fetchall()
    assert q(conn, rows) == second


def test_a_verified_identifier_decides_whatever_the_name(conn: psycopg.Connection, tmp_path: Path) -> None:
    docs = [
        {
            "doc_id": "badge",
            "text": "Badge EMP-0042 belongs to J. Souza of Acme.",
            "entities": [{"name": "J. Souza", "type": "Person", "identifier": "EMP-0042"}],
        },
        {
            "doc_id": "roster",
            "text": "João Souza (EMP-0042) joined the audit.",
            "entities": [{"name": "João Souza", "type": "Person", "identifier": "EMP-0042"}],
        },
        {
            "doc_id": "other",
            "text": "João Souza (EMP-0077) joined the night shift.",
            "entities": [{"name": "João Souza", "type": "Person", "identifier": " EMP-0077 "}],
        },
        {  # a short form given with an identifier is that entity: not folded into the full name
            "doc_id": "memo",
            "text": "João Souza signed. Souza (EMP-0042) approved.",
            "entities": [
                {"name": "João Souza", "type": "Person"},
                {"name": "Souza", "type": "Person", "identifier": "EMP-0042"},
            ],
        },
        {  # an identifier of punctuation only identifies nothing: the name decides
            "doc_id": "blank",
            "text": "Ana Lima filed the form.",
            "entities": [{"name": "Ana Lima", "type": "Person", "identifier": "--"}],
        },
    ]
    assert ingest(conn, tmp_path, docs).ok
    ids = sorted(q(conn, "SELECT doc_id, entity_id FROM kgrag.entity_source ORDER BY 1, 2"))
    assert ids == [
        ("badge", "person:#emp0042"),
        ("blank", "person:ana lima"),
        ("memo", "person:#emp0042"),
        ("memo", "person:joao souza"),
        ("other", "person:#emp0077"),
        ("roster", "person:#emp0042"),
    ]
    aliases = {a for (a,) in q(conn, "SELECT alias FROM kgrag.alias WHERE entity_id = 'person:#emp0042'")}
    assert aliases == {"J. Souza", "João Souza", "Souza"}
    # an identifier longer than a name may be refuses its document, by name
    too_long = [
        {"doc_id": "long", "text": "X.", "entities": [{"name": "X", "type": "Person", "identifier": "9" * 400}]}
    ]
    summary = ingest(conn, tmp_path, too_long)
    assert not summary.ok and "identifier" in str(summary.rejected_inputs)

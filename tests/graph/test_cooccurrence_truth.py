"""A fact that does not hold, or that a curator rejected, does not come back through co-occurrence.

Co-occurrence is what the chunks naming two entities say. A chunk that states a relation between
them lends the pair only while that relation is walked; a chunk that names an entity only in
relations of another time does not lend it (kgrag_private.pair_walkable). Ingested as a writer
(provided relations, as an extractor gives them), decided by a curator in psql, walked and searched
as a login role granted kgrag_reader."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from commands import psql
from conftest import as_role
from ingesting import ingest

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build

ANA, CONTOSO, NORTHWIND = "person:ana costa", "organization:contoso", "organization:northwind traders"
BRUNO, DIEGO = "person:bruno lima", "person:diego alves"

DOCS = [
    {
        "doc_id": "ana",
        "text": "Ana Costa worked at Northwind Traders from 2015 to 2019 and joined Contoso in 2020.",
        "entities": [
            {"name": "Ana Costa", "type": "Person"},
            {"name": "Northwind Traders", "type": "Organization"},
            {"name": "Contoso", "type": "Organization"},
        ],
        "relations": [
            {
                "source": "Ana Costa",
                "target": "Northwind Traders",
                "type": "WORKED_AT",
                "valid_from": "2015-01-01",
                "valid_to": "2020-01-01",
                "quote": "Ana Costa worked at Northwind Traders from 2015 to 2019",
            },
            {
                "source": "Ana Costa",
                "target": "Contoso",
                "type": "WORKED_AT",
                "valid_from": "2020-01-01",
                "quote": "joined Contoso in 2020",
            },
        ],
    },
    {
        "doc_id": "rumour",
        "text": "A rumour says Bruno Lima mentors Diego Alves. Diego Alves leads the data team.",
        "entities": [{"name": "Bruno Lima", "type": "Person"}, {"name": "Diego Alves", "type": "Person"}],
        "relations": [
            {
                "source": "Bruno Lima",
                "target": "Diego Alves",
                "type": "MENTORS",
                "confidence": 0.4,
                "quote": "Bruno Lima mentors Diego Alves",
            }
        ],
    },
    {
        "doc_id": "denied",
        "text": "Carla Dias never worked at Globex.",
        "entities": [{"name": "Carla Dias", "type": "Person"}, {"name": "Globex", "type": "Organization"}],
        "relations": [
            {"source": "Carla Dias", "target": "Globex", "type": "WORKED_AT", "negated": True, "quote": "never worked"}
        ],
    },
]


@pytest.fixture
def reader(
    conn: psycopg.Connection, admin: psycopg.Connection, dsn: str, login_roles: Callable[[str], str], tmp_path: Path
) -> Iterator[psycopg.Connection]:
    summary = ingest(conn, tmp_path, DOCS)
    assert summary.ok, summary.rejected_inputs
    build(conn, "t1", HashEmbedder(512))
    role = login_roles("kgrag_reader")
    admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [role])
    admin.commit()
    with psycopg.connect(as_role(dsn, role)) as own:
        yield own


def walk(conn: psycopg.Connection, seed: str, hops: int = 2, **options: object) -> dict[str, int]:
    params = "".join(f", {name} => %s" for name in options)
    with tenant_transaction(conn, "t1"):
        found = conn.execute(
            f"SELECT entity_id, hop FROM kgrag.k_hop(ARRAY[%s], {hops}{params}) WHERE hop > 0",
            [seed, *options.values()],
        ).fetchall()
    return dict(found)  # type: ignore[arg-type]


def context(conn: psycopg.Connection, question: str) -> str:
    with tenant_transaction(conn, "t1"):
        row = conn.execute("SELECT kgrag.context(NULL, 'local', %s, 4000)", [question]).fetchone()
    assert row is not None
    return str(row[0])


def test_an_employer_of_the_past_does_not_come_back_through_the_current_one(reader: psycopg.Connection) -> None:
    # the sentence names Contoso and Northwind together: their co-occurrence is stored
    with tenant_transaction(reader, "t1"):
        stored = reader.execute(
            "SELECT count(*) FROM kgrag.edge WHERE rel = 'CO_OCCURS' AND src = %s AND dst = %s", [CONTOSO, NORTHWIND]
        ).fetchone()
    assert stored == (1,)
    assert walk(reader, "Ana Costa") == {CONTOSO: 1}  # not Northwind at hop 2 by [ana, contoso, northwind]
    assert walk(reader, "Ana Costa", as_of="2017-06-01T00:00:00Z") == {NORTHWIND: 1}
    assert walk(reader, "Ana Costa", history=True) == {CONTOSO: 1, NORTHWIND: 1}
    assert walk(reader, "Contoso", 1, history=True) == {ANA: 1, NORTHWIND: 1}  # every time: as the text says
    assert walk(reader, "Contoso", 1) == {ANA: 1}
    said = context(reader, "Where does Ana Costa work?")
    # the sentence is quoted as it stands; no step of the walk leads to Northwind
    assert "-[WORKED_AT]-> Contoso" in said and "-> Northwind" not in said and "[entity Northwind" not in said, said
    with tenant_transaction(reader, "t1"):
        ppr = reader.execute(
            "SELECT node_id FROM kgrag.personalized_pagerank(ARRAY['Contoso'], hops => 2) WHERE kind = 'entity'"
        ).fetchall()
    assert (NORTHWIND,) not in ppr


def test_a_rejected_or_weak_relation_does_not_come_back_through_its_own_sentence_or_answer(
    reader: psycopg.Connection,
    conn: psycopg.Connection,
    admin: psycopg.Connection,
    dsn: str,
    login_roles: Callable[[str], str],
) -> None:
    assert walk(reader, "Bruno Lima", 1) == {DIEGO: 1}
    answer = "SELECT answer FROM kgrag.entities WHERE entity_id = %s"
    with tenant_transaction(reader, "t1"):
        assert reader.execute(answer, [DIEGO]).fetchone() == ("A rumour says Bruno Lima mentors Diego Alves.",)
    assert walk(reader, "Bruno Lima", 1, min_confidence=0.5) == {}  # 0.4: not MENTORS, not its sentence either
    assert walk(reader, "Diego Alves", 1, direction="out") == {BRUNO: 1}  # back along the co-occurrence
    assert walk(reader, "Diego Alves", 1, min_confidence=0.5) == {}
    # denied: the sentence that says he never worked there does not link them either
    assert walk(reader, "Carla Dias", 1, history=True) == {}
    curator = login_roles("kgrag_curator")
    admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [curator])
    admin.commit()
    out = psql(
        as_role(dsn, curator),
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        "BEGIN; SELECT kgrag.use_tenant('t1');"
        " SELECT kgrag.reject_relation('Bruno Lima', 'mentors', 'Diego Alves', 'a rumour, not a fact'); COMMIT;",
    )
    assert out.returncode == 0, out.stderr
    build(conn, "t1", HashEmbedder(512))
    assert walk(reader, "Bruno Lima", 1) == {}
    assert walk(reader, "Diego Alves", 1, history=True) == {}
    with tenant_transaction(reader, "t1"):  # the rumour is no answer once rejected
        assert reader.execute(answer, [DIEGO]).fetchone() == ("Diego Alves leads the data team.",)
    said = context(reader, "Who does Bruno Lima mentor?")
    assert "MENTORS" not in said and "[entity Diego" not in said, said


def test_a_denied_fact_or_a_dated_sentence_does_not_come_back_through_another_entity(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    """Found by review: a company someone never worked at, named beside the one they do, is not
    reached through it; and a dated sentence is held back even where another sentence states the
    same relation without dates (so its edge has none)."""
    docs = [
        {
            "doc_id": "denied",
            "text": "Bruno Lima never worked at Globex; he works at Acme.",
            "entities": [
                {"name": "Bruno Lima", "type": "Person"},
                {"name": "Globex", "type": "Organization"},
                {"name": "Acme", "type": "Organization"},
            ],
            "relations": [
                {"source": "Bruno Lima", "target": "Globex", "type": "WORKED_AT", "negated": True, "quote": "never"},
                {"source": "Bruno Lima", "target": "Acme", "type": "WORKS_AT", "quote": "he works at Acme"},
            ],
        },
        {
            "doc_id": "dated",
            "text": "Ana Costa worked at Northwind Traders from 2015 to 2019 and joined Contoso in 2020.",
            "entities": DOCS[0]["entities"],
            "relations": DOCS[0]["relations"],
        },
        {
            "doc_id": "undated",
            "text": "Ana Costa worked at Northwind Traders.",
            "entities": DOCS[0]["entities"][:2],
            "relations": [{"source": "Ana Costa", "target": "Northwind Traders", "type": "WORKED_AT"}],
        },
    ]
    assert ingest(conn, tmp_path, docs, tenant="t2").ok
    with tenant_transaction(conn, "t2"):
        reached = "SELECT entity_id FROM kgrag.k_hop(ARRAY[%s], %s) WHERE hop > 0 ORDER BY 1"
        assert conn.execute(reached, ["Bruno Lima", 2]).fetchall() == [("organization:acme",)]
        assert conn.execute(reached, ["Acme", 1]).fetchall() == [(BRUNO,)]
        assert (NORTHWIND,) not in conn.execute(reached, ["Contoso", 1]).fetchall()

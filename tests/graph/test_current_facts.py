"""Current facts by default: a relation that no longer holds (or does not hold yet) is not walked,
answered or put in a context unless the caller asks for another time (as_of) or for history, and
the co-occurrence of the same pair does not bring it back; min_confidence keeps weak relations out
of the walk. Ingested as a writer, read as a login role granted kgrag_reader, as users do."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import as_role
from ingesting import ingest

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build

ANA = "person:#emp1001"  # one person in both documents: her employee number says so
NORTHWIND = "organization:northwind"
CONTOSO = "organization:contoso"
BRUNO = "person:bruno lima"

DOCS = [
    {
        "doc_id": "ana-2015",
        "text": "Ana Costa joined Northwind in 2015 as an accountant and left it at the end of 2019.",
        "entities": [
            {"name": "Ana Costa", "type": "Person", "identifier": "EMP-1001"},
            {"name": "Northwind", "type": "Organization"},
        ],
        "relations": [
            # dates without a time: midnight UTC
            {
                "source": "Ana Costa",
                "target": "Northwind",
                "type": "WORKED_AT",
                "valid_from": "2015-01-01",
                "valid_to": "2020-01-01",
                "quote": "Ana Costa joined Northwind in 2015",
            }
        ],
    },
    {
        "doc_id": "ana-2020",
        "text": "Ana Costa has worked at Contoso since 2020. She may be mentoring Bruno Lima there.",
        "entities": [
            {"name": "Ana Costa", "type": "Person", "identifier": "EMP-1001"},
            {"name": "Contoso", "type": "Organization"},
            {"name": "Bruno Lima", "type": "Person"},
        ],
        "relations": [
            {
                "source": "Ana Costa",
                "target": "Contoso",
                "type": "WORKED_AT",
                "valid_from": "2020-01-01T00:00:00Z",
                "quote": "Ana Costa has worked at Contoso since 2020",
            },
            {
                "source": "Ana Costa",
                "target": "Bruno Lima",
                "type": "MENTORS",
                "confidence": 0.4,
                "quote": "She may be mentoring Bruno Lima",
            },
        ],
    },
]


@pytest.fixture
def reader(
    conn: psycopg.Connection, admin: psycopg.Connection, dsn: str, login_roles: Callable[[str], str], tmp_path: Path
) -> Iterator[psycopg.Connection]:
    """The graph of DOCS, ingested as a writer, and a connection of a login role granted
    kgrag_reader and the tenant."""
    summary = ingest(conn, tmp_path, DOCS)
    assert summary.ok, summary.rejected_inputs
    role = login_roles("kgrag_reader")
    admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [role])
    admin.commit()
    with psycopg.connect(as_role(dsn, role)) as own:
        yield own


def rows(conn: psycopg.Connection, query: str, params: list[object] | None = None) -> list[tuple]:
    """One statement in a transaction acting for t1."""
    with tenant_transaction(conn, "t1"):
        return conn.execute(query, params or []).fetchall()  # type: ignore[arg-type]


def reached(conn: psycopg.Connection, **options: object) -> set[str]:
    params = "".join(f", {name} => %s" for name in options)
    query = f"SELECT entity_id FROM kgrag.k_hop(ARRAY['Ana Costa'], 1{params}) WHERE hop = 1 ORDER BY 1"
    return {row[0] for row in rows(conn, query, list(options.values()))}


def test_the_walk_follows_the_relations_that_hold(reader: psycopg.Connection) -> None:
    stored = rows(
        reader,
        "SELECT dst, valid_from AT TIME ZONE 'UTC', valid_to AT TIME ZONE 'UTC' FROM kgrag.edge"
        " WHERE rel = 'WORKED_AT' ORDER BY dst",
    )
    assert [(dst, str(start), str(end)) for dst, start, end in stored] == [
        (CONTOSO, "2020-01-01 00:00:00", "None"),
        (NORTHWIND, "2015-01-01 00:00:00", "2020-01-01 00:00:00"),
    ]
    # the co-occurrence of Ana and Northwind is stored, undated, and is not walked while WORKED_AT does not hold
    cooccurs = "SELECT count(*) FROM kgrag.edge WHERE rel = 'CO_OCCURS' AND src = %s AND dst = %s"
    assert rows(reader, cooccurs, [ANA, NORTHWIND]) == [(1,)]
    assert reached(reader) == {BRUNO, CONTOSO}  # now: the current employer only
    assert reached(reader, as_of="2017-06-01T00:00:00Z") == {BRUNO, NORTHWIND}  # MENTORS is undated
    assert reached(reader, as_of="2024-06-01T00:00:00Z") == {BRUNO, CONTOSO}
    assert reached(reader, history=True) == {BRUNO, CONTOSO, NORTHWIND}
    assert reached(reader, min_confidence=0.5, relations=["MENTORS"]) == set()
    assert reached(reader, min_confidence=0.3, relations=["MENTORS"]) == {BRUNO}
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="min_confidence must be between 0 and 1"):
        reached(reader, min_confidence=1.5)


def test_the_steps_are_named_and_dated_as_at_that_time(reader: psycopg.Connection) -> None:
    steps = (
        "SELECT entity_id, rel, valid_from IS NOT NULL, valid_to IS NOT NULL"
        " FROM kgrag.neighbourhood(ARRAY['Ana Costa'], 1{}) WHERE hop = 1 ORDER BY 1"
    )
    assert rows(reader, steps.format("")) == [(CONTOSO, "WORKED_AT", True, False), (BRUNO, "MENTORS", False, False)]
    assert rows(reader, steps.format(", as_of => '2017-06-01Z'")) == [
        (NORTHWIND, "WORKED_AT", True, True),
        (BRUNO, "MENTORS", False, False),
    ]
    # the relation of a step, for a path given by hand: the one that holds, else the co-occurrence
    relation = "SELECT rel FROM kgrag.path_relations(ARRAY[%s, %s]{})"
    assert rows(reader, relation.format(""), [ANA, NORTHWIND]) == [("CO_OCCURS",)]
    assert rows(reader, relation.format(", history => true"), [ANA, NORTHWIND]) == [("WORKED_AT",)]


def test_search_and_context_hold_the_current_facts(reader: psycopg.Connection) -> None:
    def entities(options: str) -> list[str]:
        found = rows(
            reader,
            "SELECT ref_id FROM kgrag.kgrag_search(question => 'Where does Ana Costa work?', route => 'local',"
            " options => %s::jsonb) WHERE kind = 'entity' ORDER BY ref_id",
            [options],
        )
        return [row[0] for row in found]

    assert NORTHWIND not in entities('{"seed_entities": ["Ana Costa"]}')
    assert CONTOSO in entities('{"seed_entities": ["Ana Costa"]}')
    # a date alone is that day's midnight UTC
    then = entities('{"seed_entities": ["Ana Costa"], "as_of": "2017-06-01", "hops": 1}')  # (2: via Bruno)
    assert NORTHWIND in then and CONTOSO not in then
    assert {NORTHWIND, CONTOSO} <= set(entities('{"seed_entities": ["Ana Costa"], "history": true}'))
    assert BRUNO not in entities('{"seed_entities": ["Ana Costa"], "min_confidence": 0.5, "relations": ["MENTORS"]}')
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"min_confidence 0\.\.1"):
        entities('{"min_confidence": 2}')
    [(context,)] = rows(
        reader,
        "SELECT kgrag.context(question => 'Where does Ana Costa work?', route => 'local',"
        ' options => \'{"seed_entities": ["Ana Costa"], "history": true}\')',
    )
    assert "Ana Costa -[WORKED_AT]-> Northwind (2015-01-01 to 2020-01-01)" in context
    assert "Ana Costa -[WORKED_AT]-> Contoso (since 2020-01-01)" in context


def test_pagerank_follows_the_relations_that_hold(reader: psycopg.Connection) -> None:
    """The walk's subgraph holds Northwind only where WORKED_AT holds (history, or 2017)."""
    mass = "SELECT kind, mass > 0 FROM kgrag.personalized_pagerank(ARRAY['Ana Costa'], hops => 1{}) WHERE node_id = %s"
    assert rows(reader, mass.format(""), [NORTHWIND]) == []
    assert rows(reader, mass.format(""), [CONTOSO]) == [("entity", True)]
    assert rows(reader, mass.format(", as_of => '2017-06-01Z'"), [NORTHWIND]) == [("entity", True)]
    assert rows(reader, mass.format(", as_of => '2017-06-01Z'"), [CONTOSO]) == []
    assert rows(reader, mass.format(", history => true"), [NORTHWIND]) == [("entity", True)]


def test_a_tenant_setting_raises_the_confidence_walked(reader: psycopg.Connection, admin: psycopg.Connection) -> None:
    assert BRUNO in reached(reader)
    with tenant_transaction(admin, "t1"):
        admin.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'walk_min_confidence', '0.5')")
    assert reached(reader, relations=["MENTORS"]) == set()
    assert reached(reader, relations=["MENTORS"], min_confidence=0) == {BRUNO}


def test_the_degree_cap_counts_the_relations_that_hold(tconn: psycopg.Connection) -> None:
    """Expired relations do not take the places of the degree cap (a hub's stronger past partners
    left its current one out), and a pair with a relation that holds is walked both ways through
    its co-occurrence even beside an expired one (a past internship beside a current job)."""
    with tconn.acting() as conn, conn.cursor() as cur:  # type: ignore[attr-defined]
        ids = ["org:hub", "org:old0", "org:old1", "org:old2", "org:cur", "person:ana", "org:northwind"]
        cur.executemany(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) VALUES ('t1', %s, %s, 'x')",
            [(i, i.split(":")[1]) for i in ids],
        )
        rows = [("org:hub", f"org:old{i}", "PARTNER", 2, "2010-01-01", "2015-01-01") for i in range(3)]
        rows += [("org:hub", "org:cur", "PARTNER", 1, "2020-01-01", None)]
        rows += [("person:ana", "org:northwind", "INTERNED_AT", 1, "2012-01-01", "2013-01-01")]
        rows += [("person:ana", "org:northwind", "WORKS_AT", 1, "2021-01-01", None)]
        rows += [(a, b, "CO_OCCURS", 1, None, None) for a, b in (("person:ana", "org:northwind"),)]
        rows += [(b, a, "CO_OCCURS", 1, None, None) for a, b in (("person:ana", "org:northwind"),)]
        cur.executemany(
            "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight, valid_from, valid_to)"
            " VALUES ('t1', %s, %s, %s, %s, %s, %s)",
            rows,
        )
        # the chunk their co-occurrence comes from (it states neither relation)
        cur.execute("INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t1', 'd', 'h')")
        cur.execute(
            "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text, content_hash)"
            " VALUES ('t1', 'd#0', 'd', 0, 0, 1, 'x', 'h')"
        )
        cur.executemany(
            "INSERT INTO kgrag.mention (tenant_id, entity_id, chunk_id) VALUES ('t1', %s, 'd#0')",
            [("person:ana",), ("org:northwind",)],
        )
    tconn.execute("SELECT kgrag.refresh_edge_ranks(%s)", [ids])
    walk = "SELECT entity_id FROM kgrag.k_hop(ARRAY[%s], 1{}) WHERE hop = 1 ORDER BY 1"
    assert tconn.execute(walk.format(", degree_cap => 2"), ["org:hub"]).fetchall() == [("org:cur",)]
    assert tconn.execute(walk.format(", degree_cap => 2, history => true"), ["org:hub"]).fetchall() == [
        ("org:old0",),
        ("org:old1",),
    ]
    pagerank = "SELECT node_id FROM kgrag.personalized_pagerank(ARRAY['org:hub'], hops => 1, degree_cap => 2)"
    assert ("org:cur",) in tconn.execute(pagerank + " WHERE kind = 'entity'").fetchall()
    assert tconn.execute(walk.format(""), ["org:northwind"]).fetchall() == [("person:ana",)]
    assert tconn.execute(walk.format(", as_of => '2016-06-01Z'"), ["org:northwind"]).fetchall() == []


def test_the_surest_path_ranks_first(tconn: psycopg.Connection) -> None:
    """Among entities as near, the surest path ranks first (the product of its steps' confidences,
    in the payload), whatever the weights; Personalized PageRank weighs a stated relation by its
    confidence too. Ana advises Acme twice as strongly as Zeta, but is less sure of it."""
    with tconn.acting() as conn, conn.cursor() as cur:  # type: ignore[attr-defined]
        ids = ["person:ana", "org:acme", "org:zeta", "person:zoe"]
        cur.executemany(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) VALUES ('t1', %s, %s, 'x')",
            [(i, i.split(":")[1]) for i in ids],
        )
        cur.executemany(
            "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight, confidence) VALUES ('t1', %s, %s, %s, %s, %s)",
            [
                ("person:ana", "org:acme", "ADVISES", 2, 0.3),
                ("person:ana", "org:zeta", "ADVISES", 1, 0.9),
                ("org:zeta", "person:zoe", "EMPLOYS", 1, 0.5),
            ],
        )
    tconn.execute("SELECT kgrag.refresh_edge_ranks(%s)", [ids])
    found = tconn.execute(
        "SELECT ref_id, payload -> 'confidence' FROM kgrag.kgrag_search(question => 'Whom does Ana advise?',"
        " route => 'local', options => '{\"seed_entities\": [\"person:ana\"], \"hops\": 2}') WHERE kind = 'entity'"
        " ORDER BY rank"
    ).fetchall()
    assert found == [("person:ana", 1), ("org:zeta", 0.9), ("org:acme", 0.3), ("person:zoe", 0.45)]
    mass = tconn.execute(
        "SELECT node_id FROM kgrag.personalized_pagerank(ARRAY['person:ana'], hops => 1)"
        " WHERE kind = 'entity' AND node_id LIKE 'org:%' ORDER BY mass DESC"
    ).fetchall()
    assert mass == [("org:zeta",), ("org:acme",)]  # by weight alone: Acme, 2 against 1


def test_reports_state_the_current_facts_and_say_when_time_made_them_old(
    conn: psycopg.Connection, admin: psycopg.Connection, reader: psycopg.Connection
) -> None:
    build(conn, "t1", HashEmbedder(512))
    # Ana Costa and Northwind make one community: its report no longer states the expired job
    (report,) = rows(reader, "SELECT report FROM kgrag.community_report WHERE strpos(report, 'Northwind') > 0")
    assert "Ana Costa" in report[0] and "WORKED_AT" not in report[0]
    stale = "SELECT how_many FROM kgrag.staleness WHERE strpos(what, 'reports written before a relation') = 1"
    assert rows(reader, stale) == [(0,)]
    # reports written back in 2017, when the job at Northwind held and the one at Contoso was to come
    with tenant_transaction(admin, "t1"):
        admin.execute("UPDATE kgrag.community_report SET generated_at = '2017-06-01Z'")
    assert rows(reader, stale) != [(0,)]
    build(conn, "t1", HashEmbedder(512))  # writes them again
    assert rows(reader, stale) == [(0,)]

"""k_hop, fanout and edge ranks on a small hand-checkable graph with a hub.

    a -- h -- c -- g -- i        h (the hub) also links d, e, f; a -- b -- h closes a cycle;
    |         (a -[DEPENDS_ON]-> g, valid from 2025 on)
    b

Co-occurrence weights: h-a 5, h-b 4, h-c 3, h-d 2, h-e 1, h-f 1, a-b 2, c-g 1, g-i 1.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import psycopg
import pytest

PAIRS = [
    ("h", "a", 5),
    ("h", "b", 4),
    ("h", "c", 3),
    ("h", "d", 2),
    ("h", "e", 1),
    ("h", "f", 1),
    ("a", "b", 2),
    ("c", "g", 1),
    ("g", "i", 1),
]


def n(x: str) -> str:
    return f"n:{x}"


@pytest.fixture
def graph(tconn: psycopg.Connection) -> psycopg.Connection:
    names = sorted({x for p in PAIRS for x in p[:2]})
    with tconn.acting() as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) VALUES ('t1', %s, %s, 'n')",
            [(n(x), x) for x in names],
        )
        rows = [(n(s), n(d), w) for s, d, w in PAIRS] + [(n(d), n(s), w) for s, d, w in PAIRS]
        cur.executemany(
            "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight) VALUES ('t1', %s, %s, 'CO_OCCURS', %s)", rows
        )
        cur.execute(
            "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight, valid_from, valid_to)"
            " VALUES ('t1', 'n:a', 'n:g', 'DEPENDS_ON', 1, '2025-01-01', NULL)"
        )
    tconn.execute("SELECT kgrag.refresh_edge_ranks(%s)", [[n(x) for x in names]])
    return tconn


def khop(conn: psycopg.Connection, *args: object, **kw: object) -> list[tuple[str, int, list[str]]]:
    params = ", ".join(["%s"] * len(args) + [f"{k} => %s" for k in kw])
    rows = conn.execute(f"SELECT entity_id, hop, path FROM kgrag.k_hop({params})", [*args, *kw.values()]).fetchall()
    return [(e.removeprefix("n:"), hop, [p.removeprefix("n:") for p in path]) for e, hop, path in rows]


def test_degrees_and_strength_order(graph: psycopg.Connection) -> None:
    assert "rank" not in [c.name for c in graph.execute("SELECT * FROM kgrag.edge LIMIT 0").description or []]
    degrees = dict(graph.execute("SELECT name, degree FROM kgrag.entity").fetchall())
    assert degrees == {"a": 3, "b": 2, "c": 2, "d": 1, "e": 1, "f": 1, "g": 2, "h": 6, "i": 1}
    strongest = "SELECT kgrag_private.among_strongest('t1', 'n:a', %s, %s, %s)"
    # a's edges by strength: h (5), b (2), g (DEPENDS_ON, 1)
    assert [graph.execute(strongest, ["n:h", "CO_OCCURS", cap]).fetchone() for cap in (1, 2)] == [(True,), (True,)]
    assert [graph.execute(strongest, ["n:b", "CO_OCCURS", cap]).fetchone() for cap in (1, 2)] == [(False,), (True,)]
    assert graph.execute(strongest, ["n:g", "DEPENDS_ON", 2]).fetchone() == (False,)
    assert graph.execute(strongest, ["n:g", "DEPENDS_ON", None]).fetchone() == (True,)


def test_refresh_recounts_only_the_given_entities(graph: psycopg.Connection) -> None:
    graph.execute(
        "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight)"
        " VALUES ('t1', 'n:h', 'n:i', 'CO_OCCURS', 1), ('t1', 'n:i', 'n:h', 'CO_OCCURS', 1),"
        " ('t1', 'n:h', 'n:i', 'CALLS', 1)"
    )
    assert graph.execute("SELECT kgrag.refresh_edge_ranks(ARRAY['n:h', 'n:h', 'n:a'])").fetchone() == (1,)
    degrees = dict(graph.execute("SELECT name, degree FROM kgrag.entity WHERE name IN ('h', 'i')").fetchall())
    assert degrees == {"h": 7, "i": 1}  # i was not named: its degree stays as it was
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="at most 1,000,000 entities"):
        graph.execute("SELECT kgrag.refresh_edge_ranks(array_fill('n:h'::text, ARRAY[1000001]))")


def test_k_hop_two_hops_shortest_paths(graph: psycopg.Connection) -> None:
    assert khop(graph, [n("a")], 2) == [
        ("a", 0, ["a"]),
        ("b", 1, ["a", "b"]),
        ("g", 1, ["a", "g"]),
        ("h", 1, ["a", "h"]),
        ("c", 2, ["a", "g", "c"]),  # also reachable through h: the first path wins the tie
        ("d", 2, ["a", "h", "d"]),
        ("e", 2, ["a", "h", "e"]),
        ("f", 2, ["a", "h", "f"]),
        ("i", 2, ["a", "g", "i"]),
    ]


def test_degree_cap_cuts_the_hub(graph: psycopg.Connection) -> None:
    assert khop(graph, [n("a")], 2, degree_cap=2) == [("a", 0, ["a"]), ("b", 1, ["a", "b"]), ("h", 1, ["a", "h"])]
    assert khop(graph, [n("a")], 2, degree_cap=10) == khop(graph, [n("a")], 2)


def test_relation_and_validity_filters(graph: psycopg.Connection) -> None:
    assert khop(graph, [n("a")], 2, relations=["DEPENDS_ON"]) == [("a", 0, ["a"]), ("g", 1, ["a", "g"])]
    co = khop(graph, [n("a")], 2, relations=["CO_OCCURS"])
    assert [e for e, _, _ in co] == ["a", "b", "h", "c", "d", "e", "f"]
    before = khop(graph, [n("a")], 2, as_of=datetime(2024, 6, 1, tzinfo=UTC))
    assert ("g", 1, ["a", "g"]) not in before and ("c", 2, ["a", "h", "c"]) in before
    assert "i" not in [e for e, _, _ in before]
    assert khop(graph, [n("a")], 2, as_of=datetime(2025, 6, 1, tzinfo=UTC)) == khop(graph, [n("a")], 2)


def test_cycle_guard_keeps_every_path_simple(graph: psycopg.Connection) -> None:
    walk = "SELECT trail FROM kgrag_private.walk(ARRAY['n:a'], 4, NULL, NULL, NULL, 'out', true, 0)"
    rows = graph.execute(walk).fetchall()
    assert len(rows) > 20
    for (trail,) in rows:
        nodes = trail.strip("|").split("|")
        assert len(nodes) == len(set(nodes)), trail


def test_several_seeds(graph: psycopg.Connection) -> None:
    rows = khop(graph, [n("d"), n("i")], 1)
    assert rows == [("d", 0, ["d"]), ("i", 0, ["i"]), ("g", 1, ["i", "g"]), ("h", 1, ["d", "h"])]


def test_fanout_counts_nodes_new_nodes_and_paths(graph: psycopg.Connection) -> None:
    assert graph.execute("SELECT * FROM kgrag.fanout('n:h', 2)").fetchall() == [
        (0, 1, 1, 1),
        (1, 6, 6, 6),
        (2, 3, 1, 4),
    ]
    capped = graph.execute("SELECT * FROM kgrag.fanout('n:h', 2, 2)").fetchall()
    assert capped == [(0, 1, 1, 1), (1, 2, 2, 2), (2, 2, 0, 2)]


def test_hops_above_the_maximum_are_refused(graph: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="above the maximum of 4"):
        graph.execute("SELECT * FROM kgrag.k_hop(ARRAY['n:a'], 5)")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="hops must be >= 0"):
        graph.execute("SELECT * FROM kgrag.k_hop(ARRAY['n:a'], -1)")


def test_runaway_traversal_is_cancelled_and_connection_survives(
    tconn: psycopg.Connection, record_property: Callable[[str, object], None]
) -> None:
    ids = [f"k:{i:02d}" for i in range(30)]
    tconn.execute(
        "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) SELECT 't1', id, id, 'k'"
        " FROM unnest(%s::text[]) AS id",
        [ids],
    )
    tconn.execute(
        "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight) SELECT 't1', a, b, 'CO_OCCURS', 1"
        " FROM unnest(%s::text[]) AS a, unnest(%s::text[]) AS b WHERE a <> b",
        [ids, ids],
    )
    tconn.execute("SELECT kgrag.refresh_edge_ranks(%s)", [ids])
    tconn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'khop_timeout_ms', '50')")
    start = time.perf_counter()
    with pytest.raises(psycopg.errors.QueryCanceled, match="cancelled after 50 ms") as caught:
        tconn.execute("SELECT count(*) FROM kgrag.fanout('k:00', 4)")  # counts every simple path
    record_property("graph", "30 nodes, every ordered pair linked (870 edges), 4 hops, no degree cap")
    record_property("khop_timeout_ms", 50)
    record_property("cancelled after ms (client side)", round((time.perf_counter() - start) * 1000))
    record_property("error", caught.value.diag.message_primary)
    assert tconn.execute("SELECT count(*) FROM kgrag.k_hop(ARRAY['k:00'], 1, 3)").fetchone() == (4,)
    # breadth-first, k_hop follows each edge out of each entity once: the same walk is small, done
    # well inside a budget 10x the one fanout ran out of (not 50 ms itself: a busy machine's
    # scheduling alone took that once)
    tconn.execute("UPDATE kgrag.settings SET value = '500' WHERE tenant_id = 't1' AND key = 'khop_timeout_ms'")
    assert tconn.execute("SELECT count(*) FROM kgrag.k_hop(ARRAY['k:00'], 4)").fetchone() == (30,)


def _degrees_and_strength(conn: psycopg.Connection, depth: int) -> tuple[list[tuple], list[tuple]]:
    """(stored degrees, strength flags) and what the definitions give over every edge: degree =
    distinct neighbours; an edge is among its source's strongest `cap` when its position by weight
    desc, then dst, then rel (byte order) is at most cap, for every cap up to depth."""
    flags = (
        "SELECT e.src, e.dst, e.rel, ARRAY(SELECT kgrag_private.among_strongest('t1', e.src, e.dst, e.rel, c)"
        "                                    FROM generate_series(1, %s) AS c ORDER BY c)"
        "  FROM kgrag.edge AS e ORDER BY 1, 2, 3"
    )
    stored = conn.execute("SELECT entity_id, degree FROM kgrag.entity ORDER BY 1").fetchall()
    stored += conn.execute(flags, [depth]).fetchall()
    expected = conn.execute(
        "SELECT x.entity_id, (SELECT count(DISTINCT g.dst) FROM kgrag.edge AS g WHERE g.src = x.entity_id)::integer"
        "  FROM kgrag.entity AS x ORDER BY 1"
    ).fetchall()
    expected += conn.execute(
        "SELECT p.src, p.dst, p.rel, ARRAY(SELECT p.position <= c FROM generate_series(1, %s) AS c ORDER BY c)"
        '  FROM (SELECT e.*, row_number() OVER (PARTITION BY e.src ORDER BY e.weight DESC, e.dst COLLATE "C",'
        '                                       e.rel COLLATE "C") AS position FROM kgrag.edge AS e) AS p'
        " ORDER BY 1, 2, 3",
        [depth],
    ).fetchall()
    return stored, expected


def test_degrees_and_caps_match_the_definitions_through_ingest_change_and_delete(
    dsn: str, tmp_path: pytest.TempPathFactory
) -> None:
    """Ingestion moves degrees by the neighbours gained and lost, never recounting; after every
    kind of change they equal a recount over all edges, and which edges a degree cap keeps equals
    the position definition; a cap above edge_rank_depth is refused."""
    import random

    from ingesting import ingest

    from pgkgrag.db.connections import connect, tenant_transaction

    depth = 3
    rng = random.Random(7)
    pool = [f"Node {i:02d}" for i in range(14)]

    def docs(version: int) -> list[dict[str, object]]:
        out = []
        for d in range(40):
            names = rng.sample(pool[: 5 + d % 10], 3 + d % 3)  # the first names are hubs
            text = " ".join(f"{n} works with the others." for n in names) + f" Version {version}."
            quote = f"{names[0]} works with the others."
            calls = {"source": names[0], "target": names[1], "type": "CALLS", "quote": quote}
            relations = [calls] if d % 4 == version % 4 else []
            out.append(
                {
                    "doc_id": f"d{d:02d}",
                    "text": text,
                    "entities": [{"name": n, "type": "Node"} for n in names],
                    "relations": relations,
                }
            )
        return out

    with connect(dsn) as conn:
        with tenant_transaction(conn, "*"):
            conn.execute(
                "UPDATE kgrag.settings SET value = to_jsonb(%s::integer)"
                " WHERE tenant_id = '*' AND key = 'edge_rank_depth'",
                [depth],
            )
        ingest(conn, tmp_path, docs(1), batch_size=7)  # type: ignore[arg-type]
        with tenant_transaction(conn, "t1"):
            stored, expected = _degrees_and_strength(conn, depth)
            assert stored == expected
            typed = conn.execute("SELECT count(*) FROM kgrag.edge WHERE rel <> 'CO_OCCURS'").fetchone()
            assert typed is not None and typed[0] > 0
        ingest(conn, tmp_path, docs(2)[:25], batch_size=5)  # type: ignore[arg-type]  # changed documents
        with tenant_transaction(conn, "t1"):
            conn.execute("SELECT kgrag.delete_documents(ARRAY['d03', 'd07', 'd11', 'd30'])")
        with tenant_transaction(conn, "t1"):
            stored, expected = _degrees_and_strength(conn, depth)
            assert stored == expected
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="edge_rank_depth"):
                conn.execute("SELECT * FROM kgrag.k_hop(ARRAY['Node 05'], 2, %s)", [depth + 1])

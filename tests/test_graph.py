"""k_hop, fanout and edge ranks on a small hand-checkable graph with a hub.

    a -- h -- c -- g -- i        h (the hub) also links d, e, f; a -- b -- h closes a cycle;
    |         (a -[DEPENDS_ON]-> g, valid in 2025 only)
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
            " VALUES ('t1', 'n:a', 'n:g', 'DEPENDS_ON', 1, '2025-01-01', '2026-01-01')"
        )
    tconn.execute("SELECT kgrag.refresh_edge_ranks(%s)", [[n(x) for x in names]])
    return tconn


def khop(conn: psycopg.Connection, *args: object, **kw: object) -> list[tuple[str, int, list[str]]]:
    params = ", ".join(["%s"] * len(args) + [f"{k} => %s" for k in kw])
    rows = conn.execute(f"SELECT entity_id, hop, path FROM kgrag.k_hop({params})", [*args, *kw.values()]).fetchall()
    return [(e.removeprefix("n:"), hop, [p.removeprefix("n:") for p in path]) for e, hop, path in rows]


def test_ranks_and_degrees(graph: psycopg.Connection) -> None:
    ranks = graph.execute("SELECT dst, rank FROM kgrag.edge WHERE src = 'n:h' ORDER BY rank").fetchall()
    assert ranks == [("n:a", 1), ("n:b", 2), ("n:c", 3), ("n:d", 4), ("n:e", 5), ("n:f", 6)]
    a_ranks = graph.execute("SELECT dst, rel, rank FROM kgrag.edge WHERE src = 'n:a' ORDER BY rank").fetchall()
    assert a_ranks == [("n:h", "CO_OCCURS", 1), ("n:b", "CO_OCCURS", 2), ("n:g", "DEPENDS_ON", 3)]
    degrees = dict(graph.execute("SELECT name, degree FROM kgrag.entity").fetchall())
    assert degrees == {"a": 3, "b": 2, "c": 2, "d": 1, "e": 1, "f": 1, "g": 2, "h": 6, "i": 1}


def test_refresh_touches_only_the_given_sources(graph: psycopg.Connection) -> None:
    graph.execute("UPDATE kgrag.edge SET weight = 10 WHERE src = 'n:h' AND dst = 'n:f'")
    graph.execute("UPDATE kgrag.edge SET weight = 10 WHERE src = 'n:g' AND dst = 'n:i'")
    assert graph.execute("SELECT kgrag.refresh_edge_ranks(ARRAY['n:h'])").fetchone() == (6,)
    assert graph.execute("SELECT rank FROM kgrag.edge WHERE src = 'n:h' AND dst = 'n:f'").fetchone() == (1,)
    # g was not named: its ranks stay as they were
    assert graph.execute("SELECT rank FROM kgrag.edge WHERE src = 'n:g' AND dst = 'n:i'").fetchone() == (2,)


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
    rows = graph.execute("SELECT trail FROM kgrag_private.walk(ARRAY['n:a'], 4, NULL, NULL, NULL, 'out')").fetchall()
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
    # breadth-first, k_hop follows each edge out of each entity once: the same walk is small
    assert tconn.execute("SELECT count(*) FROM kgrag.k_hop(ARRAY['k:00'], 4)").fetchone() == (30,)


def _dense_ranks(conn: psycopg.Connection, depth: int) -> tuple[list[tuple], list[tuple]]:
    """The stored ranks, and the ranks the definition gives (position by weight desc, then dst,
    then rel, the ones beyond depth at depth + 1), computed over every edge."""
    stored = conn.execute("SELECT src, dst, rel, rank FROM kgrag.edge ORDER BY 1, 2, 3").fetchall()
    expected = conn.execute(
        'SELECT src, dst, rel, LEAST(row_number() OVER (PARTITION BY src ORDER BY weight DESC, dst COLLATE "C",'
        ' rel COLLATE "C"), %s + 1)::integer FROM kgrag.edge ORDER BY 1, 2, 3',
        [depth],
    ).fetchall()
    return stored, expected


def test_bounded_ranks_match_the_definition_through_ingest_change_and_delete(
    dsn: str, tmp_path: pytest.TempPathFactory
) -> None:
    """Ranks are kept for each source's strongest edge_rank_depth edges; after every kind of change
    they equal the definition computed over all edges, and the walks for every cap within the depth
    are the walks over dense ranks."""
    import random

    from ingesting import ingest

    from pgkgrag.db import connect, tenant_transaction

    depth = 3
    rng = random.Random(7)
    pool = [f"Node {i:02d}" for i in range(14)]

    def docs(version: int) -> list[dict[str, object]]:
        out = []
        for d in range(40):
            names = rng.sample(pool[: 5 + d % 10], 3 + d % 3)  # the first names are hubs
            text = " ".join(f"{n} works with the others." for n in names) + f" Version {version}."
            out.append({"doc_id": f"d{d:02d}", "text": text, "entities": [{"name": n, "type": "Node"} for n in names]})
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
            stored, expected = _dense_ranks(conn, depth)
            assert stored == expected and max(r[3] for r in stored) == depth + 1
        ingest(conn, tmp_path, docs(2)[:25], batch_size=5)  # type: ignore[arg-type]  # changed documents
        with tenant_transaction(conn, "t1"):
            conn.execute("SELECT kgrag.delete_documents(ARRAY['d03', 'd07', 'd11', 'd30'])")
        with tenant_transaction(conn, "t1"):
            stored, expected = _dense_ranks(conn, depth)
            assert stored == expected
            walks = {
                cap: conn.execute(
                    "SELECT entity_id, hop, path FROM kgrag.k_hop(ARRAY['Node 05'], 2, %s)", [cap]
                ).fetchall()
                for cap in range(1, depth + 1)
            }
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="edge_rank_depth"):
                conn.execute("SELECT * FROM kgrag.k_hop(ARRAY['Node 05'], 2, %s)", [depth + 1])
        with tenant_transaction(conn, "*"):
            conn.execute("UPDATE kgrag.settings SET value = '1000' WHERE tenant_id = '*' AND key = 'edge_rank_depth'")
        with tenant_transaction(conn, "t1"):
            conn.execute("SELECT kgrag.refresh_edge_ranks(ARRAY(SELECT entity_id FROM kgrag.entity))")
        with tenant_transaction(conn, "t1"):
            stored, dense = _dense_ranks(conn, 1000)
            assert stored == dense and max(r[3] for r in stored) > depth + 1
            for cap, walk in walks.items():
                again = conn.execute("SELECT entity_id, hop, path FROM kgrag.k_hop(ARRAY['Node 05'], 2, %s)", [cap])
                assert again.fetchall() == walk, cap

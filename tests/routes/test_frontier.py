"""kgrag.k_hop walks breadth-first (kgrag_private.frontier) unless a degree cap bounds the paths:
on seeded random graphs the breadth-first walk returns,
row for row, what ranking every simple path of the enumerating walk (kgrag_private.walk) gives:
the same entities, hops, first shortest paths, seeds and directions, for every cap, direction,
relation filter and validity date; and its budget counts the paths it extends."""

from __future__ import annotations

import itertools
import random

import psycopg
import pytest

RELATIONS = ["DEPENDS_ON", "OWNS", "RUNS_ON"]
# ids whose characters sort below and above the trail's '|' (0x7C), so byte order matters
SUFFIXES = ["", "{", "}", "~", "-", "a"]

ENUMERATED = """
    SELECT x.entity_id, x.hop, string_to_array(btrim(x.trail, '|'), '|'), x.seed, x.steps
      FROM (SELECT w.*, row_number() OVER (PARTITION BY w.entity_id
                                           ORDER BY w.hop, w.trail COLLATE "C", w.steps) AS shortest
              FROM kgrag_private.walk(kgrag.resolve_entities(%(seeds)s), %(hops)s, %(cap)s, %(rels)s, %(as_of)s,
                                      %(direction)s, %(history)s, %(min_conf)s) AS w) AS x
     WHERE x.shortest = 1
     ORDER BY x.hop, x.entity_id COLLATE "C"
"""
BREADTH_FIRST = """
    SELECT f.entity_id, f.hop, string_to_array(btrim(f.trail, '|'), '|'), f.seed, f.steps
      FROM kgrag_private.frontier(kgrag.resolve_entities(%(seeds)s), %(hops)s, %(cap)s, %(rels)s, %(as_of)s,
                                  %(direction)s, %(history)s, %(min_conf)s) AS f
     ORDER BY f.hop, f.entity_id COLLATE "C"
"""
# what k_hop returns (it enumerates where a degree cap bounds the paths, walks breadth-first elsewhere)
K_HOP = """
    SELECT k.entity_id, k.hop, k.path, k.seed,
           array_to_string(ARRAY(SELECT CASE WHEN d = 'out' THEN '>' ELSE '<' END FROM unnest(k.directions) AS d), '')
      FROM kgrag.k_hop(%(seeds)s, %(hops)s, %(cap)s, %(rels)s, %(as_of)s, %(direction)s, %(history)s, %(min_conf)s) AS k
"""


def random_graph(conn: psycopg.Connection, seed: int) -> list[str]:
    rng = random.Random(seed)
    ids = [f"r:{i:02d}{rng.choice(SUFFIXES)}" for i in range(rng.randint(12, 30))]
    co_occurs = {tuple(sorted(rng.sample(ids, 2))) for _ in range(rng.randint(len(ids), 3 * len(ids)))}
    typed = {(*rng.sample(ids, 2), rng.choice(RELATIONS)) for _ in range(rng.randint(5, 2 * len(ids)))}
    with conn.acting() as c, c.cursor() as cur:  # type: ignore[attr-defined]
        cur.executemany(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) VALUES ('t1', %s, %s, 'n')",
            [(i, f"name of {i}") for i in ids],
        )
        cur.executemany(
            "INSERT INTO kgrag.alias (tenant_id, entity_id, alias) VALUES ('t1', %s, %s)",
            [(i, f"name of {i}") for i in ids],
        )
        rows = []
        for a, b in sorted(co_occurs):
            weight = rng.randint(1, 5)  # ties on purpose: ranks break them by dst
            rows += [(a, b, "CO_OCCURS", weight, 1.0, None, None), (b, a, "CO_OCCURS", weight, 1.0, None, None)]
        for a, b, rel in sorted(typed):
            # expired, current and future relations (to now and to the as_of of the tests)
            window = rng.choice(
                [(None, None), ("2025-01-01", "2026-01-01"), ("2026-01-01", None), ("2099-01-01", None)]
            )
            rows.append((a, b, rel, rng.randint(1, 5), rng.choice([0.3, 0.9, 1.0]), *window))
        cur.executemany(
            "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight, confidence, valid_from, valid_to)"
            " VALUES ('t1', %s, %s, %s, %s, %s, %s, %s)",
            rows,
        )
    conn.execute("SELECT kgrag.refresh_edge_ranks(%s)", [ids])
    return ids


@pytest.mark.slow
@pytest.mark.parametrize("graph_seed", [1, 2, 3])
def test_breadth_first_k_hop_returns_the_first_shortest_path_of_every_path_walked(
    tconn: psycopg.Connection, graph_seed: int
) -> None:
    ids = random_graph(tconn, graph_seed)
    rng = random.Random(100 + graph_seed)
    compared = reached = 0
    for hops, cap, direction, rels, (as_of, history) in itertools.product(
        [1, 2, 3],
        [None, 1, 3],
        ["out", "in", "both"],
        [None, ["depends_on", "OWNS"]],
        [(None, False), (None, True), ("2025-06-01", False)],
    ):
        seeds = rng.sample(ids, rng.randint(1, 3))
        if rng.random() < 0.3:
            seeds[0] = f"name of {seeds[0]}"  # a name, resolved as k_hop resolves it
        args = {
            **{"seeds": seeds, "hops": hops, "cap": cap, "rels": rels, "as_of": as_of, "direction": direction},
            **{"history": history, "min_conf": rng.choice([None, 0.5])},
        }
        expected = tconn.execute(ENUMERATED, args).fetchall()
        got = tconn.execute(BREADTH_FIRST, args).fetchall()
        assert got == expected, args
        assert tconn.execute(K_HOP, args).fetchall() == expected, args
        compared += 1
        reached += len(got)
    assert compared == 162 and reached > 162 * 3  # the walks went somewhere


def test_the_budget_counts_every_edge_followed(tconn: psycopg.Connection) -> None:
    ids = random_graph(tconn, 7)
    hub = tconn.execute(
        'SELECT src FROM kgrag.edge GROUP BY src ORDER BY count(*) DESC, src COLLATE "C" LIMIT 1'
    ).fetchone()[0]  # type: ignore[index]
    # one hop out of the hub follows each of its out-edges once
    walked = tconn.execute(
        "SELECT count(*), current_setting('kgrag.paths_walked')::integer"
        " FROM kgrag.k_hop(ARRAY[%s], 1, history => true)",
        [hub],
    ).fetchone()
    out_edges = tconn.execute("SELECT count(*) FROM kgrag.edge WHERE src = %s", [hub]).fetchone()
    distinct = tconn.execute("SELECT count(DISTINCT dst) FROM kgrag.edge WHERE src = %s", [hub]).fetchone()
    assert walked == (distinct[0] + 1, out_edges[0])  # type: ignore[index]
    # two hops: the second follows the edges of the entities first reached at hop 1, not of every path
    two = tconn.execute(
        "SELECT count(*), current_setting('kgrag.paths_walked')::integer"
        " FROM kgrag.k_hop(ARRAY[%s], 2, history => true)",
        [hub],
    ).fetchone()
    expected = tconn.execute(
        "SELECT count(*) FROM kgrag.edge"
        " WHERE src = %s OR src IN (SELECT dst FROM kgrag.edge WHERE src = %s AND dst <> %s)",
        [hub, hub, hub],
    ).fetchone()
    assert two is not None and two[1] == expected[0]  # type: ignore[index]
    assert len(ids) >= two[0]
    tconn.execute(
        "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'max_paths_walked', %s)", [str(two[1] - 1)]
    )
    with pytest.raises(psycopg.errors.QueryCanceled, match=f"stopped after {two[1] - 1} paths"):
        tconn.execute("SELECT count(*) FROM kgrag.k_hop(ARRAY[%s], 2, history => true)", [hub])
    assert tconn.execute("SELECT count(*) FROM kgrag.k_hop(ARRAY[%s], 1, history => true)", [hub]).fetchone() == (
        distinct[0] + 1,
    )  # type: ignore[index]


@pytest.mark.parametrize("graph_seed", [4, 5])
def test_a_degree_cap_follows_the_strongest_edges_of_each_node(tconn: psycopg.Connection, graph_seed: int) -> None:
    """One hop with a cap reaches, out of a node, the dst of its `cap` strongest edges (weight desc,
    then dst and rel in byte order: ordered here in Python), and into it, the src of the edges that
    are among the cap strongest of their own source, in both walks."""
    ids = random_graph(tconn, graph_seed)
    edges = tconn.execute("SELECT src, dst, rel, weight FROM kgrag.edge").fetchall()
    strongest: dict[str, list[tuple[str, str]]] = {}
    for src, dst, rel, _ in sorted(edges, key=lambda e: (e[0], -e[3], e[1].encode(), e[2].encode())):
        strongest.setdefault(src, []).append((dst, rel))
    assert max(len(top) for top in strongest.values()) > 3  # the caps below cut
    for node, cap in itertools.product(ids, [1, 2, 3]):
        out = {dst for dst, _ in strongest.get(node, [])[:cap]} - {node}
        into = {src for src, top in strongest.items() for dst, rel in top[:cap] if dst == node} - {node}
        for direction, expected in (("out", out), ("in", into)):
            args = {
                **{"seeds": [node], "hops": 1, "cap": cap, "rels": None, "as_of": None, "direction": direction},
                **{"history": True, "min_conf": 0},  # every edge, whatever its validity and confidence
            }
            for query in (ENUMERATED, BREADTH_FIRST):
                reached = {row[0] for row in tconn.execute(query, args).fetchall() if row[1] == 1}
                assert reached == expected, (query[:40], args)

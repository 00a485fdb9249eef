"""k-hop traversal on a generated power-law graph (Barabasi-Albert, >= 1,000,000 edge rows).

Part 1: kgrag.k_hop (breadth-first) at 1/2/3 hops with and without a degree cap: latency p50/p95,
nodes returned and edges followed, how many traversals the time budget cancelled, and the same
for the enumerating walk k_hop used before.
Part 2: the cycle guard alone, three ways, in the same recursive CTE: the strpos test on a
'|'-delimited string (what kgrag uses), an array guard (dst <> ALL(path)), and PostgreSQL's
CYCLE clause.
Part 3: the recursive step, a join on kgrag.edge against the LATERAL union of outgoing and
incoming edges that traversal directions use.

    python benchmarks/khop.py [--nodes 100000] [--m 5] [--seeds 200]
"""

from __future__ import annotations

import argparse
import random
import time
from contextlib import ExitStack

import numpy as np
import psycopg
from common import (
    TenantSession,
    markdown_table,
    median,
    percentile,
    scratch_database,
    tenant_connection,
    timed,
    write_section,
)

TENANT = "bench"

# The three guards differ only in how a path remembers where it has been.
GUARDS = {
    "strpos on a delimited string": """
        WITH RECURSIVE walk(entity_id, hop, trail) AS (
            SELECT e.entity_id, 0, '|' || e.entity_id || '|' FROM kgrag.entity e
             WHERE e.tenant_id = %(t)s AND e.entity_id = %(seed)s
            UNION ALL
            SELECT g.dst, w.hop + 1, w.trail || g.dst || '|' FROM walk w
              JOIN kgrag.edge g ON g.tenant_id = %(t)s AND g.src = w.entity_id
             WHERE w.hop < %(hops)s AND strpos(w.trail, '|' || g.dst || '|') = 0
               AND (%(cap)s::int IS NULL OR kgrag_private.among_strongest(%(t)s, g.src, g.dst, g.rel, %(cap)s::int)))
        SELECT count(*) FROM walk""",
    "array, dst <> ALL(path)": """
        WITH RECURSIVE walk(entity_id, hop, path) AS (
            SELECT e.entity_id, 0, ARRAY[e.entity_id] FROM kgrag.entity e
             WHERE e.tenant_id = %(t)s AND e.entity_id = %(seed)s
            UNION ALL
            SELECT g.dst, w.hop + 1, w.path || g.dst FROM walk w
              JOIN kgrag.edge g ON g.tenant_id = %(t)s AND g.src = w.entity_id
             WHERE w.hop < %(hops)s AND g.dst <> ALL (w.path)
               AND (%(cap)s::int IS NULL OR kgrag_private.among_strongest(%(t)s, g.src, g.dst, g.rel, %(cap)s::int)))
        SELECT count(*) FROM walk""",
    "CYCLE clause": """
        WITH RECURSIVE walk(entity_id, hop) AS (
            SELECT e.entity_id, 0 FROM kgrag.entity e
             WHERE e.tenant_id = %(t)s AND e.entity_id = %(seed)s
            UNION ALL
            SELECT g.dst, w.hop + 1 FROM walk w
              JOIN kgrag.edge g ON g.tenant_id = %(t)s AND g.src = w.entity_id
             WHERE w.hop < %(hops)s
               AND (%(cap)s::int IS NULL OR kgrag_private.among_strongest(%(t)s, g.src, g.dst, g.rel, %(cap)s::int)))
            CYCLE entity_id SET is_cycle USING path
        SELECT count(*) FROM walk WHERE NOT is_cycle""",
}


# How the recursive step reaches the next edges (strpos guard in each): a join on kgrag.edge (the
# walk before traversal directions), and what kgrag_private.walk does now, a LATERAL union of the edges
# out of the node and into it, where the branch a direction does not take is a constant false.
_LATERAL = """
        WITH RECURSIVE walk(entity_id, hop, trail) AS (
            SELECT e.entity_id, 0, '|' || e.entity_id || '|' FROM kgrag.entity e
             WHERE e.tenant_id = %(t)s AND e.entity_id = %(seed)s
            UNION ALL
            SELECT g.next_id, w.hop + 1, w.trail || g.next_id || '|' FROM walk w
             CROSS JOIN LATERAL (
                   SELECT x.dst AS next_id, x.src, x.dst, x.rel FROM kgrag.edge x
                    WHERE '{direction}' <> 'in' AND x.tenant_id = %(t)s AND x.src = w.entity_id
                   UNION ALL
                   SELECT x.src, x.src, x.dst, x.rel FROM kgrag.edge x
                    WHERE '{direction}' <> 'out' AND x.tenant_id = %(t)s AND x.dst = w.entity_id
                      AND x.rel <> 'CO_OCCURS') AS g
             WHERE w.hop < %(hops)s AND strpos(w.trail, '|' || g.next_id || '|') = 0
               AND (%(cap)s::int IS NULL OR kgrag_private.among_strongest(%(t)s, g.src, g.dst, g.rel, %(cap)s::int)))
        SELECT count(*) FROM walk"""
STEPS = {
    "join on edge (before)": GUARDS["strpos on a delimited string"],
    "lateral union, direction out (now)": _LATERAL.format(direction="out"),
    "lateral union, direction both": _LATERAL.format(direction="both"),
}


# What any walk in SQL must do, without the walk's own work: a round trip; the capped walk as one
# recursive CTE sent by the client (no argument checks, settings, time budget or tenant lookup,
# the tenant and cap as constants); and, for the uncapped walk, reading the edges out of every entity
# it expands (those first reached before the last hop), alone, then grouped by the entity
# each reaches with the first expanded entity reaching it (the least a breadth-first step computes).
FLOORS = {
    "a round trip (SELECT 1)": "SELECT 1",
    "the capped walk as one recursive CTE from the client": """
        WITH RECURSIVE walk(entity_id, hop, trail) AS (
            SELECT e.entity_id, 0, '|' || e.entity_id || '|' FROM kgrag.entity e
             WHERE e.tenant_id = %(t)s AND e.entity_id = %(seed)s
            UNION ALL
            SELECT x.dst, w.hop + 1, w.trail || x.dst || '|' FROM walk w
             CROSS JOIN LATERAL (SELECT y.dst FROM kgrag.edge y WHERE y.tenant_id = %(t)s AND y.src = w.entity_id
                                  ORDER BY y.weight DESC, y.dst COLLATE "C", y.rel COLLATE "C" LIMIT %(cap)s) x
             WHERE w.hop < %(hops)s AND strpos(w.trail, '|' || x.dst || '|') = 0)
        SELECT count(*) FROM walk""",
    "the edges out of the expanded entities, read alone": """
        SELECT count(*) FROM unnest(%(ids)s::text[]) AS f(id)
          JOIN kgrag.edge y ON y.tenant_id = %(t)s AND y.src = f.id""",
    "the same, grouped by the entity reached": """
        SELECT count(*) FROM (SELECT y.dst, min(f.o) FROM unnest(%(ids)s::text[]) WITH ORDINALITY AS f(id, o)
                                JOIN kgrag.edge y ON y.tenant_id = %(t)s AND y.src = f.id GROUP BY y.dst) AS g""",
}


# the k_hop of before: every simple path enumerated, then the first shortest one per entity, as
# the same rows (path and directions arrays, in order)
ENUMERATED = """
    SELECT count(*), max(x.walked)
      FROM (SELECT string_to_array(btrim(w.trail, '|'), '|') AS path,
                   ARRAY(SELECT CASE WHEN u.s = '>' THEN 'out' ELSE 'in' END
                           FROM unnest(string_to_array(w.steps, NULL)) WITH ORDINALITY AS u(s, o)
                          ORDER BY u.o) AS directions,
                   w.walked
              FROM (SELECT p.*, count(*) OVER () AS walked,
                           row_number() OVER (PARTITION BY p.entity_id
                                              ORDER BY p.hop, p.trail COLLATE "C", p.steps) AS shortest
                      FROM kgrag_private.walk(ARRAY[%s], %s, %s, NULL, NULL, 'out') AS p) AS w
             WHERE w.shortest = 1
             ORDER BY w.hop, w.entity_id COLLATE "C") AS x
"""


def barabasi_albert(nodes: int, m: int, seed: int) -> list[tuple[int, int, int]]:
    """Undirected edges (a, b, weight) of a preferential-attachment graph, deterministic."""
    rng = random.Random(seed)
    targets = list(range(m))
    repeated: list[int] = []
    edges: list[tuple[int, int, int]] = []
    weights = np.random.default_rng(seed).geometric(0.4, size=nodes * m)
    for source in range(m, nodes):
        for target in set(targets):
            edges.append((source, target, int(weights[len(edges)])))
        repeated.extend(targets)
        repeated.extend([source] * m)
        chosen: set[int] = set()
        while len(chosen) < m:
            chosen.add(rng.choice(repeated))
        targets = sorted(chosen)
    return edges


def load(session: TenantSession, nodes: int, edges: list[tuple[int, int, int]]) -> None:
    with session.acting() as conn, conn.cursor() as cur:
        with cur.copy("COPY kgrag.entity (tenant_id, entity_id, name, type) FROM STDIN") as copy:
            for i in range(nodes):
                copy.write_row((TENANT, f"n:{i:06d}", f"node {i}", "n"))
        with cur.copy("COPY kgrag.edge (tenant_id, src, dst, rel, weight) FROM STDIN") as copy:
            for a, b, w in edges:
                copy.write_row((TENANT, f"n:{a:06d}", f"n:{b:06d}", "CO_OCCURS", w))
                copy.write_row((TENANT, f"n:{b:06d}", f"n:{a:06d}", "CO_OCCURS", w))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--m", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--timeout-ms", type=int, default=2000)
    args = parser.parse_args()

    edges = barabasi_albert(args.nodes, args.m, seed=7)
    with ExitStack() as stack:
        dsn = stack.enter_context(scratch_database("kgrag_bench_khop"))
        conn = stack.enter_context(tenant_connection(dsn, TENANT))
        load_ms, _ = timed(lambda: load(conn, args.nodes, edges))
        ids = [f"n:{i:06d}" for i in range(args.nodes)]
        rank_ms, _ = timed(lambda: conn.execute("SELECT kgrag.refresh_edge_ranks(%s)", [ids]))
        conn.conn.execute("VACUUM ANALYZE kgrag.edge")
        conn.conn.execute("VACUUM ANALYZE kgrag.entity")
        conn.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'khop_timeout_ms', %s)",
            [TENANT, str(args.timeout_ms)],
        )
        (rows, max_degree, mean_degree) = conn.execute(
            "SELECT (SELECT count(*) FROM kgrag.edge), max(degree), avg(degree)::numeric(6,1) FROM kgrag.entity"
        ).fetchone()  # type: ignore[misc]
        print(
            f"graph: {args.nodes} nodes, {rows} edge rows, degree mean {mean_degree} max {max_degree}; "
            f"loaded in {load_ms / 1000:.1f} s, ranked in {rank_ms / 1000:.1f} s"
        )
        seeds = random.Random(11).sample(ids, args.seeds)
        hubs = [
            r[0] for r in conn.execute("SELECT entity_id FROM kgrag.entity ORDER BY degree DESC, entity_id LIMIT 20")
        ]

        reader = stack.enter_context(tenant_connection(dsn, TENANT, role="kgrag_reader"))
        khop_rows: list[list[object]] = []
        for label, group in ((f"{len(seeds)} random", seeds), ("20 top hubs", hubs)):
            for hops in (1, 2, 3):
                for cap in (None, 4):
                    khop_rows.append([label, *measure_khop(reader, group, hops, cap)])
                    print(khop_rows[-1])

        floor_rows = [measure_floor(reader, hubs, 2, 4, ["a round trip (SELECT 1)", *list(FLOORS)[1:2]])]
        floor_rows.append(measure_floor(reader, hubs, 3, None, list(FLOORS)[2:]))
        print(floor_rows)

        guard_rows: list[list[object]] = []
        for hops, cap in ((2, 4), (3, 4), (2, None), (3, None)):
            for name, query in GUARDS.items():
                guard_rows.append(measure_guard(reader, seeds, name, query, hops, cap, args.timeout_ms))
                print(guard_rows[-1])

        step_rows: list[list[object]] = []
        for hops, cap in ((2, 4), (3, 4), (2, None)):
            for name, query in STEPS.items():
                step_rows.append(measure_guard(reader, seeds, name, query, hops, cap, args.timeout_ms))
                print(step_rows[-1])

    body = (
        f"Barabasi-Albert graph: {args.nodes:,} entities, {rows:,} edge rows (each co-occurrence edge in both "
        f"directions), mean degree {mean_degree}, max degree {max_degree}. Seeds: {args.seeds} drawn uniformly, and "
        f"the 20 entities of highest degree (hubs); cancelled traversals are left out of the latency columns; "
        f"time budget (khop_timeout_ms) {args.timeout_ms} ms. Every query runs as kgrag_reader (row-level security "
        f"applies, as to an application). Load {load_ms / 1000:.1f} s; counting every entity's degree with "
        f"kgrag.refresh_edge_ranks {rank_ms / 1000:.1f} s.\n\n"
        "### kgrag.k_hop\n\n"
        "Without a degree cap k_hop walks breadth-first (kgrag_private.frontier): each hop follows the edges of "
        "the entities first reached at the hop before and keeps one path per entity, so every node returned is "
        "one path kept and the work is the edges followed (the `edges followed` column). With the cap of 4 (at "
        "most 10,000 paths) it enumerates the paths, as before, and that column counts paths. Timed from Python "
        "inside one open tenant transaction (a warm client). The `before` columns are the k_hop of before on the "
        "same seeds and run: every simple path enumerated (kgrag_private.walk, which kgrag.fanout still uses), "
        "then the first shortest path per entity, as the same rows.\n\n"
        + markdown_table(
            [
                "seeds",
                "hops",
                "degree cap",
                "p50 ms",
                "p95 ms",
                "mean nodes returned",
                "mean edges followed",
                "cancelled",
                "before: p50 ms",
                "before: mean paths walked",
                "before: cancelled",
                "p50 before / now",
            ],
            khop_rows,
        )
        + "\n\n### What the walk's SQL cannot go below (20 top hubs)\n\n"
        "Beside k_hop, on the same seeds and run: a round trip, the capped walk as one recursive CTE sent "
        "by the client (nothing but the walk: no argument checks, settings, time budget or tenant lookup), "
        "and for the uncapped 3-hop walk the edges out of the entities it expands (those first reached at "
        "hops 0-2) read by one join, then grouped by the entity each reaches, as a breadth-first step must "
        "(what is left of k_hop's time: choosing one path per entity, the visited set, the rows).\n\n"
        + markdown_table(
            ["hops", "degree cap", "k_hop p50 ms", "floor", "p50 ms", "share of k_hop"],
            [row for rows in floor_rows for row in rows],
        )
        + "\n\n### Cycle guard, same CTE, three ways (count of simple paths)\n\n"
        + markdown_table(["hops", "degree cap", "guard", "p50 ms", "p95 ms", "mean paths", "cancelled"], guard_rows)
        + "\n\n### The recursive step, same run: a join, or the LATERAL union that directions need\n\n"
        "The graph holds co-occurrence edges only, stored both ways, so direction both adds no path here; "
        "what it costs is the second index probe per node.\n\n"
        + markdown_table(["hops", "degree cap", "step", "p50 ms", "p95 ms", "mean paths", "cancelled"], step_rows)
        + "\n"
    )
    print(body)
    write_section("khop", "k-hop traversal on a power-law graph", body)


def measure_khop(conn: TenantSession, seeds: list[str], hops: int, cap: int | None) -> list[object]:
    """kgrag.k_hop (breadth-first) from each seed, timed from Python inside one open tenant
    transaction (a warm client); and, for the same seeds, the k_hop of before: every simple path
    enumerated by kgrag_private.walk, then the first shortest path per entity."""
    times: list[float] = []
    before: list[float] = []
    nodes: list[int] = []
    followed: list[int] = []
    enumerated: list[int] = []
    cancelled = cancelled_before = 0
    for seed in seeds:
        with conn.acting() as c:
            try:
                ms, result = timed(
                    lambda seed=seed, c=c: c.execute(
                        "SELECT count(*), current_setting('kgrag.paths_walked')::bigint"
                        " FROM kgrag.k_hop(ARRAY[%s], %s, %s)",
                        [seed, hops, cap],
                    ).fetchone()
                )
                times.append(ms)
                nodes.append(result[0])  # type: ignore[index]
                followed.append(result[1])  # type: ignore[index]
            except psycopg.errors.QueryCanceled:
                cancelled += 1
        with conn.acting() as c:
            try:
                ms, result = timed(lambda seed=seed, c=c: c.execute(ENUMERATED, [seed, hops, cap]).fetchone())
                before.append(ms)
                enumerated.append(result[1])  # type: ignore[index]
            except psycopg.errors.QueryCanceled:
                cancelled_before += 1
    return [
        hops,
        cap or "none",
        f"{median(times):.2f}",
        f"{percentile(times, 95):.2f}",
        f"{np.mean(nodes):.0f}" if nodes else "-",
        f"{np.mean(followed):.0f}" if followed else "-",
        f"{cancelled}/{len(seeds)}",
        f"{median(before):.2f}" if before else "-",
        f"{np.mean(enumerated):.0f}" if enumerated else "-",
        f"{cancelled_before}/{len(seeds)}",
        f"{median(before) / median(times):.1f}" if before and times else "-",
    ]


def measure_floor(
    conn: TenantSession, seeds: list[str], hops: int, cap: int | None, names: list[str]
) -> list[list[object]]:
    """k_hop p50 from each seed (timed as in measure_khop: count(*) in one open tenant transaction)
    beside the floors named (FLOORS), each timed the same way."""
    times: dict[str, list[float]] = {name: [] for name in ["k_hop", *names]}
    for seed in seeds:
        with conn.acting() as c:
            expanded = c.execute(
                "SELECT entity_id FROM kgrag.k_hop(ARRAY[%s], %s, %s) WHERE hop < %s", [seed, hops, cap, hops]
            ).fetchall()
        params = {"t": TENANT, "seed": seed, "hops": hops, "cap": cap, "ids": [r[0] for r in expanded]}
        queries = {"k_hop": "SELECT count(*) FROM kgrag.k_hop(ARRAY[%(seed)s], %(hops)s, %(cap)s)"}
        queries.update((name, FLOORS[name]) for name in names)
        for name, query in queries.items():
            with conn.acting() as c:
                ms, _ = timed(lambda query=query, c=c, params=params: c.execute(query, params).fetchall())
                times[name].append(ms)
    whole = median(times["k_hop"])
    return [
        [hops, cap or "none", f"{whole:.2f}", name, f"{median(times[name]):.2f}", f"{median(times[name]) / whole:.0%}"]
        for name in names
    ]


def measure_guard(
    conn: psycopg.Connection, seeds: list[str], name: str, query: str, hops: int, cap: int | None, timeout_ms: int
) -> list[object]:
    times: list[float] = []
    counts: list[int] = []
    cancelled = 0
    conn.conn.execute("SELECT set_config('statement_timeout', %s, false)", [str(timeout_ms)])
    for seed in seeds:
        params = {"t": TENANT, "seed": seed, "hops": hops, "cap": cap}
        try:
            start = time.perf_counter()
            (count,) = conn.execute(query, params).fetchone()  # type: ignore[arg-type, misc]
            times.append((time.perf_counter() - start) * 1000)
            counts.append(count)
        except psycopg.errors.QueryCanceled:
            cancelled += 1
    conn.conn.execute("SELECT set_config('statement_timeout', '0', false)")
    return [
        hops,
        cap or "none",
        name,
        f"{median(times):.2f}",
        f"{percentile(times, 95):.2f}",
        f"{np.mean(counts):.0f}" if counts else "-",
        f"{cancelled}/{len(seeds)}",
    ]


if __name__ == "__main__":
    main()

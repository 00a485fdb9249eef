"""Scale-out measured: the same corpus on one node and on the 2-worker Citus cluster of
../shared/citus/citus.sh (coordinator and workers on this machine, so the same cores serve all three),
in one run, at one or more sizes (--sizes):

- `sample`: the bundled sample corpus (pgkgrag.resources.SAMPLE_CORPUS) ingested into each of
  --sample-tenants tenants;
- a number: the generated operations corpus (benchmarks/ingest.py:generate) of about that many
  chunks over --tenants tenants.

`provided` extractor, `hash` embedder. For each size and side (the cluster first: the clients are
spread over the tenants so that consecutive clients are on different workers, and the single node gets
the same spread):

1. ingestion by a writer login role: every tenant but the last two by one writer, tenant after tenant,
   then the last two by two writers at once (two processes); chunks/s of each;
2. `pgkgrag build` of the first --built tenants (all by default), seconds;
3. round trips (cluster only): as a reader login role, one kgrag_search per route (local, mixed,
   vector, global, auto with a negative question: the questions of benchmarks/scale.py) with
   citus.log_remote_commands on, the remote commands counted (all, and those besides BEGIN, COMMIT,
   SAVEPOINT, RELEASE, ROLLBACK, SET, PREPARE and assign_distributed_transaction_id), the nodes and
   connections they went to, and the statements Citus ran on a shard locally, on the coordinator and
   on the worker ("executing the command locally");
4. throughput: 1, 4 and 8 clients (--clients), each its own connection as the reader login role and a
   tenant (its own when there are enough, round robin otherwise), a transaction per search as the
   driver opens it, cycling through the routes' questions of its tenant (vectors made beforehand),
   --warmup seconds untimed then --duration seconds: searches/s, p50 and p95 ms, and the CPU the
   servers spent per search (/proc: the postmaster and its children, of the single node's server, the
   coordinator and each worker), from which the searches/s of 2 workers on machines of their own
   (--cores per machine) is estimated.

On the cluster, citus_stat_counters also counts the statements run on one shard and on several. The
section `citus` is written to docs/scale-out.md and to docs/benchmarks.md.

    CITUS_PORT=9800 CITUS_BASE=/tmp/pgkgrag-citus-bench KGRAG_HOME=/tmp/kgrag-bench-home \\
        python benchmarks/citus.py [--sizes sample,100000] [--tenants 8] [--sample-tenants 4] [--built N]
        [--questions 8] [--clients 1,4,8] [--duration 10] [--warmup 3] [--cores 2]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from citus_cluster import CITUS_SH, fresh_cluster, login, placement
from common import ROOT, markdown_table, scratch_database, write_section
from ingest import generate
from scale import CHUNKS_PER_DOCUMENT, EMBEDDER, questions, vector_text
from throughput import Ask, Run, round_trips, servers, throughput

from pgkgrag.db.connections import connect
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.resources import SAMPLE_CORPUS

WRITER, READER = "bench_citus_writer", "bench_citus_reader"
SINGLE, CLUSTER = "single node", "Citus, 2 workers"
TRIPS = ["route", "remote commands", "besides BEGIN, COMMIT, SAVEPOINT, SET...", "nodes", "connections"]
TRIPS += ["statements run locally: on the coordinator", "on the worker"]


@dataclass
class Side:
    """What one side (the single node or the cluster) measured at one size."""

    one_writer: tuple[int, float] = (0, 0.0)  # chunks, seconds
    two_writers: tuple[int, float] = (0, 0.0)
    build_s: float = 0.0
    trips: dict[str, tuple[int, ...]] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    routed: dict[str, tuple[int, int]] = field(default_factory=dict)


def counters(admin: psycopg.Connection) -> tuple[int, int]:
    """Statements Citus ran on one shard and on several, in this database, so far."""
    row = admin.execute(
        "SELECT query_execution_single_shard, query_execution_multi_shard FROM citus_stat_counters"
        " WHERE name = current_database()"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def ingest(dsn: str, tenant: str, path: str) -> tuple[int, float, float]:
    """One writer's ingestion of one tenant: chunks, start and end (time.time, comparable across processes)."""
    with connect(make_conninfo(dsn, user=WRITER)) as conn:
        start = time.time()
        chunks = Ingestor(conn, tenant, ProvidedExtractor(), EMBEDDER).run([Path(path)]).counts.chunks
        return chunks, start, time.time()


def corpus(size: str, tenants: list[str], folder: Path) -> dict[str, Path]:
    """The JSONL file of each tenant: the sample corpus, or generated documents of about `size` chunks in all."""
    if size == "sample":
        return dict.fromkeys(tenants, SAMPLE_CORPUS)
    per_tenant = max(1, int(int(size) / CHUNKS_PER_DOCUMENT / len(tenants)))
    paths = {}
    for i, tenant in enumerate(tenants):
        docs = generate(per_tenant, max(2000, per_tenant // 10), seed=i + 1)
        paths[tenant] = folder / f"{tenant}.jsonl"
        paths[tenant].write_text("".join(json.dumps(d) + "\n" for d in docs))
    return paths


def spread(dsn: str, tenants: list[str]) -> tuple[list[str], str]:
    """The tenants in the order clients take them (alternating between the workers that hold them), and
    where they are."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        by_worker: dict[int, list[str]] = {}
        for tenant in tenants:
            by_worker.setdefault(placement(admin, tenant), []).append(tenant)
    where = "; ".join(f"worker {port}: {', '.join(names)}" for port, names in sorted(by_worker.items()))
    print(f"  placement: {where}", flush=True)
    columns = list(by_worker.values())
    return [col[i] for i in range(max(map(len, columns))) for col in columns if i < len(col)], where


def side(dsn: str, paths: dict[str, Path], order: list[str], args: argparse.Namespace, on_citus: bool) -> Side:
    out, tenants = Side(), list(paths)
    with psycopg.connect(dsn, autocommit=True) as admin:
        login(admin, WRITER, "kgrag_writer", ["*"])
        login(admin, READER, "kgrag_reader", ["*"])
        if on_citus:
            admin.execute("ALTER SYSTEM SET citus.enable_stat_counters = on")
            admin.execute("SELECT pg_reload_conf()")
            admin.execute("SELECT citus_stat_counters_reset()")
        routed = counters(admin) if on_citus else (0, 0)

        def step(name: str) -> None:
            nonlocal routed
            if on_citus:
                now = counters(admin)
                out.routed[name] = (now[0] - routed[0], now[1] - routed[1])
                routed = now

        alone, pair = (tenants[:-2], tenants[-2:]) if len(tenants) > 2 else (tenants, [])
        done = [ingest(dsn, t, str(paths[t])) for t in alone]
        out.one_writer = (sum(d[0] for d in done), sum(d[2] - d[1] for d in done))
        if pair:
            with multiprocessing.get_context("spawn").Pool(len(pair)) as pool:
                done = pool.starmap(ingest, [(dsn, t, str(paths[t])) for t in pair])
            out.two_writers = (sum(d[0] for d in done), max(d[2] for d in done) - min(d[1] for d in done))
        admin.execute("ANALYZE")
        step("ingest")
        print(f"  ingested: one writer {out.one_writer}, two writers {out.two_writers}", flush=True)
        with connect(make_conninfo(dsn, user=WRITER)) as conn:
            start = time.perf_counter()
            for tenant in tenants[: args.built or len(tenants)]:
                build(conn, tenant, EMBEDDER)
            out.build_s = time.perf_counter() - start
        admin.execute("VACUUM ANALYZE")
        step("build")
        print(f"  built in {out.build_s:.1f} s", flush=True)
        plans: dict[str, list[Ask]] = {}
        with connect(make_conninfo(dsn, user=READER)) as conn:
            for tenant in order:
                asked = questions(conn, tenant, args.questions)
                plans[tenant] = [
                    Ask(tenant, label.split()[0], asked[label][i], vector_text(asked[label][i]))
                    for i in range(args.questions)
                    for label in asked
                ]
        step("questions")  # the benchmark's own reads (questions() reads every shard)
        first = plans[order[0]]
        if on_citus:
            routes = {ask.route: ask for ask in first}
            out.trips = round_trips(dsn, READER, list(routes.values()))
            print(f"  round trips: {out.trips}", flush=True)
        where = servers(dsn, on_citus)
        for clients in (int(c) for c in args.clients.split(",")):
            # client i: tenant i (round robin), starting at its own place in the list of questions
            picked = [plans[order[i % len(order)]] for i in range(clients)]
            mine = [p[(7 * i) % len(p) :] + p[: (7 * i) % len(p)] for i, p in enumerate(picked)]
            run = throughput(dsn, READER, mine, where, duration=args.duration, warmup=args.warmup)
            out.runs.append(run)
            cpu = {label: f"{1000 * s / max(1, run.searches):.1f}" for label, s in run.cpu.items()}
            grown = {label: f"{kb / 1024:.1f}" for label, kb in run.grown_kb.items()}
            print(
                f"  {clients} clients: {run.rate:.1f}/s, p50 {run.p50():.1f} ms, CPU ms/search {cpu}, "
                f"reader backends grew MB {grown}",
                flush=True,
            )
        step("search")
    return out


def ratio(a: float, b: float) -> str:
    return f"{b / a:.2f}x" if a else "-"


def report(size: str, chunks_note: str, sides: dict[str, Side], args: argparse.Namespace) -> str:
    """The markdown of one size."""
    single, cluster = sides[SINGLE], sides[CLUSTER]

    def rate(pair: tuple[int, float]) -> float:
        return pair[0] / pair[1] if pair[1] else 0.0

    rows: list[list[object]] = []
    for label, a, b in (
        ("ingest chunks/s, one writer", rate(single.one_writer), rate(cluster.one_writer)),
        ("ingest chunks/s, two writers (two tenants at once)", rate(single.two_writers), rate(cluster.two_writers)),
    ):
        rows.append([label, f"{a:.0f}", f"{b:.0f}", ratio(a, b)])
    rows.append([f"build of {args.built or 'all'} tenants, s", f"{single.build_s:.1f}", f"{cluster.build_s:.1f}", ""])
    for s, c in zip(single.runs, cluster.runs, strict=True):
        n = f"{s.clients} client{'s' * (s.clients > 1)}"
        rows.append([f"searches/s, {n}", f"{s.rate:.1f}", f"{c.rate:.1f}", ratio(s.rate, c.rate)])
        rows.append([f"p50 / p95 ms, {n}", f"{s.p50():.1f} / {s.p95():.1f}", f"{c.p50():.1f} / {c.p95():.1f}", ""])

    def per_run(label: str, one: Callable[[Run], str], many: Callable[[Run], str]) -> None:
        for s, c in zip(single.runs, cluster.runs, strict=True):
            rows.append([label.format(f"{s.clients} client{'s' * (s.clients > 1)}"), one(s), many(c), ""])

    per_run(
        "CPU ms/search, {}: server; coordinator + workers (client)",
        lambda s: f"{s.cpu_ms('server'):.1f} ({s.client_ms:.1f})",
        lambda c: f"{c.cpu_ms('coordinator'):.1f} + {c.cpu_ms('worker'):.1f} ({c.client_ms:.1f})",
    )
    per_run(
        "reader backends' memory growth, MB per 1,000 searches, {}: server; coordinator + workers",
        lambda s: f"{s.grown_mb('server'):.1f}",
        lambda c: f"{c.grown_mb('coordinator'):.1f} + {c.grown_mb('worker'):.1f}",
    )
    routes = sorted({r for r, _ in single.runs[0].latencies})
    for route in routes:
        a, b = single.runs[0].p50(route), cluster.runs[0].p50(route)
        rows.append([f"p50 ms, 1 client, {route}", f"{a:.1f}", f"{b:.1f}", ratio(a, b)])
    trips: list[list[object]] = [[route, *cluster.trips[route]] for route in cluster.trips]
    busiest_s, busiest_c = single.runs[-1], cluster.runs[-1]
    coordinator, workers = busiest_c.cpu_ms("coordinator"), busiest_c.cpu_ms("worker")
    n_workers = sum(1 for label in busiest_c.cpu if label.startswith("worker"))
    by_workers = n_workers * args.cores * 1000 / workers if workers else float("inf")
    by_coordinator = args.cores * 1000 / coordinator if coordinator else float("inf")
    alone = args.cores * 1000 / busiest_s.cpu_ms("server") if busiest_s.cpu_ms("server") else float("inf")
    estimate = (
        f"Estimate from the CPU per search of the {busiest_c.clients}-client run: {n_workers} workers on machines "
        f"of their own with {args.cores} cores each would serve about **{by_workers:.0f} searches/s** "
        f"({n_workers} x {args.cores} cores / {workers:.1f} worker CPU ms per search), if the coordinator keeps up: "
        f"on a {args.cores}-core machine of its own it would serve {by_coordinator:.0f}/s ({coordinator:.1f} ms per "
        f"search), so the cluster about {min(by_workers, by_coordinator):.0f}/s, against {alone:.0f}/s for one "
        f"{args.cores}-core node ({busiest_s.cpu_ms('server'):.1f} ms per search). Assumed: searches are bound by "
        "CPU, the tenants (and so the load) split evenly over the workers, enough clients to keep every core "
        "busy, the CPU per search the same on other machines and no cost of the network beyond the CPU of "
        "sending (latency adds time per search, not CPU). To show it, run the same with each node on cores of its "
        "own (cpusets, or machines), the clients on another, and more clients than cores."
    )
    routed: list[list[object]] = [[name, f"{one:,} / {many:,}"] for name, (one, many) in cluster.routed.items()]
    return (
        f"### {size}\n\n{chunks_note}; clients take the tenants in turn, alternating between the workers.\n\n"
        + markdown_table(["", SINGLE, CLUSTER, "cluster / single"], rows)
        + "\n\nRemote commands of one kgrag_search on the cluster, as the reader login role, after "
        "`use_tenant` (citus.log_remote_commands, COMMIT's included), and the statements Citus ran on a shard "
        'in the process it was in (the notices "executing the command locally"):\n\n'
        + markdown_table(TRIPS, trips)
        + "\n\nStatements Citus ran on one shard / on several (citus_stat_counters):\n\n"
        + markdown_table(["step", "one shard / several"], routed)
        + f"\n\n{estimate}\n"
    )


def measure(size: str, args: argparse.Namespace) -> str:
    count = args.sample_tenants if size == "sample" else args.tenants
    tenants = [f"tenant{i}" for i in range(count)]
    with tempfile.TemporaryDirectory() as tmp:
        paths = corpus(size, tenants, Path(tmp))
        print(f"{size}: {CLUSTER}", flush=True)
        cluster = fresh_cluster()  # installed and distributed by docker/citus/setup.sh
        order, where = spread(cluster, tenants)
        sides = {CLUSTER: side(cluster, paths, order, args, on_citus=True)}
        print(f"{size}: {SINGLE}", flush=True)
        with scratch_database("kgrag_bench_citus") as dsn:
            sides[SINGLE] = side(dsn, paths, order, args, on_citus=False)
    chunks = sides[SINGLE].one_writer[0] + sides[SINGLE].two_writers[0]
    return report(size, f"{chunks:,} chunks over {count} tenants (on the cluster {where})", sides, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="sample,100000", help="`sample` and/or chunk counts, comma-separated")
    parser.add_argument("--tenants", type=int, default=8, help="tenants of a generated corpus")
    parser.add_argument("--sample-tenants", type=int, default=4)
    parser.add_argument("--built", type=int, default=0, help="tenants built (0: all)")
    parser.add_argument("--questions", type=int, default=8, help="questions per route and tenant")
    parser.add_argument("--clients", default="1,4,8", help="client counts, comma-separated")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds measured per client count")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds untimed before")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="cores per machine, for the estimate")
    args = parser.parse_args()
    if not CITUS_SH.exists():
        raise SystemExit(f"no Citus cluster script at {CITUS_SH}: this benchmark needs it (see docs/scale-out.md)")
    parts = [measure(size, args) for size in args.sizes.split(",")]
    body = (
        "One node and the Citus cluster of ../shared/citus/citus.sh (a coordinator and two workers) given the same "
        "input in one run, on this same machine: the three servers of the cluster share its cores, so the "
        "searches/s compare what distribution costs, and the estimate says what machines of their own would give. "
        f"`provided` extractor, `hash` embedder; writer and reader login roles; {args.questions} questions per route "
        f"and tenant (benchmarks/scale.py's), clients cycling through them after {args.warmup:g} s untimed, "
        f"{args.duration:g} s measured; a search is a transaction (BEGIN, use_tenant, kgrag_search, COMMIT) timed "
        "whole. CPU: user + system of each server's postmaster and children (/proc), per search done; "
        "(client): this benchmark's own process. Memory growth: the anonymous resident memory of the reader "
        "role's backends on each server (/proc), from the end of the warm-up to the end of the run, per 1,000 "
        "searches (a backend that keeps every plan it makes grows here; see 'No cached generic plan of a "
        "one-shard read').\n\n" + "\n".join(parts)
    )
    print(body)
    given = [f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v != parser.get_default(k)]
    command = " ".join(["python benchmarks/citus.py", *given])
    title = "Scale-out: one node vs a 2-worker Citus cluster"
    write_section("citus", title, body, command, ROOT / "docs" / "scale-out.md")
    write_section("citus", title, body, command)


if __name__ == "__main__":
    main()

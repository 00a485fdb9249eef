"""Scale-out measured: the same corpus on one node and on the 2-worker Citus cluster of
../shared/citus/citus.sh (coordinator and workers on this machine, so the same 2 cores serve all three).

The generated operations corpus (benchmarks/ingest.py:generate) over --tenants tenants, `provided`
extractor, `hash` embedder, ingested tenant after tenant by a writer login role (one connection),
then `pgkgrag build` of the first --built tenants. Then, as a reader login role from a warm client
(embedding excluded), --questions questions per route on the first tenant (the questions of
benchmarks/scale.py). On the cluster, Citus's own counters (citus_stat_counters) count the
statements that ran on one shard and on several, during ingestion, build and search.

    python benchmarks/citus.py [--chunks 50000] [--tenants 8] [--built 2] [--questions 20]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from citus_cluster import CITUS_SH, fresh_cluster, login
from common import markdown_table, scratch_database, write_section
from ingest import generate
from psycopg.conninfo import make_conninfo
from scale import CHUNKS_PER_DOCUMENT, EMBEDDER, SEARCH, figures, questions, timed_ms, vector_text

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor

WRITER, READER = "bench_citus_writer", "bench_citus_reader"


def counters(admin: psycopg.Connection) -> tuple[int, int]:
    """Statements Citus ran on one shard and on several, in this database, so far."""
    row = admin.execute(
        "SELECT query_execution_single_shard, query_execution_multi_shard FROM citus_stat_counters"
        " WHERE name = current_database()"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def run(dsn: str, tenants: list[str], chunks: int, built: int, n: int, on_citus: bool) -> dict[str, object]:
    out: dict[str, object] = {}
    with psycopg.connect(dsn, autocommit=True) as admin:
        login(admin, WRITER, "kgrag_writer", ["*"])
        login(admin, READER, "kgrag_reader", ["*"])
        if on_citus:
            admin.execute("ALTER SYSTEM SET citus.enable_stat_counters = on")
            admin.execute("SELECT pg_reload_conf()")
            admin.execute("SELECT citus_stat_counters_reset()")
        routed = counters(admin) if on_citus else (0, 0)
        per_tenant = max(1, int(chunks / CHUNKS_PER_DOCUMENT / len(tenants)))
        total, ingest_s = 0, 0.0
        with connect(make_conninfo(dsn, user=WRITER)) as conn, tempfile.TemporaryDirectory() as tmp:
            for i, tenant in enumerate(tenants):
                path = Path(tmp) / f"{tenant}.jsonl"
                docs = generate(per_tenant, max(2000, per_tenant // 10), seed=i + 1)
                path.write_text("".join(json.dumps(d) + "\n" for d in docs))
                start = time.perf_counter()
                total += Ingestor(conn, tenant, ProvidedExtractor(), EMBEDDER).run([path]).counts.chunks
                ingest_s += time.perf_counter() - start
            admin.execute("ANALYZE")
            out["chunks"], out["ingest_s"] = total, ingest_s
            if on_citus:
                now = counters(admin)
                out["ingest_routed"] = (now[0] - routed[0], now[1] - routed[1])
                routed = now
            start = time.perf_counter()
            for tenant in tenants[:built]:
                build(conn, tenant, EMBEDDER)
            out["build_s"] = time.perf_counter() - start
        admin.execute("VACUUM ANALYZE")
        if on_citus:
            now = counters(admin)
            out["build_routed"] = (now[0] - routed[0], now[1] - routed[1])
            routed = now
        with connect(make_conninfo(dsn, user=READER)) as conn:
            asked = questions(conn, tenants[0], n)
            vectors = {q: vector_text(q) for qs in asked.values() for q in qs}

            def one(q: str, route: str) -> float:
                # a transaction per search, as run_search does
                with tenant_transaction(conn, tenants[0]):
                    return timed_ms(conn, SEARCH, [vectors[q], route, q])

            for q in asked["local"][:3]:  # warm the caches and the plans
                one(q, "local")
            out["routes"] = {
                label: figures([one(q, label.split()[0]) for q in batch]) for label, batch in asked.items()
            }
        if on_citus:
            now = counters(admin)
            out["search_routed"] = (now[0] - routed[0], now[1] - routed[1])
    return out


def share(pair: object) -> str:
    one, many = pair  # type: ignore[misc]
    return f"{one:,} / {many:,} ({100 * one / max(1, one + many):.1f}% on one shard)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=50000)
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--built", type=int, default=2)
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    if not CITUS_SH.exists():
        raise SystemExit(f"no Citus cluster script at {CITUS_SH}: this benchmark needs it (see docs/scale-out.md)")
    tenants = [f"tenant{i}" for i in range(args.tenants)]
    measured: dict[str, dict[str, object]] = {}
    with scratch_database("kgrag_bench_citus") as dsn:
        print("single node", flush=True)
        measured["single node"] = run(dsn, tenants, args.chunks, args.built, args.questions, on_citus=False)
    print("Citus, 2 workers", flush=True)
    cluster = fresh_cluster()  # installed and distributed by docker/citus/setup.sh
    measured["Citus, 2 workers"] = run(cluster, tenants, args.chunks, args.built, args.questions, on_citus=True)
    print(json.dumps(measured, indent=1, default=str), flush=True)
    sides = list(measured)
    rows: list[list[object]] = [
        ["chunks ingested", *(f"{measured[s]['chunks']:,}" for s in sides)],
        ["ingest chunks/s (one writer)", *(f"{measured[s]['chunks'] / measured[s]['ingest_s']:.0f}" for s in sides)],  # type: ignore[operator]
        [f"build of {args.built} tenants, s", *(f"{measured[s]['build_s']:.0f}" for s in sides)],
    ]
    for label in measured[sides[0]]["routes"]:  # type: ignore[attr-defined]
        rows.append(
            [f"kgrag_search {label}, p50 / p95 ms", *(" / ".join(measured[s]["routes"][label]) for s in sides)]  # type: ignore[index]
        )
    citus_side = measured[sides[1]]
    routing = [[step, share(citus_side[f"{step}_routed"])] for step in ("ingest", "build", "search")]
    body = (
        f"The generated operations corpus, {args.chunks:,} chunks over {args.tenants} tenants (`provided` extractor, "
        f"`hash` embedder), ingested by one writer login role, the first {args.built} tenants built; "
        f"{args.questions} questions per route on the first tenant as a reader login role from a warm client "
        "(embedding excluded), a transaction per search (timed: the kgrag_search statement). "
        "The cluster is ../shared/citus/citus.sh: a coordinator and two workers on this "
        "same 2-core machine, so it shows what distribution costs, not what more machines give.\n\n"
        + markdown_table(["", *sides], rows)
        + "\n\nStatements Citus ran on one shard / on several (citus_stat_counters, the cluster run):\n\n"
        + markdown_table(["step", "one shard / several"], routing)
    )
    write_section("citus", "Scale-out: one node vs a 2-worker Citus cluster", body)


if __name__ == "__main__":
    main()

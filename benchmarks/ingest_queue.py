"""The ingestion queue against pgkgrag ingest, side by side in one run: the same documents (HotpotQA's
994 paragraphs, ../shared/data/multihop) ingested by `pgkgrag ingest`'s code from a JSONL file, and
submitted with kgrag.submit_document (one SQL call each) then drained by `pgkgrag worker`'s code
(QueueWorker.drain: claim, ingest, settle), each into a tenant of its own of one scratch database,
keyphrases extractor, no build; and the time from one document submitted to an idle worker
(listening, in a process of its own) to a reader finding it, against the time its embedding alone
takes.

    python benchmarks/ingest_queue.py [--embedders hash use] [--documents 994] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import markdown_table, scratch_database, write_section
from multihop import hotpotqa

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import Embedder, get_embedder
from pgkgrag.ingest.extractors.keyphrases import KeyphraseExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.ingest.queue_worker import QueueWorker


def ingest_file(dsn: str, tenant: str, embedder: Embedder, docs: list[dict[str, str]]) -> float:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "docs.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        with connect(dsn) as conn, connect(dsn) as stage:
            started = time.perf_counter()
            summary = Ingestor(conn, tenant, KeyphraseExtractor(), embedder, batch_size=200, stage_conn=stage).run(
                [path]
            )
            seconds = time.perf_counter() - started
    assert summary.written == len(docs), summary
    return seconds


def submit_and_drain(dsn: str, tenant: str, embedder: Embedder, docs: list[dict[str, str]]) -> tuple[float, float]:
    with connect(dsn) as client:  # (an application's connection: a worker's own never submits)
        started = time.perf_counter()
        with tenant_transaction(client, tenant):
            for d in docs:
                client.execute("SELECT kgrag.submit_document(%s::jsonb)", [json.dumps(d)])
        submitted = time.perf_counter() - started
    with connect(dsn) as conn, connect(dsn) as stage:
        worker = QueueWorker(
            conn, None, [tenant], lambda _: KeyphraseExtractor(), lambda _: embedder, page=1000, stage_conn=stage
        )
        started = time.perf_counter()
        worker.drain(tenant)
        drained = time.perf_counter() - started
    assert worker.counts.settled == {"stored": len(docs)}, worker.counts.settled
    return submitted, drained


def one_document_latency(dsn: str, tenant: str, embedder_name: str, rounds: int) -> list[tuple[float, float]]:
    """(seconds from submission to a reader's search finding it, seconds its embedding alone takes)."""
    env = {**os.environ, "KGRAG_DSN": dsn}
    worker = subprocess.Popen(
        [sys.executable, "-m", "pgkgrag", "worker", "--tenant", tenant, "--embedder", embedder_name,
         "--quiet-seconds", "3600"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    embedder = get_embedder(embedder_name, 512)
    found: list[tuple[float, float]] = []
    try:
        time.sleep(3)  # the worker listens
        with connect(dsn) as conn:
            for i in range(-1, rounds):  # (-1: the worker loads its models; not counted)
                text = f"Latency probe {i + 1}: the Quoxelbridge warehouse number {i + 1} ships on Thursdays."
                started = time.perf_counter()
                with tenant_transaction(conn, tenant):
                    probe = {"doc_id": f"probe-{i + 1}", "text": text}
                    conn.execute("SELECT kgrag.submit_document(%s::jsonb)", [json.dumps(probe)])
                while time.perf_counter() - started < 60:
                    with tenant_transaction(conn, tenant):
                        row = conn.execute(
                            "SELECT count(*) FROM kgrag.search_chunks_lexical(%s, 5) AS s WHERE s.chunk_id = %s",
                            [f"Quoxelbridge warehouse number {i + 1}", f"probe-{i + 1}#0"],
                        ).fetchone()
                    if row and row[0]:
                        break
                    time.sleep(0.02)
                seconds = time.perf_counter() - started
                embed_started = time.perf_counter()
                embedder.embed([text])
                if i >= 0:
                    found.append((seconds, time.perf_counter() - embed_started))
    finally:
        worker.terminate()
        worker.wait(30)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", nargs="+", default=["hash", "use"], choices=["hash", "use", "e5"])
    parser.add_argument("--documents", type=int, default=994)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    docs = hotpotqa()[0][: args.documents]
    rows, latency_rows = [], []
    for name in args.embedders:
        embedder = get_embedder(name, 512)
        # each measurement in a database of its own: a run into a database that another run just
        # filled pays that run's index growth and autovacuum (the second of two runs on one
        # database was a third slower, whichever way it was), alternating which way goes first
        ingested, queued, submitted = [], [], []
        for r in range(args.rounds):
            for way in ("file", "queue") if r % 2 == 0 else ("queue", "file"):
                with scratch_database(f"bench_queue_{name}_{way}") as dsn:
                    if way == "file":
                        ingested.append(ingest_file(dsn, "t1", embedder, docs))
                    else:
                        sub, drained = submit_and_drain(dsn, "t1", embedder, docs)
                        submitted.append(sub)
                        queued.append(drained)
        file_s, queue_s, sub_s = (statistics.median(x) for x in (ingested, queued, submitted))
        per_s = [f"{len(docs) / file_s:.0f}", f"{len(docs) / queue_s:.0f}", f"{file_s / queue_s:.2f}x"]
        rows.append([name, len(docs), f"{file_s:.1f}", f"{sub_s:.1f}", f"{queue_s:.1f}", *per_s])
        with scratch_database(f"bench_queue_{name}_probe") as dsn:
            latencies = one_document_latency(dsn, "probe", name, args.rounds)
            for seconds, embedding in latencies:
                latency_rows.append([name, f"{seconds:.2f}", f"{embedding:.2f}", f"{seconds - embedding:.2f}"])
            print(rows[-1], latencies, flush=True)
    body = (
        f"HotpotQA's paragraphs ({len(docs)} documents), keyphrases extractor, no build, the median of "
        f"{args.rounds} rounds (the two ways alternating which runs first), each into a new database. "
        "`ingest`: Ingestor.run on a JSONL file, batches of 200 chunked and embedded ahead on a second "
        "connection (pgkgrag ingest's code); `submit`: the documents submitted with kgrag.submit_document, one "
        "call each in one transaction; `worker`: QueueWorker.drain (pages of 1,000 claimed, ingested in batches "
        "of 200 with the same code and a staging connection, each ticket settled).\n\n"
        + markdown_table(
            ["embedder", "documents", "ingest s", "submit s", "worker s", "ingest docs/s", "worker docs/s",
             "worker / ingest throughput"],
            rows,
        )
        + "\n\nOne document submitted to an idle worker (`pgkgrag worker`, listening, in a process of its own) "
        "until a reader's full-text search finds its chunk, against the time its embedding alone takes "
        "(measured after, in this process):\n\n"
        + markdown_table(["embedder", "submitted to found, s", "its embedding, s", "the rest, s"], latency_rows)
    )  # fmt: skip
    write_section("ingest_queue", "The ingestion queue: pgkgrag worker against pgkgrag ingest", body)


if __name__ == "__main__":
    main()

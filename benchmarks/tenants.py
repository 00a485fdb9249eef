"""A new tenant's ingestion beside large ones: does a tenant pay for the others' data?

The planner's statistics of a table every tenant shares describe the tenants there when it was
last analyzed; a tenant that came after is, to them, a tenant with no rows, and a plan built on
that estimate can read the tenant's rows once per row of another table. This script ingests the
same new tenant (--new-chunks chunks of the project's generator, `provided`, `hash`, one writer)
into an empty database and into one holding --others tenants of --chunks-each chunks, analyzed as
autovacuum would have done before the new tenant came, then times each batch of the new tenant
(the first batches of a tenant are the ones the statistics do not know).

    python benchmarks/tenants.py [--others 3] [--chunks-each 25000] [--new-chunks 2500]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import psycopg
from common import markdown_table, scratch_database, write_section
from ingest import generate

from pgkgrag.db.connections import connect
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor

CHUNKS_PER_DOCUMENT = 2.9  # what generate() gives, to size the corpus
BATCH = 200  # documents per batch of the new tenant: several batches while the statistics lag


def ingest(conn: psycopg.Connection, tenant: str, docs: list[dict[str, object]], batch: int) -> list[float]:
    """Ingest docs as tenant in batches of `batch` documents; the chunks/s of each batch."""
    rates = []
    ingestor = Ingestor(conn, tenant, ProvidedExtractor(), HashEmbedder(512), batch_size=batch)
    with tempfile.TemporaryDirectory() as tmp:
        for start in range(0, len(docs), batch):
            path = Path(tmp) / "batch.jsonl"
            path.write_text("".join(json.dumps(d) + "\n" for d in docs[start : start + batch]))
            t0 = time.perf_counter()
            summary = ingestor.run([path])
            rates.append(summary.counts.chunks / (time.perf_counter() - t0))
    return rates


def new_tenant(name: str, others: int, chunks_each: int, new_docs: list[dict[str, object]]) -> list[float]:
    with scratch_database(name) as dsn, connect(dsn) as conn:
        for i in range(others):
            docs = generate(int(chunks_each / CHUNKS_PER_DOCUMENT), 4000, seed=100 + i)
            ingest(conn, f"other{i}", docs, 2000)
            print(f"  other{i}: {chunks_each:,} chunks", flush=True)
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("ANALYZE")  # what autovacuum does after the others' loads
        return ingest(conn, "new", new_docs, BATCH)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--others", type=int, default=3)
    parser.add_argument("--chunks-each", type=int, default=25_000)
    parser.add_argument("--new-chunks", type=int, default=2_500)
    args = parser.parse_args()
    new_docs = generate(int(args.new_chunks / CHUNKS_PER_DOCUMENT), 4000, seed=7)
    alone = new_tenant("kgrag_bench_tenant_alone", 0, 0, new_docs)
    print("alone", [round(r) for r in alone], flush=True)
    beside = new_tenant("kgrag_bench_tenant_beside", args.others, args.chunks_each, new_docs)
    print("beside", [round(r) for r in beside], flush=True)
    rows = [[i + 1, f"{a:.0f}", f"{b:.0f}", f"{b / a:.2f}"] for i, (a, b) in enumerate(zip(alone, beside, strict=True))]
    total_a, total_b = sum(alone) / len(alone), sum(beside) / len(beside)
    body = (
        f"The same new tenant ({len(new_docs):,} generated documents, about {args.new_chunks:,} chunks, batches of "
        f"{BATCH} documents, `provided`, `hash`, one writer) ingested into an empty database and beside "
        f"{args.others} tenants of {args.chunks_each:,} chunks each (analyzed before the new tenant came, so the "
        "statistics know nothing of it). Mean chunks/s per batch: alone "
        f"{total_a:.0f}, beside the others {total_b:.0f} ({total_b / total_a:.2f}x).\n\n"
        + markdown_table(["batch of the new tenant", "alone chunks/s", "beside others chunks/s", "ratio"], rows)
        + "\n"
    )
    print(body)
    write_section("tenants", "A new tenant beside large ones", body)


if __name__ == "__main__":
    main()

"""Ingestion as the corpus grows: chunks/s of every batch from an empty database to --chunks.

The project's generator (benchmarks/ingest.py:generate: power-law entity mentions, so a few hubs
gain edges in every batch), pre-extracted input (`provided`), the `hash` embedder, one writer,
batches of --batch-size documents. Each row is one batch: the corpus before it, its chunks/s and
the share of its time per step (read and chunk, extract, embed, write). A design whose batches pay
for the size of the graph shows falling chunks/s.

    python benchmarks/growth.py [--chunks 200000] [--batch-size 2000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from common import markdown_table, scratch_database, write_section
from ingest import generate

from pgkgrag.db import connect
from pgkgrag.embedders import HashEmbedder
from pgkgrag.extractors import ProvidedExtractor
from pgkgrag.ingest import Ingestor
from pgkgrag.tenants import graph_totals

STEPS = ("read and chunk", "extract", "embed chunks", "write", "embed entities")
CHUNKS_PER_DOCUMENT = 2.9  # what generate() gives, to size the corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--batch-size", type=int, default=2000)
    args = parser.parse_args()
    # whole batches only: a short last batch would measure its fixed costs, not the corpus's size
    n_docs = max(1, int(args.chunks / CHUNKS_PER_DOCUMENT) // args.batch_size) * args.batch_size
    docs = generate(n_docs, max(4000, n_docs // 10))
    rows: list[list[object]] = []
    with scratch_database("kgrag_bench_growth") as dsn, connect(dsn) as conn, tempfile.TemporaryDirectory() as tmp:
        ingestor = Ingestor(conn, "bench", ProvidedExtractor(), HashEmbedder(512), batch_size=args.batch_size)
        for start in range(0, len(docs), args.batch_size):
            path = Path(tmp) / "batch.jsonl"
            path.write_text("".join(json.dumps(d) + "\n" for d in docs[start : start + args.batch_size]))
            before = graph_totals(conn, "bench")
            t0 = time.perf_counter()
            summary = ingestor.run([path])
            seconds = time.perf_counter() - t0
            after = graph_totals(conn, "bench")
            shares = [f"{100 * summary.seconds[step] / seconds:.0f}%" for step in STEPS]
            rate = f"{summary.counts.chunks / seconds:.0f}"
            rows.append([f"{before.chunks:,}", f"{summary.counts.chunks:,}", rate, *shares, f"{after.edges:,}"])
            print(rows[-1], flush=True)
    first, last = float(str(rows[0][2])), float(str(rows[-1][2]))
    table = markdown_table(["corpus before", "chunks added", "chunks/s", *STEPS, "edges after"], rows)
    body = (
        f"From an empty database to {rows[-1][0]} + {rows[-1][1]} chunks, batches of {args.batch_size:,} generated "
        "documents (power-law entity mentions), `provided` extractor, `hash` embedder, one writer. The last "
        f"batch ran at {100 * last / first:.0f}% of the first one's chunks/s.\n\n" + table + "\n"
    )
    print(body)
    write_section("growth", "Ingestion as the corpus grows", body)


if __name__ == "__main__":
    main()

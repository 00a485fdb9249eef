"""Ingestion as the corpus grows: chunks/s of every batch from an empty database to --chunks.

The project's generator (benchmarks/ingest.py:generate: power-law entity mentions, so a few hubs
gain edges in every batch), pre-extracted input (`provided`), the `hash` embedder, one writer,
batches of --batch-size documents. Each row is one batch: the corpus before it, its chunks/s and
the share of its time per step (read and chunk, extract, embed, write). A design whose batches pay
for the size of the graph shows falling chunks/s.

With --vector-index both, the same batches go into two databases, one per kind of vector index
(halfvec and bq, as `pgkgrag db upgrade --vector-index`), batch by batch in turn, so the two are
compared on the same machine at the same time.

    python benchmarks/growth.py [--chunks 200000] [--batch-size 2000] [--vector-index default|halfvec|bq|both]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import psycopg
from common import markdown_table, scratch_database, write_section
from ingest import generate

from pgkgrag.db.connections import connect
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.totals import graph_totals
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor

STEPS = ("read and chunk", "extract", "embed chunks", "write", "embed entities")
CHUNKS_PER_DOCUMENT = 2.9  # what generate() gives, to size the corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--batch-size", type=int, default=2000)
    parser.add_argument("--vector-index", choices=["default", "halfvec", "bq", "both"], default="default")
    args = parser.parse_args()
    kinds = {"default": [None], "both": ["halfvec", "bq"]}.get(args.vector_index, [args.vector_index])
    # whole batches only: a short last batch would measure its fixed costs, not the corpus's size
    n_docs = max(1, int(args.chunks / CHUNKS_PER_DOCUMENT) // args.batch_size) * args.batch_size
    docs = generate(n_docs, max(4000, n_docs // 10))
    rows: list[list[object]] = []
    rates: dict[str, list[float]] = {}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        runs = []
        for kind in kinds:
            name = f"kgrag_bench_growth_{kind}" if kind else "kgrag_bench_growth"
            dsn = stack.enter_context(scratch_database(name, vector_index=kind))
            with psycopg.connect(dsn, autocommit=True) as admin:
                (installed,) = admin.execute("SELECT kgrag.vector_index()").fetchone()  # type: ignore[misc]
            conn = stack.enter_context(connect(dsn))
            ingestor = Ingestor(conn, "bench", ProvidedExtractor(), HashEmbedder(512), batch_size=args.batch_size)
            runs.append((str(installed), conn, ingestor))
        for start in range(0, len(docs), args.batch_size):
            path = tmp / "batch.jsonl"
            path.write_text("".join(json.dumps(d) + "\n" for d in docs[start : start + args.batch_size]))
            for kind, conn, ingestor in runs:  # the same batch into each database in turn
                before = graph_totals(conn, "bench")
                t0 = time.perf_counter()
                summary = ingestor.run([path])
                seconds = time.perf_counter() - t0
                after = graph_totals(conn, "bench")
                shares = [f"{100 * summary.seconds[step] / seconds:.0f}%" for step in STEPS]
                rates.setdefault(kind, []).append(summary.counts.chunks / seconds)
                rows.append(
                    [
                        kind,
                        f"{before.chunks:,}",
                        f"{summary.counts.chunks:,}",
                        f"{rates[kind][-1]:.0f}",
                        *shares,
                        f"{after.edges:,}",
                    ]
                )
                print(rows[-1], flush=True)
    table = markdown_table(["vector index", "corpus before", "chunks added", "chunks/s", *STEPS, "edges after"], rows)
    summaries = "; ".join(
        f"{kind}: first batch {r[0]:.0f} chunks/s, last {r[-1]:.0f} ({100 * r[-1] / r[0]:.0f}% of the first), "
        f"all batches {sum(r) / len(r):.0f} on average"
        for kind, r in rates.items()
    )
    body = (
        f"From an empty database to {rows[-1][1]} + {rows[-1][2]} chunks, batches of {args.batch_size:,} generated "
        "documents (power-law entity mentions), `provided` extractor, `hash` embedder, one writer"
        + (", the same batches into one database per kind of vector index in turn" if len(runs) > 1 else "")
        + f". {summaries}.\n\n"
        + table
        + "\n"
    )
    print(body)
    write_section("growth", "Ingestion as the corpus grows", body)


if __name__ == "__main__":
    main()

"""Embedding while writing: the USE embedder's throughput, and ingestion with and without overlap.

1. USE multilingual v3 alone (the default embedder, numpy on every core) on the MuSiQue paragraphs
   of ../shared/data/multihop: texts/s for several numbers of texts per call.
2. The whole MuSiQue corpus (1,890 paragraphs, titles as the gazetteer, as benchmarks/multihop.py)
   ingested by one writer with the USE embedder, each batch embedded then written
   (embed_ahead=False) and embedded in a thread while the batch before it is written (the default),
   alternated A B A B, each into a fresh database: paragraphs/s and the time of each step.

    python benchmarks/embedding.py [--rounds 2] [--batch-size 200]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from common import markdown_table, scratch_database, write_section
from multihop import gazetteer, musique

from pgkgrag.db import connect
from pgkgrag.embedders import get_embedder
from pgkgrag.gazetteer import GazetteerExtractor
from pgkgrag.ingest import BATCH_STEPS, Ingestor

PER_CALL = (16, 64, 256, 1024)


def throughput(texts: list[str]) -> list[list[object]]:
    """texts/s of the USE embedder for each number of texts per call (after one warm-up call)."""
    embedder = get_embedder("use", 512)
    embedder.embed(texts[:64])
    rows: list[list[object]] = []
    for size in PER_CALL:
        start = time.perf_counter()
        for first in range(0, len(texts), size):
            embedder.embed(texts[first : first + size])
        seconds = time.perf_counter() - start
        rows.append([size, f"{len(texts) / seconds:.0f}"])
        print(rows[-1], flush=True)
    return rows


def ingest_once(docs: list[dict[str, str]], batch_size: int, ahead: bool) -> tuple[float, dict[str, float], int]:
    """Seconds to ingest the corpus into a fresh database, the seconds of each step, documents written."""
    embedder = get_embedder("use", 512)
    with scratch_database("kgrag_bench_embedding") as dsn, connect(dsn) as conn, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "musique.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        extractor = GazetteerExtractor(gazetteer(docs))
        start = time.perf_counter()
        summary = Ingestor(conn, "bench", extractor, embedder, batch_size=batch_size, embed_ahead=ahead).run([path])
        return time.perf_counter() - start, dict(summary.seconds), summary.written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=200)
    args = parser.parse_args()
    docs, _ = musique()
    speed = throughput([d["text"] for d in docs[:1024]])
    runs: dict[bool, list[tuple[float, dict[str, float], int]]] = {False: [], True: []}
    for _ in range(args.rounds):
        for ahead in (False, True):
            runs[ahead].append(ingest_once(docs, args.batch_size, ahead))
            seconds, steps, written = runs[ahead][-1]
            print(f"embed_ahead={ahead}: {written} paragraphs in {seconds:.1f} s", steps, flush=True)
    steps = [*BATCH_STEPS, "embed entities"]
    rows: list[list[object]] = []
    for ahead, label in ((False, "embedded, then written"), (True, "embedded while the batch before is written")):
        for i, (seconds, taken, written) in enumerate(runs[ahead]):
            rows.append(
                [label, i + 1, f"{written / seconds:.1f}", f"{seconds:.1f}", *(f"{taken[s]:.1f}" for s in steps)]
            )
    ratio = sum(s for s, _, _ in runs[False]) / sum(s for s, _, _ in runs[True])
    body = (
        f"USE multilingual v3 alone, the first {min(1024, len(docs)):,} MuSiQue paragraphs (mean "
        f"{sum(len(d['text']) for d in docs) / len(docs):.0f} characters), by number of texts per call:\n\n"
        + markdown_table(["texts per call", "texts/s"], speed)
        + f"\n\nThe MuSiQue corpus ({len(docs):,} paragraphs, titles as the gazetteer) ingested by one writer "
        f"with the USE embedder, batches of {args.batch_size}, each run into a fresh database, the two ways "
        f"alternated (A B A B); step seconds are the time spent in each step (embedding runs beside the "
        f"others when overlapped, so they add up to more than the elapsed time). Overlap: x{ratio:.2f} the "
        "paragraphs/s.\n\n"
        + markdown_table(["one writer", "run", "paragraphs/s", "elapsed s", *(f"{s} s" for s in steps)], rows)
        + "\n"
    )
    print(body)
    write_section("embedding", "Embedding while writing", body)


if __name__ == "__main__":
    main()

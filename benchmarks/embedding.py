"""Embedding while writing: the USE embedder's throughput, and ingestion with and without overlap.

1. USE multilingual v3 alone (the default embedder, numpy on every core) on the MuSiQue paragraphs
   of ../shared/data/multihop: texts/s for several numbers of texts per call.
2. The whole MuSiQue corpus (1,890 paragraphs, titles as the gazetteer, as benchmarks/multihop.py)
   ingested by one writer with the USE embedder, each batch embedded then written
   (embed_ahead=False) and embedded in a thread while the batch before it is written (the default),
   alternated A B A B, each into a fresh database: paragraphs/s and the time of each step.
3. The same with an embedder that waits rather than computes: the `openai` embedder against a
   local HTTP server answering like an OpenAI-compatible /embeddings endpoint
   (tests/fake_openai.py), --remote-ms milliseconds per text.

    python benchmarks/embedding.py [--rounds 2] [--batch-size 200] [--remote-ms 2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from common import markdown_table, scratch_database, write_section
from fake_openai import FakeOpenAI
from multihop import gazetteer, musique

from pgkgrag.db.connections import connect
from pgkgrag.embed.embedders import Embedder, OpenAIEmbedder, get_embedder
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor
from pgkgrag.ingest.ingestor import BATCH_STEPS, Ingestor
from pgkgrag.llm.client import LlmSettings, OpenAICompatibleClient

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


Run = tuple[float, dict[str, float], int]


def ingest_once(docs: list[dict[str, str]], batch_size: int, ahead: bool, embedder: Embedder) -> Run:
    """Seconds to ingest the corpus into a fresh database, the seconds of each step, documents written."""
    with scratch_database("kgrag_bench_embedding") as dsn, connect(dsn) as conn, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "musique.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        extractor = GazetteerExtractor(gazetteer(docs))
        start = time.perf_counter()
        summary = Ingestor(conn, "bench", extractor, embedder, batch_size=batch_size, embed_ahead=ahead).run([path])
        return time.perf_counter() - start, dict(summary.seconds), summary.written


def compared(
    docs: list[dict[str, str]], args: argparse.Namespace, embedder: Embedder
) -> tuple[list[list[object]], float]:
    """Both ways, alternated: the table rows and how many times faster the overlap was."""
    runs: dict[bool, list[Run]] = {False: [], True: []}
    for _ in range(args.rounds):
        for ahead in (False, True):
            runs[ahead].append(ingest_once(docs, args.batch_size, ahead, embedder))
            seconds, steps, written = runs[ahead][-1]
            print(f"{embedder.name} embed_ahead={ahead}: {written} paragraphs in {seconds:.1f} s", steps, flush=True)
    rows: list[list[object]] = []
    for ahead, label in ((False, "embedded, then written"), (True, "embedded while the batch before is written")):
        for i, (seconds, taken, written) in enumerate(runs[ahead]):
            figures = [f"{written / seconds:.1f}", f"{seconds:.1f}", *(f"{taken[s]:.1f}" for s in STEPS)]
            rows.append([label, i + 1, *figures])
    return rows, sum(s for s, _, _ in runs[False]) / sum(s for s, _, _ in runs[True])


STEPS = [*BATCH_STEPS, "embed entities"]
HEADER = ["one writer", "run", "paragraphs/s", "elapsed s", *(f"{s} s" for s in STEPS)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--remote-ms", type=float, default=2.0)
    args = parser.parse_args()
    docs, _ = musique()
    speed = throughput([d["text"] for d in docs[:1024]])
    local_rows, local_ratio = compared(docs, args, get_embedder("use", 512))
    server = FakeOpenAI()
    server.embedding_dim, server.embed_delay = 512, args.remote_ms / 1000
    try:
        client = OpenAICompatibleClient(LlmSettings(url=server.url, model="text-embedding-3-small"))
        remote_rows, remote_ratio = compared(docs, args, OpenAIEmbedder(client, 512))
    finally:
        server.close()
    body = (
        f"USE multilingual v3 alone, the first {min(1024, len(docs)):,} MuSiQue paragraphs (mean "
        f"{sum(len(d['text']) for d in docs) / len(docs):.0f} characters), by number of texts per call:\n\n"
        + markdown_table(["texts per call", "texts/s"], speed)
        + f"\n\nThe MuSiQue corpus ({len(docs):,} paragraphs, titles as the gazetteer) ingested by one writer, "
        f"batches of {args.batch_size}, each run into a fresh database, the two ways alternated (A B A B); step "
        "seconds are the time spent in each step (embedding runs beside the others when overlapped, so they "
        "add up to more than the elapsed time).\n\n"
        f"With the USE embedder (computes on both cores): overlap x{local_ratio:.2f} the paragraphs/s.\n\n"
        + markdown_table(HEADER, local_rows)
        + f"\n\nWith the `openai` embedder against a local server answering like an OpenAI-compatible "
        f"/embeddings endpoint, {args.remote_ms:g} ms per text (waits, computes nothing): overlap "
        f"x{remote_ratio:.2f} the paragraphs/s.\n\n" + markdown_table(HEADER, remote_rows) + "\n"
    )
    print(body)
    write_section("embedding", "Embedding while writing", body)


if __name__ == "__main__":
    main()

"""A warm pgkgrag.Client: search latency with the question embedded each time, as an application
sees it (one connection and the embedder kept between calls), on the sample corpus and on the
HotpotQA corpus of ../shared/data/multihop; the one-shot pgkgrag.search() beside it for scale.

    python benchmarks/client.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from common import markdown_table, percentile, scratch_database, write_section
from multihop import gazetteer, hotpotqa

import pgkgrag
from pgkgrag.db.connections import connect
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.base import Extractor, ProvidedExtractor
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.resources import SAMPLE_CORPUS, SAMPLE_GOLDEN


def _load(dsn: str, path: Path, extractor: Extractor) -> None:
    with connect(dsn) as conn:
        embedder = tenant_embedder(conn, "bench", "use")
        Ingestor(conn, "bench", extractor, embedder).run([path])
        build(conn, "bench", embedder)


def _timings(dsn: str, questions: list[str], repeat: int) -> list[list[float]]:
    """Milliseconds of each search, pass by pass (a pass asks every question once)."""
    with pgkgrag.connect(dsn, tenant="bench") as client:
        for question in questions[:5]:  # the model's first calls and the plans' caches
            client.search(question)
        passes = []
        for _ in range(repeat):
            ms = []
            for question in questions:
                start = time.perf_counter()
                client.search(question)
                ms.append((time.perf_counter() - start) * 1000)
            passes.append(ms)
    return passes


def _row(corpus: str, passes: list[list[float]]) -> list[object]:
    ms = [m for one in passes for m in one]
    each = sorted(percentile(one, 50) for one in passes)
    return [corpus, len(ms), f"{percentile(ms, 50):.1f}", f"{percentile(ms, 95):.1f}", f"{each[0]:.1f}-{each[-1]:.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="passes over the questions")
    args = parser.parse_args()
    rows = []
    golden = [json.loads(line)["question"] for line in SAMPLE_GOLDEN.read_text().splitlines() if line.strip()]
    with scratch_database("kgrag_bench_client") as dsn:
        _load(dsn, SAMPLE_CORPUS, ProvidedExtractor())
        rows.append(_row("sample (41 documents)", _timings(dsn, golden, args.repeat)))
        os.environ["KGRAG_DSN"] = dsn  # what pgkgrag.search() reads
        start = time.perf_counter()
        for question in golden[:3]:
            pgkgrag.search(question, tenant="bench")
        one_shot = (time.perf_counter() - start) * 1000 / 3
        del os.environ["KGRAG_DSN"]
        print(rows[-1], f"one-shot pgkgrag.search: {one_shot:.0f} ms")
    docs, questions = hotpotqa()
    with scratch_database("kgrag_bench_client_hotpot") as dsn, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hotpotqa.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        _load(dsn, path, GazetteerExtractor(gazetteer(docs)))
        passes = _timings(dsn, [q for q, _ in questions], max(1, args.repeat // 2))
        rows.append(_row(f"HotpotQA ({len(docs):,} paragraphs)", passes))
        print(rows[-1])
    body = (
        "`pgkgrag.Client.search(question)` from a warm client, route `auto`, k = 10: the question is embedded with "
        "the tenant's embedder (USE, on the CPU) and searched with one `kgrag_search` call, every call; the times "
        "include both. The embedded server, on the same machine; the last column shows how much one pass differs "
        "from another on this shared 2-core machine.\n\n"
        + markdown_table(["corpus", "searches", "p50 ms", "p95 ms", "p50 of each pass, ms"], rows)
        + f"\n\nThe one-shot `pgkgrag.search()` (connect, load the model, search) took {one_shot:,.0f} ms a call "
        "on the sample, which is what the Client saves.\n"
    )
    print(body)
    write_section("client", "A warm client: search latency, embedding included", body)


if __name__ == "__main__":
    main()

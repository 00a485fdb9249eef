"""Plain text end to end: MuSiQue's paragraphs (../shared/data/multihop) through the default path,
`pgkgrag ingest` then the build, with the `auto` extractor (so `keyphrases`: no entities given),
and each embedder asked for: `e5` (the default), `use` and `hash` (no model: what the rest costs).
Documents/s of the whole, the time of each step, and the floor the embedder sets: the seconds `use`
alone takes to embed the chunks, the entities and the report heads this corpus gives, one text
after another as ingestion does.

    python benchmarks/plain_text.py [--docs 1890] [--embedders use,hash] [--section plain_text]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from common import markdown_table, scratch_database, write_section
from multihop import musique

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import get_embedder
from pgkgrag.graph.build import build
from pgkgrag.graph.totals import graph_totals
from pgkgrag.ingest.extractors.choice import AutoExtractor
from pgkgrag.ingest.ingestor import Ingestor

TEXTS = """SELECT (SELECT array_agg(text ORDER BY chunk_id) FROM kgrag.chunk),
                  (SELECT array_agg(kgrag.embedding_text(name, description) ORDER BY entity_id) FROM kgrag.entity),
                  (SELECT array_agg(kgrag.report_embedding_text(report) ORDER BY community_id)
                     FROM kgrag.community_report)"""


def run(docs: list[dict[str, str]], embedder_name: str) -> tuple[list[object], list[list[str]]]:
    embedder = get_embedder(embedder_name, 512)
    with scratch_database("kgrag_bench_plain") as dsn, connect(dsn) as conn, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "paragraphs.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        start = time.perf_counter()
        summary = Ingestor(conn, "bench", AutoExtractor(), embedder).run([path])
        ingested = time.perf_counter() - start
        built = build(conn, "bench", embedder)
        whole = time.perf_counter() - start
        totals = graph_totals(conn, "bench")
        with tenant_transaction(conn, "bench"):
            texts = [list(column or []) for column in conn.execute(TEXTS).fetchone() or ()]
    steps = ", ".join(f"{step} {seconds:.1f}" for step, seconds in summary.seconds.items())
    row: list[object] = [
        embedder_name, summary.written, totals.entities, totals.edges, built.communities.communities
        if built.communities else 0, f"{ingested:.1f}", f"{whole - ingested:.1f}", f"{whole:.1f}",
        f"**{len(docs) / whole:.1f}**", steps,
    ]  # fmt: skip
    print(row)
    return row, texts


def floor(texts: list[list[str]]) -> str:
    """The seconds `use` takes to embed the texts of each kind, in batches as ingestion sends them."""
    embedder = get_embedder("use", 512)
    parts = []
    total = 0.0
    for kind, batch, kind_texts in zip(("chunks", "entities", "report heads"), (64, 256, 256), texts, strict=True):
        start = time.perf_counter()
        for i in range(0, len(kind_texts), batch):
            embedder.embed(kind_texts[i : i + batch])
        seconds = time.perf_counter() - start
        total += seconds
        parts.append(f"{len(kind_texts):,} {kind} {seconds:.1f} s")
    return f"{'; '.join(parts)}: {total:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1890)
    parser.add_argument("--embedders", default="use,hash", help="comma-separated: e5, use, hash")
    parser.add_argument("--section", default="plain_text")
    args = parser.parse_args()
    docs = [{"doc_id": d["doc_id"], "title": d["title"], "text": d["text"]} for d in musique()[0][: args.docs]]
    rows: list[list[object]] = []
    texts: list[list[str]] = []
    for name in args.embedders.split(","):
        row, found = run(docs, name)
        rows.append(row)
        texts = texts or found
    use_alone = floor(texts)
    print(use_alone)
    header = ["embedder", "documents", "entities", "edges", "communities", "ingest s", "build s", "whole s",
              "documents/s", "ingestion steps (s; extraction and chunk embedding run beside the writes)"]  # fmt: skip
    body = (
        f"{len(docs):,} MuSiQue paragraphs as JSONL, `auto` extractor (keyphrases), ingested then built (communities, "
        "reports, answers, embeddings), one writer, 2 cores.\n\n"
        + markdown_table(header, rows)
        + f"\n\nThe `use` embedder alone, on the texts this corpus gives, one batch after another: {use_alone}. That "
        "is the floor of the `use` row on this machine: no ordering of the other steps brings the whole under it."
    )
    command = f"python benchmarks/plain_text.py --docs {args.docs} --embedders {args.embedders}"
    title = "Plain text end to end"
    if args.section != "plain_text":
        title += f": {args.embedders}, {len(docs):,} paragraphs"
    write_section(args.section, title, body, command)


if __name__ == "__main__":
    main()

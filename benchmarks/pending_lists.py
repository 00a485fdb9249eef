"""GIN pending lists: what a search pays for them, and what ingestion saves with them.

The same batches of the project's generator (benchmarks/ingest.py:generate, pre-extracted, `hash`
embedder, one writer) go, in turn, into three databases that differ only in the storage options of
the two GIN indexes (chunk_tsv_idx: lexical search; alias_trigrams_idx: entity linking):
PostgreSQL's default (fastupdate on: new entries wait in a pending list of up to 4 MB that every
search reads), a pending list of 256 kB for the chunks' index only, and no pending list
(fastupdate off, what revision 0026 sets). After each batch: linking and lexical search of the
same questions (p50 of 3 rounds), and the pending pages of each index (pgstattuple).

    python benchmarks/pending_lists.py [--batches 8] [--batch-size 2000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import psycopg
from common import markdown_table, scratch_database, timed, write_section
from ingest import generate
from scale import GLOBAL, NEGATIVE

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor

INDEXES = ("chunk_tsv_idx", "alias_trigrams_idx")
VARIANTS = {
    "pending lists (PostgreSQL's default, before 0026)": {"chunk_tsv_idx": "on", "alias_trigrams_idx": "on"},
    "256 kB list for chunks, none for names": {"chunk_tsv_idx": "256", "alias_trigrams_idx": "off"},
    "no pending list (0026)": {"chunk_tsv_idx": "off", "alias_trigrams_idx": "off"},
}
QUESTIONS = [*GLOBAL, *NEGATIVE, "What does Team 00001 depend on?", "Which services run on Cluster 00002?"]


def set_options(admin: psycopg.Connection, options: dict[str, str]) -> None:
    for index, option in options.items():
        storage = "gin_pending_list_limit = 256" if option == "256" else f"fastupdate = {option}"
        admin.execute(f"ALTER INDEX kgrag.{index} SET ({storage})")


def probe(conn: psycopg.Connection) -> tuple[float, float, list[int]]:
    """p50 ms of linking and of lexical search over QUESTIONS (3 rounds), and the pending pages."""
    link: list[float] = []
    lexical: list[float] = []

    def run(query: str, q: str) -> float:
        return timed(lambda: conn.execute(query, [q]).fetchall())[0]

    with tenant_transaction(conn, "bench"):
        for _ in range(3):
            for q in QUESTIONS:
                link.append(run("SELECT count(*) FROM kgrag.link_entities(%s)", q))
                lexical.append(run("SELECT count(*) FROM kgrag.search_chunks_lexical(%s, 10)", q))
        pages = [
            conn.execute("SELECT (pgstatginindex(%s::regclass)).pending_pages", [f"kgrag.{i}"]).fetchone()[0]  # type: ignore[index]
            for i in INDEXES
        ]
    return statistics.median(link), statistics.median(lexical), pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=2000)
    args = parser.parse_args()
    docs = generate(args.batches * args.batch_size, 4000)
    rows: list[list[object]] = []
    totals: dict[str, list[float]] = {name: [0.0, 0.0, 0.0, 0.0] for name in VARIANTS}  # s, chunks, link, lexical
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        runs = []
        for i, (name, options) in enumerate(VARIANTS.items()):
            dsn = stack.enter_context(scratch_database(f"kgrag_bench_pending_{i}"))
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
                set_options(admin, options)
            conn = stack.enter_context(connect(dsn))
            runs.append(
                (
                    name,
                    conn,
                    Ingestor(conn, "bench", ProvidedExtractor(), HashEmbedder(512), batch_size=args.batch_size),
                )
            )
        for b in range(args.batches):
            path = tmp / "batch.jsonl"
            batch = docs[b * args.batch_size : (b + 1) * args.batch_size]
            path.write_text("".join(json.dumps(d) + "\n" for d in batch))
            for name, conn, ingestor in runs:  # the same batch into each database in turn
                start = time.perf_counter()
                summary = ingestor.run([path])
                seconds = time.perf_counter() - start
                link, lexical, pages = probe(conn)
                total = totals[name]
                total[0] += seconds
                total[1] += summary.counts.chunks
                total[2] += link
                total[3] += lexical
                rows.append(
                    [b + 1, name, f"{summary.counts.chunks / seconds:.0f}", f"{link:.1f}", f"{lexical:.1f}", *pages]
                )
                print(rows[-1], flush=True)
    overall = [
        [name, f"{chunks / seconds:.0f}", f"{link / args.batches:.1f}", f"{lexical / args.batches:.1f}"]
        for name, (seconds, chunks, link, lexical) in totals.items()
    ]
    body = (
        f"{args.batches} batches of {args.batch_size:,} generated documents (`provided` extractor, `hash` embedder, "
        "one writer), the same batches into three databases in turn, which differ only in the GIN indexes' options. "
        f"After each batch, {len(QUESTIONS)} questions (whole-collection, off-corpus and two naming entities) are "
        "linked (kgrag.link_entities) and searched lexically (kgrag.search_chunks_lexical), 3 rounds, p50; pending "
        "pages read with pgstattuple's pgstatginindex.\n\n"
        + markdown_table(["options", "chunks/s over all batches", "mean link p50 ms", "mean lexical p50 ms"], overall)
        + "\n\n"
        + markdown_table(
            [
                "batch",
                "options",
                "chunks/s",
                "link p50 ms",
                "lexical p50 ms",
                "pending pages, chunks",
                "pending pages, names",
            ],
            rows,
        )
        + "\n"
    )
    print(body)
    write_section("pending_lists", "GIN pending lists", body)


if __name__ == "__main__":
    main()

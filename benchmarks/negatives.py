"""Questions a collection does not answer, with every bundled embedder: empty or not.

Two collections: a team's Portuguese contracts and compliance notes (tests/fixtures/acervo, ingested
from its folder with the default extractor, its questions.jsonl: direct questions, paraphrases that
share few words with the text, and questions about something else entirely), and the sample corpus
with its golden set (pgkgrag/sample). Each question is asked through the router (k = 10), with the
tenant's own floor for a vector chunk nothing else supports (the median similarity of two of its
passages, measured by the build: kgrag.refresh_chunk_spread) and, side by side, without it
(search option chunk_alone_min_similarity = -1: the floors carried over from USE alone). A
positive counts as found when a document that answers it is among the rows.

    python benchmarks/negatives.py [--embedders use e5 hash]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import psycopg
from common import markdown_table, scratch_database, write_section

from pgkgrag.db.connections import connect
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.extractors.choice import make_extractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.resources import SAMPLE_CORPUS, SAMPLE_GOLDEN
from pgkgrag.retrieval.search import run_search

ACERVO = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "acervo"

# (question, the documents that answer it; none for a question the collection does not answer)
Cases = list[tuple[str, set[str]]]


def acervo_cases() -> Cases:
    lines = (ACERVO / "questions.jsonl").read_text().splitlines()
    return [(q["question"], {f"{d}.md" for d in q.get("expect_docs", [])}) for q in map(json.loads, lines)]


def sample_cases() -> Cases:
    lines = SAMPLE_GOLDEN.read_text().splitlines()
    cases = []
    for q in map(json.loads, lines):
        if q.get("expect_empty") or q.get("expect_chunks"):  # (the global questions have no document to find)
            cases.append((q["question"], {c.split("#")[0] for c in q.get("expect_chunks", [])}))
    return cases


def figures(
    conn: psycopg.Connection, tenant: str, embedder: Embedder, cases: Cases, options: dict[str, object]
) -> list[str]:
    empty = found = 0
    negatives = [c for c in cases if not c[1]]
    for question, answering in cases:
        result = run_search(conn, tenant, embedder, question, "auto", 10, options)
        docs = {row.payload.get("doc_id") for row in result.rows}
        empty += not answering and not result.rows
        found += bool(answering and docs & answering)
    positives = len(cases) - len(negatives)
    return [f"{empty}/{len(negatives)}", f"{found}/{positives}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", nargs="+", default=["use", "e5", "hash"], choices=["use", "e5", "hash"])
    args = parser.parse_args()
    rows: list[list[object]] = []
    for name in args.embedders:
        with scratch_database("kgrag_bench_negatives") as dsn, connect(dsn) as conn:
            for collection, tenant, cases in (
                ("acervo (pt)", "acervo", acervo_cases()),
                ("sample", "demo", sample_cases()),
            ):
                embedder = tenant_embedder(conn, tenant, name)
                extractor = ProvidedExtractor() if tenant == "demo" else make_extractor(conn, tenant, "auto")
                Ingestor(conn, tenant, extractor, embedder).run(
                    [SAMPLE_CORPUS if tenant == "demo" else ACERVO / "docs"]
                )
                spread = build(conn, tenant, embedder).chunk_spread
                own = figures(conn, tenant, embedder, cases, {})
                carried = figures(conn, tenant, embedder, cases, {"chunk_alone_min_similarity": -1})
                median = "-" if spread is None else f"{spread:.3f}"
                rows.append([name, collection, median, *own, *carried])
                print(rows[-1], flush=True)
    header = [
        "embedder",
        "collection",
        "median passage similarity",
        "negatives empty",
        "positives found",
        "negatives empty, USE's floors carried over only",
        "positives found, USE's floors carried over only",
    ]
    body = (
        "Questions asked through the router (k = 10): `tests/fixtures/acervo` (13 Portuguese notes on contracts, "
        "payments, access audits and data retention, written for the tests; 12 questions it answers, 5 of them "
        "paraphrases sharing few words with the text, and 6 about something else: a carrot cake, the weather, "
        "the planets) and the sample corpus's golden set (its local, mixed and vector questions, 3 negatives). "
        "A negative is empty when no row comes back; a positive is found when a document that answers it is among "
        "the rows. With the tenant's own floor, a vector chunk that no seed and no word of the question supports "
        "must be at least as near the question as the median pair of the collection's passages (measured by the "
        "build); the last two columns turn that off (option chunk_alone_min_similarity = -1).\n\n"
        + markdown_table(header, rows)
        + "\n"
    )
    print(body)
    write_section("negatives", "Questions the collection does not answer, with every embedder", body)


if __name__ == "__main__":
    main()

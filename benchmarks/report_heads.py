"""How much of a community report the e5 embedder needs to read: the time to embed the reports' heads
cut at several lengths, and how the reports the global route would rank for a question move.

Each multi-hop corpus of ../shared/data/multihop (titles as the gazetteer, `hash` embedder: the
reports are template reports, whatever the embedder) is ingested and built once; its reports' heads
(kgrag.report_embedding_text, and the same report cut shorter) are embedded with e5, and every
question of the set ranks the reports by cosine, as kgrag.search_reports_vector does. For each cut:
seconds to embed every head, and against the longest cut, the share of the top 3 and top 5 reports
that stay, and how often its first report stays among the first 3.

    python benchmarks/report_heads.py [--questions 200] [--cuts 4000,2000,1000,600]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from common import markdown_table, scratch_database, write_section
from multihop import gazetteer, hotpotqa, musique

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import get_embedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor
from pgkgrag.ingest.ingestor import Ingestor

HEADS = """SELECT kgrag.report_embedding_text(report),
                  ARRAY(SELECT DISTINCT split_part(x, '#', 1) FROM unnest(evidence_chunk_ids) AS x)
             FROM kgrag.community_report ORDER BY community_id COLLATE "C" """


def heads(docs: list[dict[str, str]]) -> list[tuple[str, list[str]]]:
    """Each report's head and the documents of the chunks it cites as evidence (the global route's
    chunk rows)."""
    with (
        scratch_database("kgrag_bench_report_heads") as dsn,
        connect(dsn) as conn,
        tempfile.TemporaryDirectory() as tmp,
    ):
        path = Path(tmp) / "corpus.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        embedder = get_embedder("hash", 512)
        Ingestor(conn, "bench", GazetteerExtractor(gazetteer(docs)), embedder).run([path])
        build(conn, "bench", embedder)
        with tenant_transaction(conn, "bench"):
            return [(row[0], row[1]) for row in conn.execute(HEADS).fetchall()]


def recall(ranked: np.ndarray, evidence: list[set[str]], gold: list[set[str]], n: int) -> float:
    """The mean share of each question's gold documents among those the first n reports cite."""
    found = [set().union(*(evidence[i] for i in row[:n])) for row in ranked]
    return float(np.mean([len(f & g) / len(g) for f, g in zip(found, gold, strict=True)]))


def overlap(a: np.ndarray, b: np.ndarray, n: int) -> float:
    """The mean share of each row's first n of a found among the first n of b."""
    return float(np.mean([len(set(x[:n]) & set(y[:n])) / n for x, y in zip(a, b, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=200, help="questions of each set")
    parser.add_argument("--cuts", default="4000,2000,1000,600", help="characters of each head, the longest first")
    args = parser.parse_args()
    cuts = [int(c) for c in args.cuts.split(",")]
    e5 = get_embedder("e5", 512)
    rows: list[list[object]] = []
    for name, (docs, asked) in (("hotpotqa", hotpotqa()), ("musique", musique())):
        reports = heads(docs)
        texts, evidence = [t for t, _ in reports], [set(e) for _, e in reports]
        asked = asked[: args.questions]
        questions = e5.embed_queries([q for q, _ in asked])
        gold = [g for _, g in asked]
        ranked: list[np.ndarray] = []
        for cut in cuts:
            started = time.perf_counter()
            vectors = e5.embed([t[:cut] for t in texts])
            seconds = time.perf_counter() - started
            ranked.append(np.argsort(-(questions @ vectors.T), axis=1, kind="stable"))
            first_in_3 = np.mean([r0[0] in r[:3] for r0, r in zip(ranked[0], ranked[-1], strict=True)])
            rows.append(
                [
                    name,
                    len(texts),
                    cut,
                    f"{np.mean([min(len(t), cut) for t in texts]):,.0f}",
                    f"{seconds:.1f}",
                    f"{overlap(ranked[0], ranked[-1], 3):.0%}",
                    f"{overlap(ranked[0], ranked[-1], 5):.0%}",
                    f"{first_in_3:.0%}",
                    f"{recall(ranked[-1], evidence, gold, 3):.1%}",
                ]
            )
            print(rows[-1], flush=True)
    body = (
        f"The template reports of each multi-hop corpus (titles as the gazetteer), their heads cut at {args.cuts} "
        f"characters and embedded with e5 (one call, both cores); the first {args.questions} questions of each set "
        f"rank the reports by cosine. Against the longest cut ({cuts[0]:,}): the share of its first 3 and first 5 "
        "reports a shorter cut ranks there too, and how often its first report is among the shorter cut's first 3. "
        "Gold R@3: the share of a question's supporting paragraphs among the documents the first 3 reports cite "
        "as evidence (the chunks the global route returns with them).\n\n"
        + markdown_table(
            [
                "set",
                "reports",
                "cut (characters)",
                "mean head",
                "e5 seconds",
                "top 3 kept",
                "top 5 kept",
                "first in top 3",
                "gold R@3",
            ],
            rows,
        )
        + "\n"
    )
    print(body)
    write_section("report_heads", "How much of a report e5 reads", body)


if __name__ == "__main__":
    main()

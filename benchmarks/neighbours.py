"""Neighbouring chunks on ../shared/data/multihop: recall and characters packed, with and without.

The sets and their ingestion are those of benchmarks/multihop.py (each paragraph a document, the
titles as the gazetteer, the USE embedder), the router chooses the route, k = 5 chunk rows. With
the search option neighbours, each chunk row is followed by the chunk before and after it in its
document. Recall counts distinct documents among the chunk rows; characters are what
kgrag.context packs for the question within max_chars.

    python benchmarks/neighbours.py [--sets hotpotqa musique] [--k 5] [--max-chars 8000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from common import markdown_table, write_section
from multihop import hotpotqa, ingested, musique, ranked_documents, recall

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.queries import Q
from pgkgrag.retrieval.search import run_search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["musique", "hotpotqa"], choices=["musique", "hotpotqa"])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--max-chars", type=int, default=8000)
    args = parser.parse_args()
    loaders = {"musique": musique, "hotpotqa": hotpotqa}
    rows: list[list[object]] = []
    for name in args.sets:
        docs, questions = loaders[name]()
        with ingested(name, docs) as (conn, embedder):
            for neighbours in (False, True):
                options = {"neighbours": neighbours}
                r2, r5, added, chars, ms = [], [], [], [], []
                for question, gold in questions:
                    t0 = time.perf_counter()
                    result = run_search(conn, "bench", embedder, question, "auto", args.k, options)
                    ms.append((time.perf_counter() - t0) * 1000)
                    ranked = ranked_documents(result)
                    r2.append(recall(ranked, gold, 2))
                    r5.append(recall(ranked, gold, 5))
                    added.append(sum(row.source == "neighbour" for row in result.rows))
                    vector = embedder.embed_queries([question])[0]
                    with tenant_transaction(conn, "bench"):
                        packed = conn.execute(
                            Q["context"], [vector, "auto", question, args.max_chars, args.k, json.dumps(options)]
                        ).fetchone()
                    chars.append(len(packed[0]) if packed else 0)
                rows.append(
                    [
                        name,
                        "on" if neighbours else "off",
                        len(questions),
                        f"{100 * statistics.mean(r2):.1f}",
                        f"{100 * statistics.mean(r5):.1f}",
                        f"{statistics.mean(added):.2f}",
                        f"{statistics.mean(chars):.0f}",
                        f"{statistics.median(ms):.0f}",
                    ]
                )
                print(rows[-1])
    table = markdown_table(
        ["set", "neighbours", "questions", "R@2", "R@5", "neighbour rows", "context chars", "p50 ms"], rows
    )
    body = (
        f"Route auto, k = {args.k} chunk rows, context within {args.max_chars} characters; means per question. "
        "Recall counts distinct documents, and a neighbour is a chunk of the same document, so neighbours can "
        "only move recall when a document has several chunks: what they add is the text around the evidence.\n\n"
        + table
        + "\n"
    )
    print(body)
    write_section("neighbours", "Neighbouring chunks: recall and characters packed, with and without", body)


if __name__ == "__main__":
    main()

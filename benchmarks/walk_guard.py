"""What checking each co-occurrence costs a walk: the local route with and without the check.

A walk checks a co-occurrence chunk by chunk (kgrag_private.pair_walkable: the chunks naming both,
the relations they state) only in a tenant where some stated relation may not be walked (dated,
denied, rejected, or a confidence floor asked for). Here the multi-hop sets' graphs (titles as the
gazetteer, `use`), whose every edge is a co-occurrence, are searched by the local route with the
default (no check: nothing to hold back) and with min_confidence = 0.01 (every co-occurrence the
walk considers is checked), question by question, alternating, so both see the same machine.
Recall@5 is printed for both: the check must not change what an undated graph returns.

    python benchmarks/walk_guard.py [--sets hotpotqa musique]
"""

from __future__ import annotations

import argparse
import time

from common import markdown_table, write_section
from multihop import gazetteer, hotpotqa, ingested, musique, ranked_documents, recall

from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor
from pgkgrag.retrieval.search import run_search

CHECKED = {"graph_ranking": "paths", "min_confidence": 0.01}
UNCHECKED = {"graph_ranking": "paths"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    loaders = {"hotpotqa": hotpotqa, "musique": musique}
    parser.add_argument("--sets", nargs="+", default=sorted(loaders), choices=sorted(loaders))
    args = parser.parse_args()
    rows: list[list[object]] = []
    for name in args.sets:
        docs, questions = loaders[name]()
        sizes: list[list[object]] = []
        with ingested(name, docs, GazetteerExtractor(gazetteer(docs)), sizes, "use") as (conn, embedder):
            times: dict[str, list[float]] = {"unchecked": [], "checked": []}
            hits: dict[str, list[float]] = {"unchecked": [], "checked": []}
            for question, gold in questions:
                for label, options in (("unchecked", UNCHECKED), ("checked", CHECKED)):
                    t0 = time.perf_counter()
                    result = run_search(conn, "bench", embedder, question, "local", 5, options)
                    times[label].append((time.perf_counter() - t0) * 1000)
                    hits[label].append(recall(ranked_documents(result), gold, 5))
            p = {label: sorted(ms) for label, ms in times.items()}
            for label in ("unchecked", "checked"):
                ms = p[label]
                rows.append(
                    [
                        name,
                        label,
                        len(ms),
                        f"{ms[len(ms) // 2]:.1f}",
                        f"{ms[int(len(ms) * 0.95)]:.1f}",
                        f"{100 * sum(hits[label]) / len(hits[label]):.1f}",
                    ]
                )
            ratio = p["checked"][len(p["checked"]) // 2] / p["unchecked"][len(p["unchecked"]) // 2]
            rows[-1].append(f"x{ratio:.2f}")
            rows[-2].append("")
            print(rows[-2:], flush=True)
    body = (
        "The local route (k = 5, graph ranked by k-hop paths) on the multi-hop sets' graphs (titles, `use`), each "
        "question asked twice in turn: unchecked (the default here: no stated relation to hold a co-occurrence "
        "back) and checked (min_confidence = 0.01: every co-occurrence the walk considers goes through "
        "kgrag_private.pair_walkable, as in a tenant with dated, denied or rejected relations).\n\n"
        + markdown_table(["set", "walk", "searches", "p50 ms", "p95 ms", "R@5", "p50 checked / unchecked"], rows)
        + "\n"
    )
    print(body)
    write_section("walk_guard", "What checking each co-occurrence costs a walk", body)


if __name__ == "__main__":
    main()

"""Evaluation per route on the bundled sample corpus and its golden set (pgkgrag/sample).

Ingests the sample with each embedder named (USE and e5 by default), builds, and runs `pgkgrag
eval`'s evaluation: route accuracy, coverage@5, empty rate on negatives, mean rows and ms, per
expected route.

    python benchmarks/routes.py [--embedders use e5]
"""

from __future__ import annotations

import argparse

from common import markdown_table, scratch_database, write_section

from pgkgrag.db.connections import connect
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.resources import SAMPLE_CORPUS, SAMPLE_GOLDEN
from pgkgrag.retrieval.evaluation import evaluate, read_golden
from pgkgrag.retrieval.search import routes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", nargs="+", default=["use", "e5"], choices=["use", "e5", "hash"])
    args = parser.parse_args()
    rows: list[list[object]] = []
    misses: list[str] = []
    header: list[str] = []
    asked = 0
    for name in args.embedders:
        with scratch_database("kgrag_bench_routes") as dsn, connect(dsn) as conn:
            embedder = tenant_embedder(conn, "demo", name)
            questions = read_golden(SAMPLE_GOLDEN, routes(conn))
            Ingestor(conn, "demo", ProvidedExtractor(), embedder).run([SAMPLE_CORPUS])
            build(conn, "demo", embedder)
            figures = evaluate(conn, "demo", embedder, questions, k=5)
        asked = len(questions)
        header = ["embedder", "route", *next(iter(figures.values())).row()]
        rows += [[name, route, *f.row().values()] for route, f in figures.items()]
        misses += [f"- {name}, {route}: {miss}" for route, f in figures.items() for miss in f.misses]
        print(rows[-len(figures) :], flush=True)
    body = (
        f"The sample corpus (41 documents, 3 in Portuguese) and its golden set ({asked} questions, "
        "`pgkgrag/sample/golden.jsonl`), k = 5, with each embedder. The golden set was written together with the "
        "sample and the router's rules (for USE), so read these figures as a regression check of the routes, not as "
        "a measure of how they generalize (the multi-hop section is that).\n\n"
        + markdown_table(header, rows)
        + "\n\n"
        + ("Misses:\n" + "\n".join(misses) if misses else "No misses.")
        + "\n"
    )
    print(body)
    write_section("routes", "Evaluation per route (sample golden set)", body)


if __name__ == "__main__":
    main()

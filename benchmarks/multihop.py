"""Multi-hop retrieval on ../shared/data/multihop: Recall@2 and Recall@5 of the gold paragraphs,
for the vector route, the router (auto) and the local route, with the graph's chunks ranked by
the k-hop paths, by Personalized PageRank, or both (search option graph_ranking), side by side;
each on two graphs: the paragraph titles as the gazetteer, and the offline keyphrases extractor
(no names given); and each with the embedders named (USE and e5 by default), side by side in one run.

Each corpus paragraph is a document (a title's parenthesised qualifier is dropped as an alias:
"Lilu (mythology)" is also "Lilu"). Retrieved paragraphs are the documents of the chunk rows, in
rank order.

    python benchmarks/multihop.py [--sets hotpotqa musique] [--graphs titles keyphrases] [--embedders use e5] [--k 5]
                                  [--section multihop]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from common import DATA, markdown_table, scratch_database, write_section

from pgkgrag.db.connections import connect
from pgkgrag.embed.embedders import Embedder, get_embedder
from pgkgrag.graph.build import build
from pgkgrag.graph.totals import graph_totals
from pgkgrag.ingest.extractors.base import Extractor
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor, KnownName
from pgkgrag.ingest.extractors.keyphrases import KeyphraseExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.retrieval.results import SearchResult
from pgkgrag.retrieval.search import run_search

# (label, route, search options)
VARIANTS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("vector", "vector", {}),
    ("auto", "auto", {"graph_ranking": "paths"}),
    ("local", "local", {"graph_ranking": "paths"}),
    ("local ppr", "local", {"graph_ranking": "pagerank"}),
    ("local both", "local", {"graph_ranking": "both"}),
)
GRAPHS = ("titles", "keyphrases")


def hotpotqa() -> tuple[list[dict[str, str]], list[tuple[str, set[str]]]]:
    corpus = json.loads((DATA / "hotpotqa" / "hotpotqa_train_corpus.json").read_text())
    ids = {title: f"h{i:04d}" for i, title in enumerate(corpus)}
    docs = [{"doc_id": ids[t], "title": t, "text": "".join(s).strip()} for t, s in corpus.items()]
    questions = [
        (q["question"], {ids[t] for t, _ in q["supporting_facts"]})
        for q in json.loads((DATA / "hotpotqa" / "hotpotqa_train.json").read_text())
    ]
    return docs, questions


def musique() -> tuple[list[dict[str, str]], list[tuple[str, set[str]]]]:
    corpus = json.loads((DATA / "musique" / "musique_train_corpus.json").read_text())
    ids = {(p["title"], p["text"]): f"m{i:04d}" for i, p in enumerate(corpus)}
    docs = [{"doc_id": ids[(p["title"], p["text"])], "title": p["title"], "text": p["text"]} for p in corpus]
    questions = [
        (q["question"], {ids[(p["title"], p["paragraph_text"])] for p in q["paragraphs"] if p["is_supporting"]})
        for q in json.loads((DATA / "musique" / "musique_train.json").read_text())
    ]
    return docs, questions


def gazetteer(docs: list[dict[str, str]]) -> list[KnownName]:
    names = []
    for title in sorted({d["title"] for d in docs}):
        short = re.sub(r"\s*\([^)]*\)\s*$", "", title)
        names.append(KnownName(title, "Topic", (short,) if short != title else ()))
    return names


def recall(retrieved: list[str], gold: set[str], k: int) -> float:
    return len(set(retrieved[:k]) & gold) / len(gold)


def ranked_documents(result: SearchResult) -> list[str]:
    """The documents of the chunk rows, in rank order, once each."""
    return list(dict.fromkeys(ref.split("#")[0] for ref in result.chunks()))


@contextmanager
def ingested(
    name: str, docs: list[dict[str, str]], extractor: Extractor, sizes: list[list[object]], embedder_name: str = "use"
) -> Iterator[tuple[psycopg.Connection, Embedder]]:
    """A scratch database holding the set, ingested and built as tenant 'bench' with the embedder
    named, and the embedder; the graph's size and the time it took are appended to `sizes`."""
    embedder = get_embedder(embedder_name, 512)
    with scratch_database(f"kgrag_bench_{name}") as dsn, connect(dsn) as conn, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        start = time.perf_counter()
        report = Ingestor(conn, "bench", extractor, embedder).run([path])
        built = build(conn, "bench", embedder)
        seconds = time.perf_counter() - start
        totals = graph_totals(conn, "bench")
        graph = "titles" if isinstance(extractor, GazetteerExtractor) else extractor.name
        size = [report.written, totals.chunks, totals.entities, report.counts.mentions, totals.edges]
        spread = "-" if built.chunk_spread is None else f"{built.chunk_spread:.3f}"
        sizes.append([name, graph, embedder_name, *size, totals.communities, spread, f"{seconds:.0f}"])
        print(sizes[-1])
        yield conn, embedder


Questions = list[tuple[str, set[str]]]


def run_set(
    name: str,
    docs: list[dict[str, str]],
    questions: Questions,
    k: int,
    graph: str,
    sizes: list[list[object]],
    embedder_name: str,
) -> list[list[object]]:
    extractor: Extractor = GazetteerExtractor(gazetteer(docs)) if graph == "titles" else KeyphraseExtractor()
    with ingested(name, docs, extractor, sizes, embedder_name) as (conn, embedder):
        rows = []
        for label, route, options in VARIANTS:
            r2, r5, ms, routes = [], [], [], {}
            for question, gold in questions:
                t0 = time.perf_counter()
                result = run_search(conn, "bench", embedder, question, route, k, options)
                ms.append((time.perf_counter() - t0) * 1000)
                docs_ranked = ranked_documents(result)
                r2.append(recall(docs_ranked, gold, 2))
                r5.append(recall(docs_ranked, gold, 5))
                routes[result.route] = routes.get(result.route, 0) + 1
            picked = ", ".join(f"{r} {n}" for r, n in sorted(routes.items(), key=lambda x: -x[1]))
            r2_pct, r5_pct = f"{100 * sum(r2) / len(r2):.1f}", f"{100 * sum(r5) / len(r5):.1f}"
            p50 = f"{sorted(ms)[len(ms) // 2]:.0f}"
            rows.append([name, graph, embedder_name, label, len(questions), r2_pct, r5_pct, picked, p50])
            print(rows[-1])
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["musique", "hotpotqa"], choices=["musique", "hotpotqa"])
    parser.add_argument("--graphs", nargs="+", default=list(GRAPHS), choices=GRAPHS)
    parser.add_argument("--embedders", nargs="+", default=["use", "e5"], choices=["use", "e5", "hash"])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument(
        "--section", default="multihop", help="the section of docs/benchmarks.md written (one per kind of run)"
    )
    args = parser.parse_args()
    loaders = {"musique": musique, "hotpotqa": hotpotqa}
    rows: list[list[object]] = []
    sizes: list[list[object]] = []
    for name in args.sets:
        docs, questions = loaders[name]()
        for graph in args.graphs:
            for embedder_name in args.embedders:
                rows += run_set(name, docs, questions, args.k, graph, sizes, embedder_name)
    table = markdown_table(
        ["set", "graph", "embedder", "route", "questions", "R@2", "R@5", "routes taken", "p50 ms"], rows
    )
    size_table = markdown_table(
        [
            "set",
            "graph",
            "embedder",
            "documents",
            "chunks",
            "entities",
            "mentions",
            "edges",
            "communities",
            "median passage similarity",
            "ingest + build s",
        ],
        sizes,
    )
    body = (
        "Recall of the gold supporting paragraphs among the first 2 and 5 distinct paragraphs of the chunk rows "
        "(k = 5 chunk rows). `vector` is vector + lexical search fused by RRF; `local` forces the graph route; "
        "`auto` lets the router choose. `use` is USE multilingual v3 (512 dimensions), `e5` "
        "multilingual-e5-small 4-bit (384; questions embedded as queries). "
        "The graph's chunks are ranked by the k-hop paths (the default), by "
        "Personalized PageRank (`ppr`, search option graph_ranking = pagerank) or both fused (`both`). "
        "Graph `titles`: the paragraph titles are the gazetteer; `keyphrases`: the offline extractor, no names "
        "given. The sets are small (100 questions each): differences under ~10 points are noise.\n\n"
        + table
        + "\n\nThe graphs, and the time to ingest (embedding included) and build them; the median passage "
        "similarity is what the build measured (kgrag.refresh_chunk_spread): a vector chunk that no seed or word "
        "of the question supports must clear it as well as chunk_min_similarity (for e5, the floor carried over "
        "from USE: see Similarity floors):\n\n" + size_table + "\n"
    )
    print(body)
    title = "Multi-hop retrieval: vector vs the graph routes, two graphs"
    write_section(args.section, title if args.section == "multihop" else f"{title} ({args.section})", body)


if __name__ == "__main__":
    main()

"""Multi-hop retrieval on ../shared/data/multihop: Recall@2 and Recall@5 of the gold paragraphs,
for the vector route, the router (auto) and the local route, side by side.

Each corpus paragraph is a document; the paragraph titles are the gazetteer (a title's
parenthesised qualifier is dropped as an alias: "Lilu (mythology)" is also "Lilu"); the embedder
is the default (USE). Retrieved paragraphs are the documents of the chunk rows, in rank order.

    python benchmarks/multihop.py [--sets hotpotqa musique] [--k 5]
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

from pgkgrag.build import build
from pgkgrag.db import connect
from pgkgrag.embedders import Embedder, get_embedder
from pgkgrag.gazetteer import GazetteerExtractor, KnownName
from pgkgrag.ingest import Ingestor
from pgkgrag.search import SearchResult, run_search

ROUTES = ("vector", "auto", "local")


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
def ingested(name: str, docs: list[dict[str, str]]) -> Iterator[tuple[psycopg.Connection, Embedder]]:
    """A scratch database holding the set, ingested and built as tenant 'bench', and the embedder."""
    embedder = get_embedder("use", 512)
    with scratch_database(f"kgrag_bench_{name}") as dsn, connect(dsn) as conn, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        start = time.perf_counter()
        report = Ingestor(conn, "bench", GazetteerExtractor(gazetteer(docs)), embedder).run([path])
        built = build(conn, "bench", embedder)
        communities = built.communities.communities if built.communities else 0
        print(
            f"{name}: {report.written} documents, {report.counts.chunks} chunks, "
            f"{report.counts.mentions} mentions, {communities} communities, "
            f"ingested and built in {time.perf_counter() - start:.0f} s"
        )
        yield conn, embedder


def run_set(name: str, docs: list[dict[str, str]], questions: list[tuple[str, set[str]]], k: int) -> list[list[object]]:
    with ingested(name, docs) as (conn, embedder):
        rows = []
        for route in ROUTES:
            r2, r5, ms, routes = [], [], [], {}
            for question, gold in questions:
                t0 = time.perf_counter()
                result = run_search(conn, "bench", embedder, question, route, k)
                ms.append((time.perf_counter() - t0) * 1000)
                docs_ranked = ranked_documents(result)
                r2.append(recall(docs_ranked, gold, 2))
                r5.append(recall(docs_ranked, gold, 5))
                routes[result.route] = routes.get(result.route, 0) + 1
            picked = ", ".join(f"{r} {n}" for r, n in sorted(routes.items(), key=lambda x: -x[1]))
            r2_pct, r5_pct = f"{100 * sum(r2) / len(r2):.1f}", f"{100 * sum(r5) / len(r5):.1f}"
            rows.append([name, route, len(questions), r2_pct, r5_pct, picked, f"{sorted(ms)[len(ms) // 2]:.0f}"])
            print(rows[-1])
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["musique", "hotpotqa"], choices=["musique", "hotpotqa"])
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    loaders = {"musique": musique, "hotpotqa": hotpotqa}
    rows = []
    for name in args.sets:
        docs, questions = loaders[name]()
        rows += run_set(name, docs, questions, args.k)
    table = markdown_table(["set", "route", "questions", "R@2", "R@5", "routes taken", "p50 ms"], rows)
    body = (
        "Recall of the gold supporting paragraphs among the first 2 and 5 distinct paragraphs of the chunk rows "
        "(k = 5 chunk rows). `vector` is vector + lexical search fused by RRF; `local` forces the graph route; "
        "`auto` lets the router choose. The sets are small (100 questions each): differences under ~10 points "
        "are noise.\n\n" + table + "\n"
    )
    print(body)
    write_section("multihop", "Multi-hop retrieval: vector vs auto vs local", body)


if __name__ == "__main__":
    main()

"""What one changed document costs: MuSiQue paragraphs (../shared/data/multihop) ingested and built
with the default path (`auto` extractor, the embedder asked for), then, for a few documents in turn,
one sentence (the first of the next document) appended to it, that document ingested again and the
build run: the seconds of each against the first run's, the communities the build replaced, the
reports it wrote and the report vectors it computed again; and how the communities the builds left
compare with a fresh detection of the same graph (the modularity of their top level).

    python benchmarks/one_change.py [--docs 300] [--changes 3] [--embedder e5] [--fresh]

--fresh: every build after a change detects the communities from scratch (`pgkgrag build --fresh`),
as every build did before detection started from the current communities.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

import psycopg
from common import markdown_table, scratch_database, write_section
from multihop import musique

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import get_embedder
from pgkgrag.graph.build import BuildSummary, build
from pgkgrag.graph.communities import Leiden
from pgkgrag.ingest.extractors.choice import AutoExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.queries import Q


def first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]


def modularity(conn: psycopg.Connection) -> tuple[float, float, int, int]:
    """Modularity of the top level of the communities stored and of a fresh detection of the same graph
    (the tenant's settings), and how many communities of one member each holds (any level)."""
    import graspologic_native as gn

    with tenant_transaction(conn, "bench"):
        edges = [(a, b, float(w)) for _, a, b, w in conn.execute(Q["community_graph"])]
        partition = conn.execute(Q["community_partition"]).fetchall()
        settings = conn.execute(Q["community_settings"]).fetchone()
    assert settings is not None
    fresh = Leiden(gn, *settings).fresh(edges)
    top = {entity: community for entity, level, community, _ in partition if level == 0}
    numbers = {c: n for n, c in enumerate(sorted(set(top.values())))}
    stored_sizes = Counter(community for _, _, community, _ in partition)
    fresh_sizes = Counter((level, cluster) for _, level, cluster, _ in fresh)
    return (
        gn.modularity(edges, {node: numbers[c] for node, c in top.items()}),
        gn.modularity(edges, {node: cluster for node, level, cluster, _ in fresh if level == 0}),
        sum(1 for n in stored_sizes.values() if n == 1),
        sum(1 for n in fresh_sizes.values() if n == 1),
    )


def communities(built: BuildSummary) -> str:
    if built.communities is None:
        return "unchanged"
    counts = built.communities
    return f"{counts.communities} ({counts.new} new, {counts.removed} gone)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=300, help="paragraphs ingested")
    parser.add_argument("--changes", type=int, default=3, help="documents changed, one after another")
    parser.add_argument("--embedder", default="e5")
    parser.add_argument("--fresh", action="store_true", help="detect the communities from scratch at every build")
    args = parser.parse_args()
    docs = musique()[0][: args.docs]
    embedder = get_embedder(args.embedder, 512)
    rows: list[list[object]] = []
    with scratch_database("kgrag_bench_one_change") as dsn, connect(dsn) as conn, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "paragraphs.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        started = time.perf_counter()
        Ingestor(conn, "bench", AutoExtractor(), embedder).run([path])
        ingested = time.perf_counter() - started
        built = build(conn, "bench", embedder)
        first = time.perf_counter() - started
        rows.append(
            [
                "first run",
                f"{ingested:.1f}",
                f"{first - ingested:.1f}",
                f"{first:.1f}",
                "",
                communities(built),
                f"{built.reports.written} of {built.reports.reports}",
                built.report_embeddings,
            ]
        )
        print(rows[-1], flush=True)
        step = max(1, len(docs) // (args.changes + 1))
        for n in range(1, args.changes + 1):
            doc, following = docs[n * step], docs[n * step + 1]
            changed = {**doc, "text": f"{doc['text'].rstrip()} {first_sentence(following['text'])}"}
            one = Path(tmp) / f"change{n}.jsonl"
            one.write_text(json.dumps(changed) + "\n")
            started = time.perf_counter()
            Ingestor(conn, "bench", AutoExtractor(), embedder).run([one])
            ingested = time.perf_counter() - started
            built = build(conn, "bench", embedder, fresh=args.fresh)
            whole = time.perf_counter() - started
            rows.append(
                [
                    f"{doc['doc_id']} + one sentence",
                    f"{ingested:.1f}",
                    f"{whole - ingested:.1f}",
                    f"{whole:.1f}",
                    f"x{whole / first:.2f}",
                    communities(built),
                    f"{built.reports.written} of {built.reports.reports}",
                    built.report_embeddings,
                ]
            )
            print(rows[-1], flush=True)
        kept, fresh, alone, fresh_alone = modularity(conn)
    body = (
        f"{len(docs)} MuSiQue paragraphs as JSONL, `auto` extractor, `{args.embedder}` embedder, one writer; then "
        f"{args.changes} documents in turn, each with the first sentence of the next paragraph appended, ingested "
        f"again and built ({'communities detected from scratch every time' if args.fresh else 'the default build'}). "
        "x: against the first run. Communities: after the build (those it created and removed; "
        "`unchanged`: detection did not run). Reports written: the reports whose text changed; vectors: the report "
        "vectors computed again.\n\n"
        + markdown_table(
            [
                "run",
                "ingest s",
                "build s",
                "whole s",
                "x",
                "communities",
                "reports written",
                "report vectors",
            ],
            rows,
        )
        + f"\n\nModularity of the top level after the last change: {kept:.4f} as the builds left it, {fresh:.4f} for a "
        "fresh detection of the same graph (`pgkgrag build --fresh`; the default settings: seed 42, resolution 1, "
        "maximum size 25); communities of one member: "
        f"{alone} as the builds left them, {fresh_alone} fresh.\n"
    )
    print(body)
    way = " --fresh" if args.fresh else ""
    write_section(
        f"one_change_{args.embedder}{way.replace(' --', '_')}",
        f"One changed document ({args.embedder}{way})",
        body,
        f"python benchmarks/one_change.py --embedder {args.embedder}{way}",
    )


if __name__ == "__main__":
    main()

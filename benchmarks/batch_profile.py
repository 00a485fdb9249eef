"""Where an ingestion batch's time goes, at the start and after the corpus has grown.

The growth benchmark's input (benchmarks/ingest.py:generate, power-law entity mentions), one
writer as kgrag_writer, `provided` extractor, `hash` embedder, --batches batches of --batch-size
documents. Every statement of 2 ms or more that the first and the last batch run (nested ones
included) is timed by auto_explain (log_analyze on, per-node timing off); the statements that
took longest are listed with their milliseconds, and the edge upsert's rows: inserted, updated,
and left as they were; and how many of the edge row updates of the whole run were heap-only.

    python benchmarks/batch_profile.py [--batches 8] [--batch-size 2000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from common import markdown_table, scratch_database, write_section
from ingest import generate

from pgkgrag.db.connections import WRITER, connect, use_role
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.totals import graph_totals
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor

TOP = 12
EDGE_UPSERT = "INSERT INTO kgrag.edge AS g"


def statement(plan: str) -> str:
    """The first words of a logged statement, whitespace folded: what the table names it by."""
    text = plan.split("Query Text:", 1)[1] if "Query Text:" in plan else plan
    lines = itertools.takewhile(
        lambda line: "(cost=" not in line and "Query Parameters:" not in line, text.splitlines()
    )
    return re.sub(r"\s+", " ", " ".join(lines)).strip()[:90]


def upsert_rows(plans: list[str]) -> str:
    """Rows the edge upsert inserted, updated and left unchanged (from its plan)."""
    for plan in plans:
        if EDGE_UPSERT in plan:
            found = {
                key: int(float(m.group(1))) if (m := re.search(rf"{key}: ([\d.]+)", plan)) else 0
                for key in ("Tuples Inserted", "Conflicting Tuples", "Rows Removed by Conflict Filter")
            }
            updated = found["Conflicting Tuples"] - found["Rows Removed by Conflict Filter"]
            return (
                f"{found['Tuples Inserted']:,} inserted, {updated:,} updated, "
                f"{found['Rows Removed by Conflict Filter']:,} unchanged"
            )
    return "not run"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=2000)
    args = parser.parse_args()
    size = args.batch_size
    docs = generate(size * args.batches, max(4000, size * args.batches // 10))
    profiles: list[tuple[str, float, dict[str, float], str]] = []
    with scratch_database("kgrag_bench_profile") as dsn, tempfile.TemporaryDirectory() as tmp:
        plans: list[str] = []
        with connect(dsn, autocommit=True) as conn:
            conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
            conn.execute("LOAD 'auto_explain'")  # the superuser's; the statements run as kgrag_writer
            for setting, value in (
                ("log_min_duration", "2"),  # not 0: a notice per row of a COPY would fill the socket
                ("log_nested_statements", "on"),
                ("log_analyze", "on"),
                ("log_timing", "off"),
                ("log_level", "notice"),
            ):
                conn.execute(f"SET auto_explain.{setting} = {value}")
            assert use_role(conn, WRITER)
            conn.autocommit = False
            ingestor = Ingestor(conn, "bench", ProvidedExtractor(), HashEmbedder(512), batch_size=size)
            for b in range(args.batches):
                path = Path(tmp) / "batch.jsonl"
                path.write_text("".join(json.dumps(d) + "\n" for d in docs[b * size : (b + 1) * size]))
                before = graph_totals(conn, "bench")
                plans.clear()
                start = time.perf_counter()
                summary = ingestor.run([path])
                seconds = time.perf_counter() - start
                print(f"batch {b + 1}: {summary.counts.chunks:,} chunks in {seconds:.1f} s", flush=True)
                if b in (0, args.batches - 1):
                    took: defaultdict[str, float] = defaultdict(float)
                    for plan in plans:
                        if m := re.search(r"duration: ([\d.]+) ms", plan):
                            took[statement(plan)] += float(m.group(1))
                    label = f"batch {b + 1}, corpus {before.chunks:,} chunks and {before.edges:,} edges before it"
                    profiles.append((label, summary.counts.chunks / seconds, took, upsert_rows(plans)))
            conn.execute("SELECT pg_catalog.pg_stat_force_next_flush()")  # this session's counts, when idle
            conn.commit()
            updated, hot = conn.execute(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_catalog.pg_stat_user_tables"
                " WHERE relid = 'kgrag.edge'::regclass"
            ).fetchone() or (0, 0)
            conn.rollback()
    body = (
        f"{args.batches} batches of {size:,} generated documents, one writer (kgrag_writer), `provided` extractor, "
        "`hash` embedder; every statement of 2 ms or more timed by auto_explain (log_analyze, which slows "
        "them: compare the two batches, not with other tables). A nested statement's time is also in the "
        "statement that called it (kgrag_private.ingest_apply() holds most of the others).\n\n"
        f"Over the {args.batches} batches, {updated:,} kgrag.edge row updates, {hot:,} of them heap-only "
        f"({100 * hot / max(1, updated):.0f}%: no index entry written; pg_stat_user_tables).\n"
    )
    for label, rate, took, rows in profiles:
        top = sorted(took.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]
        body += (
            f"\n### {label}: {rate:.0f} chunks/s\n\nThe edge upsert: {rows}.\n\n"
            + markdown_table(["statement", "ms"], [[f"`{s}`".replace("|", "\\|"), f"{ms:,.0f}"] for s, ms in top])
            + "\n"
        )
    print(body)
    write_section("batch_profile", "Where a batch's time goes", body)


if __name__ == "__main__":
    main()

"""Audiences at scale: search by a caller who sees 5% of the chunks against one who sees them all.

The project's generator (benchmarks/ingest.py:generate), one tenant, `provided` extractor, `hash`
embedder, each document for one of --audiences groups (`access`, round robin: every group holds
1/audiences of the chunks). Two login roles granted kgrag_reader and the tenant: one holding one
group (5% of the chunks with 20 groups), one holding every group. From a warm client (question
vectors computed beforehand), the same --questions questions on each route and phase, side by side,
with how many rows came back (k = 10: a caller seeing 5% must still get 10).

The full-text statistics are counted after each ingestion, as `pgkgrag build` does. Also the
ingestion of the same documents for everyone and for audiences (one run each, same corpus),
and the cost of the policy for one row: a scan of 20,000 rows for an audience against rows for
everyone.

    python benchmarks/audiences.py [--chunks 100000] [--audiences 20] [--questions 40]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from common import ROOT, markdown_table, median, percentile, scratch_database, write_section
from ingest import KINDS, generate
from psycopg import sql

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor

CHUNKS_PER_DOCUMENT = 2.9  # what generate() gives, to size the corpus
EMBEDDER = HashEmbedder(512)
TENANT = "aud"
QUERIES = {
    "kgrag_search, vector route": "SELECT count(*) FROM kgrag.kgrag_search(%(vec)s::vector, 'vector', %(q)s, 10)",
    "kgrag_search, auto route": "SELECT count(*) FROM kgrag.kgrag_search(%(vec)s::vector, 'auto', %(q)s, 10)",
    "vector list (search_chunks_vector)": "SELECT count(*) FROM kgrag.search_chunks_vector(%(vec)s::vector, 10)",
    "lexical list (search_chunks_lexical)": "SELECT count(*) FROM kgrag.search_chunks_lexical(%(q)s, 10)",
    # a hub entity named: its audience's twin (one caller) or its twins in every audience (the other)
    "kgrag_search, local route (an entity named)": "SELECT count(*) FROM kgrag.kgrag_search("
    "%(evec)s::vector, 'local', %(eq)s, 10)",
}
POLICY_ROWS = 20_000


def vector_text(text: str) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in EMBEDDER.embed([text])[0]) + "]"


def load(dsn: str, docs: list[dict[str, Any]], audiences: int) -> float:
    """Ingest the documents, each for one group (audiences > 0) or for everyone; the seconds."""
    if audiences:
        docs = [{**d, "access": [f"g{i % audiences:02d}"]} for i, d in enumerate(docs)]
    with connect(dsn) as conn, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "docs.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        start = time.perf_counter()
        summary = Ingestor(conn, TENANT, ProvidedExtractor(), EMBEDDER).run([path])
        seconds = time.perf_counter() - start
        assert summary.ok, summary
        with tenant_transaction(conn, TENANT):  # what pgkgrag build counts for lexical search
            conn.execute("SELECT kgrag.refresh_lexeme_stats()")
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("VACUUM ANALYZE")
    return seconds


def caller(dsn: str, name: str, groups: list[str]) -> None:
    """A login role granted kgrag_reader and the tenant, holding these groups (none: documents for everyone)."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        admin.execute(sql.SQL("GRANT kgrag_reader TO {}").format(sql.Identifier(name)))
        admin.execute("SELECT kgrag.grant_tenant(%s, %s)", [name, TENANT])
        if groups:
            admin.execute("SELECT kgrag.grant_groups(%s, %s, %s)", [name, TENANT, groups])


def as_caller(dsn: str, name: str) -> psycopg.Connection:
    """A connection whose session is the caller's (its groups are session_user's), acting as kgrag_reader."""
    conn = connect(dsn)
    conn.execute(sql.SQL("SET SESSION AUTHORIZATION {}").format(sql.Identifier(name)))
    conn.execute("SET ROLE kgrag_reader")
    conn.commit()
    return conn


def timed(conn: psycopg.Connection, query: str, params: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    (rows,) = conn.execute(query, params).fetchone()  # type: ignore[misc]
    return (time.perf_counter() - start) * 1000, int(rows)


def questions(n: int, docs: int) -> list[dict[str, str]]:
    """Each: a question naming no entity (q, vec) and one naming one of the 40 commonest (eq, evec:
    generate() names entity i "<Kind> <i:05d>", the first the most cited)."""
    rng = random.Random(7)
    asked = [f"weekly operations review of cycle {rng.randrange(docs)}" for _ in range(n)]
    hubs = [rng.randrange(40) for _ in range(n)]
    named = [f"What does the {KINDS[i % 4][1].title()} {i:05d} depend on?" for i in hubs]
    return [{"q": q, "vec": vector_text(q), "eq": e, "evec": vector_text(e)} for q, e in zip(asked, named, strict=True)]


def open_tenant(dsn: str, name: str, n: int, docs: int) -> dict[str, str]:
    """p50 / p95 of each search by a reader of the same corpus stored for everyone (no audiences)."""
    params = questions(n, docs)
    conn = as_caller(dsn, name)
    try:
        with tenant_transaction(conn, TENANT):
            for p in params:  # warm the caches and plans
                for query in QUERIES.values():
                    conn.execute(query, p).fetchall()
            out = {}
            for what, query in QUERIES.items():
                ms = [timed(conn, query, p)[0] for p in params]
                out[what] = f"{median(ms):.1f} / {percentile(ms, 95):.1f}"
    finally:
        conn.close()
    return out


def measure(dsn: str, names: dict[str, str], n: int, docs: int) -> list[list[object]]:
    params = questions(n, docs)
    rows: list[list[object]] = []
    conns = {label: as_caller(dsn, name) for label, name in names.items()}
    try:
        for conn in conns.values():  # warm the caches and plans
            with tenant_transaction(conn, TENANT):
                for p in params:
                    for query in QUERIES.values():
                        conn.execute(query, p).fetchall()
        for what, query in QUERIES.items():
            measured: dict[str, tuple[list[float], list[int]]] = {label: ([], []) for label in conns}
            with tenant_transaction(conns["all"], TENANT), tenant_transaction(conns["one"], TENANT):
                for p in params:
                    for label, conn in conns.items():  # side by side, one question at a time
                        ms, got = timed(conn, query, p)
                        measured[label][0].append(ms)
                        measured[label][1].append(got)
            every, one = measured["all"], measured["one"]
            rows.append(
                [
                    what,
                    f"{median(every[0]):.1f} / {percentile(every[0], 95):.1f}",
                    f"{median(one[0]):.1f} / {percentile(one[0], 95):.1f}",
                    f"x{median(one[0]) / median(every[0]):.2f} / "
                    f"x{percentile(one[0], 95) / percentile(every[0], 95):.2f}",
                    f"{sum(every[1]) / n:.1f} / {sum(one[1]) / n:.1f}",
                ]
            )
            print(rows[-1], flush=True)
    finally:
        for conn in conns.values():
            conn.close()
    return rows


def policy_cost(dsn: str, name: str) -> tuple[float, float]:
    """ms to filter POLICY_ROWS rows for an audience, and as many rows for everyone, as the caller."""
    conn = as_caller(dsn, name)
    try:
        conn.execute("SELECT kgrag.use_tenant(%s)", [TENANT])
        conn.execute(
            "CREATE TEMP TABLE restricted AS SELECT %s::text AS tenant_id,"
            " ARRAY['g' || lpad((i %% 20)::text, 2, '0')] AS access FROM generate_series(1, %s) i",
            [TENANT, POLICY_ROWS],
        )
        conn.execute(
            "CREATE TEMP TABLE open AS SELECT %s::text AS tenant_id, NULL::text[] AS access"
            " FROM generate_series(1, %s)",
            [TENANT, POLICY_ROWS],
        )
        # the policy's expression (kgrag.document's and kgrag.chunk's), on rows of a scratch table
        check = "SELECT count(*) FROM pg_temp.{} WHERE access IS NULL OR kgrag_private.may_see(tenant_id, access)"
        times = {}
        for table in ("restricted", "open"):
            runs = []
            for _ in range(5):
                start = time.perf_counter()
                conn.execute(check.format(table)).fetchone()
                runs.append((time.perf_counter() - start) * 1000)
            times[table] = median(runs)
        conn.rollback()
    finally:
        conn.close()
    return times["restricted"], times["open"]


def upgrade_cost(dsn: str) -> tuple[float, int]:
    """Seconds revision 0043 takes on this database (its down file, then its up file timed: the
    stored column rewrites kgrag.chunk), and the size in bytes of the index it makes."""
    files = ROOT / "sql" / "incremental"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute((files / "0043_audience_indexes.down.sql").read_text())
        start = time.perf_counter()
        admin.execute((files / "0043_audience_indexes.sql").read_text())
        seconds = time.perf_counter() - start
        (size,) = admin.execute("SELECT pg_relation_size('kgrag.chunk_audience_idx')").fetchone()  # type: ignore[misc]
    return seconds, int(size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--audiences", type=int, default=20)
    parser.add_argument("--questions", type=int, default=40)
    args = parser.parse_args()
    n_docs = max(1, int(args.chunks / CHUNKS_PER_DOCUMENT))
    docs = generate(n_docs, max(4000, n_docs // 10), seed=1)
    with scratch_database("kgrag_bench_audiences_open") as dsn:
        open_s = load(dsn, docs, 0)
        caller(dsn, "kgrag_bench_sees_open", [])
        no_audiences = open_tenant(dsn, "kgrag_bench_sees_open", args.questions, n_docs)
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("DROP OWNED BY kgrag_bench_sees_open")
            admin.execute("DROP ROLE kgrag_bench_sees_open")
    with scratch_database("kgrag_bench_audiences") as dsn:
        restricted_s = load(dsn, docs, args.audiences)
        with connect(dsn) as conn, tenant_transaction(conn, TENANT):
            (chunks,) = conn.execute("SELECT count(*) FROM kgrag.chunk").fetchone()  # type: ignore[misc]
        names = {"all": "kgrag_bench_sees_all", "one": "kgrag_bench_sees_one"}
        caller(dsn, names["all"], [f"g{i:02d}" for i in range(args.audiences)])
        caller(dsn, names["one"], ["g00"])
        rows = [[*row, no_audiences[str(row[0])]] for row in measure(dsn, names, args.questions, n_docs)]
        restricted_ms, open_ms = policy_cost(dsn, names["one"])
        upgrade_s, index_bytes = upgrade_cost(dsn)
        with psycopg.connect(dsn, autocommit=True) as admin:
            for name in names.values():
                admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
                admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))
    share = 100 / args.audiences
    body = (
        f"{chunks:,} chunks, {n_docs:,} documents of one tenant, each for one of {args.audiences} groups "
        f"(round robin); `provided` extractor, `hash` embedder. Two login roles granted kgrag_reader: one "
        f"holding every group, one holding one ({share:.0f}% of the chunks). {args.questions} questions "
        '("weekly operations review of cycle N", and for the local route "What does the Service 00012 depend '
        'on?", a name among the 40 most cited), the same for both, from a warm client, one run, side by '
        "side; ms p50 / p95, k = 10. Last column: the same corpus stored for everyone (another database, "
        "measured before), searched by a reader holding no group.\n\n"
        + markdown_table(
            [
                "search",
                "sees all: p50 / p95",
                f"sees {share:.0f}%: p50 / p95",
                "ratio p50 / p95",
                "rows (all / one)",
                "no audiences: p50 / p95",
            ],
            rows,
        )
        + f"\n\nIngestion of the same documents: for everyone {open_s:.0f} s, each for a group {restricted_s:.0f} s "
        f"(x{restricted_s / open_s:.2f}; a document for a group gives its audience's graph, revision 0044). "
        f"The policy for one row: {POLICY_ROWS:,} rows for an audience filtered in {restricted_ms:.0f} ms "
        f"({1000 * restricted_ms / POLICY_ROWS:.1f} µs a row), {POLICY_ROWS:,} rows for everyone in {open_ms:.1f} ms. "
        f"Revision 0043 on this database (its down file, then its up file, timed): {upgrade_s:.1f} s (the stored "
        f"column rewrites kgrag.chunk); its index chunk_audience_idx: {index_bytes / 2**20:.1f} MB."
    )
    print(body)
    write_section("audiences", "Audiences: a caller who sees 5% of the chunks", body)


if __name__ == "__main__":
    main()

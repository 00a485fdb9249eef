"""What checking each co-occurrence costs a walk: the local route with and without the check.

A walk checks a co-occurrence chunk by chunk (kgrag_private.pair_walkable: the chunks naming both,
the relations they state) only in a tenant where some stated relation may not be walked (dated,
denied, rejected, or a confidence floor asked for). Here the multi-hop sets' graphs (titles as the
gazetteer, `use`), whose every edge is a co-occurrence, are searched by the local route with the
default (no check: nothing to hold back) and with min_confidence = 0.01 (every co-occurrence the
walk considers is checked), question by question, alternating, so both see the same machine.
Recall@5 is printed for both: the check must not change what an undated graph returns. Then the
worst case: a hub cited in 5,000 chunks, each stating a relation of it that is not walked (no
edge), beside 3,000 entities it co-occurs with, so that every co-occurrence the capped walk reads
is held back: kgrag.k_hop(hub, 1, degree_cap 4) unchecked and checked, and with a 200 ms budget.

    python benchmarks/walk_guard.py [--sets hotpotqa musique]
"""

from __future__ import annotations

import argparse
import time

import psycopg
from common import markdown_table, scratch_database, write_section
from multihop import gazetteer, hotpotqa, ingested, musique, ranked_documents, recall

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor
from pgkgrag.retrieval.search import run_search

CHECKED = {"graph_ranking": "paths", "min_confidence": 0.01}
UNCHECKED = {"graph_ranking": "paths"}


HUB = [
    "INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) SELECT 'hub', 'd' || i, md5(i::text)"
    " FROM generate_series(1, 5000) AS i",
    "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text, content_hash)"
    " SELECT 'hub', 'd' || i || '#0', 'd' || i, 0, 0, 1, 'x', md5(i::text) FROM generate_series(1, 5000) AS i",
    "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) VALUES ('hub', 'org:a', 'A', 'Org'),"
    " ('hub', 'org:b', 'B', 'Org')",
    "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type)"
    " SELECT 'hub', 'p:' || i, 'P' || i, 'Person' FROM generate_series(1, 3000) AS i",
    "INSERT INTO kgrag.mention SELECT 'hub', e, 'd' || i || '#0' FROM generate_series(1, 5000) AS i,"
    " unnest(ARRAY['org:a', 'org:b']) AS e",
    "INSERT INTO kgrag.mention SELECT 'hub', 'p:' || i, 'd' || i || '#0' FROM generate_series(1, 3000) AS i",
    "INSERT INTO kgrag.relation_evidence (tenant_id, src, dst, rel, chunk_id, extractor)"
    " SELECT 'hub', 'org:a', 'org:b', 'OWNS', 'd' || i || '#0', 'bench' FROM generate_series(1, 5000) AS i",
    "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight) SELECT 'hub', x, y, 'CO_OCCURS', 5000"
    " FROM (VALUES ('org:a', 'org:b'), ('org:b', 'org:a')) AS v(x, y)",
    "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight) SELECT 'hub', x, y, 'CO_OCCURS', 1"
    " FROM generate_series(1, 3000) AS i, LATERAL (VALUES ('org:a', 'p:' || i), ('p:' || i, 'org:a')) AS v(x, y)",
    "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('hub', 'khop_timeout_ms', '600000')",
]


def hub_rows() -> list[list[object]]:
    """The worst case: every co-occurrence of the hub the capped walk reads is held back."""
    rows: list[list[object]] = []
    walk = "SELECT count(*) FROM kgrag.k_hop(ARRAY['org:a'], 1, degree_cap => 4, min_confidence => %s)"
    with scratch_database("kgrag_bench_walk_guard") as dsn, connect(dsn) as conn:
        with tenant_transaction(conn, "hub"):
            for statement in HUB:
                conn.execute(statement)  # type: ignore[arg-type]
        conn.execute("ANALYZE kgrag.mention, kgrag.relation_evidence, kgrag.edge")
        conn.commit()
        for label, floor in (("unchecked", 0.0), ("checked", 0.01)):
            with tenant_transaction(conn, "hub"):
                t0 = time.perf_counter()
                reached = conn.execute(walk, [floor]).fetchone()
                rows.append(["hub", label, f"{(time.perf_counter() - t0) * 1000:.0f}", reached[0] if reached else 0])
        with tenant_transaction(conn, "hub"):
            conn.execute("UPDATE kgrag.settings SET value = '200' WHERE tenant_id = 'hub' AND key = 'khop_timeout_ms'")
            t0 = time.perf_counter()
            try:
                conn.execute(walk, [0.01]).fetchone()
                said = "finished"
            except psycopg.errors.QueryCanceled as exc:  # the walk's budget: a search falls back to vector
                said = str(exc).split("\n")[0]
            rows.append(["hub", "checked, 200 ms budget", f"{(time.perf_counter() - t0) * 1000:.0f}", said])
    return rows


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
    hub = hub_rows()
    print(hub, flush=True)
    body = (
        "The local route (k = 5, graph ranked by k-hop paths) on the multi-hop sets' graphs (titles, `use`), each "
        "question asked twice in turn: unchecked (the default here: no stated relation to hold a co-occurrence "
        "back) and checked (min_confidence = 0.01: every co-occurrence the walk considers goes through "
        "kgrag_private.pair_walkable, as in a tenant with dated, denied or rejected relations).\n\n"
        + markdown_table(["set", "walk", "searches", "p50 ms", "p95 ms", "R@5", "p50 checked / unchecked"], rows)
        + "\n\nThe worst case (a hub in 5,000 chunks, each stating a relation of it that is not walked, beside "
        "3,000 co-occurring entities: every co-occurrence the capped walk reads is held back), "
        "`kgrag.k_hop(hub, 1, degree_cap => 4)`:\n\n"
        + markdown_table(["graph", "walk", "ms", "entities reached, or how it ended"], hub)
        + "\n"
    )
    print(body)
    write_section("walk_guard", "What checking each co-occurrence costs a walk", body)


if __name__ == "__main__":
    main()

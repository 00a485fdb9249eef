"""Graph products after ingestion: communities (hierarchical Leiden), reports, answers, embeddings.

Leiden runs here, on the tenant's co-occurrence graph, with graspologic-native (the Rust Leiden
of Microsoft GraphRAG), seeded: the same graph always gives the same communities. Everything else
is SQL (kgrag.replace_communities, refresh_reports, refresh_answers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import graspologic_native as gn
import psycopg

from pgkgrag.db import tenant_transaction
from pgkgrag.embedders import Embedder
from pgkgrag.ingest import embed_missing
from pgkgrag.llm_client import OpenAICompatibleClient
from pgkgrag.llm_reports import rewrite_reports


@dataclass(frozen=True)
class GraphTotals:
    entities: int
    edges: int
    communities: int
    reports: int


def graph_totals(conn: psycopg.Connection, tenant: str) -> GraphTotals:
    """How big the tenant's graph is now: what the CLI's summary and the demo print."""
    with tenant_transaction(conn, tenant):
        row = conn.execute(
            "SELECT (SELECT count(*) FROM kgrag.entity), (SELECT count(*) FROM kgrag.edge),"
            " (SELECT count(*) FROM kgrag.community), (SELECT count(*) FROM kgrag.community_report)"
        ).fetchone()
    assert row is not None
    return GraphTotals(*row)


@dataclass
class BuildReport:
    communities: dict[str, Any] = field(default_factory=dict)
    reports: dict[str, Any] = field(default_factory=dict)
    answers: int = 0
    embedded: dict[str, int] = field(default_factory=dict)


def detect_communities(conn: psycopg.Connection) -> dict[str, Any]:
    """Run hierarchical Leiden over the tenant's graph and store the result (in the caller's transaction)."""
    seed, resolution, max_size = conn.execute(
        "SELECT kgrag.setting('community_seed')::int, kgrag.setting('community_resolution')::float8,"
        " kgrag.setting('community_max_size')::int"
    ).fetchone() or (42, 1.0, 25)
    edges = conn.execute(
        "SELECT src, dst, weight FROM kgrag.edge WHERE tenant_id = kgrag.current_tenant()"
        " AND rel = 'CO_OCCURS' AND src < dst ORDER BY src, dst"
    ).fetchall()
    clusters = (
        gn.hierarchical_leiden(
            [(s, d, float(w)) for s, d, w in edges],
            resolution=resolution,
            randomness=0.001,
            use_modularity=True,
            max_cluster_size=max_size,
            seed=seed,
        )
        if edges
        else []
    )
    conn.execute("SELECT kgrag.stage_begin()")
    with (
        conn.cursor() as cur,
        cur.copy("COPY pg_temp.kgrag_stage_cluster (entity_id, level, cluster, parent_cluster) FROM STDIN") as copy,
    ):
        for c in clusters:
            copy.write_row((c.node, c.level, c.cluster, c.parent_cluster))
    row = conn.execute("SELECT kgrag.replace_communities()").fetchone()
    assert row is not None
    result: dict[str, Any] = row[0]
    return result


def build(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    *,
    force: bool = False,
    report_writer: OpenAICompatibleClient | None = None,
) -> BuildReport:
    """Bring communities, reports, answers and embeddings up to date; only what is stale is redone.
    With a report_writer (an LLM client), template reports are rewritten as cited summaries."""
    report = BuildReport()
    with tenant_transaction(conn, tenant):
        outdated = conn.execute("SELECT kgrag.communities_outdated()").fetchone()
        if force or (outdated and outdated[0]):
            report.communities = detect_communities(conn)
        # answers first: the reports quote them
        answers = conn.execute("SELECT kgrag.refresh_answers()").fetchone()
        report.answers = answers[0] if answers else 0
        reports = conn.execute("SELECT kgrag.refresh_reports()").fetchone()
        report.reports = reports[0] if reports else {}
        if report_writer is not None:
            rewrite = rewrite_reports(conn, report_writer)
            report.reports["summarized by the LLM"] = rewrite.written
            report.reports.update({f"summary rejected: {k}": v for k, v in rewrite.rejected.items()})
        report.embedded = {kind: embed_missing(conn, embedder, kind) for kind in ("entity", "report")}
    return report

"""Graph products after ingestion: communities (hierarchical Leiden), reports, answers, embeddings.

Leiden runs here, on each of the tenant's co-occurrence graphs (kgrag_private.community_graph: the
shared one and each audience's, apart), with graspologic-native (the Rust Leiden of Microsoft
GraphRAG), seeded: the same graph always gives the same communities. Everything else is SQL
(kgrag_private.replace_communities, refresh_reports, refresh_answers, refresh_lexeme_stats,
refresh_alias_trigram_stats).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psycopg
from pydantic import BaseModel, ConfigDict

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import ProgressCallback, embed_pending
from pgkgrag.extras import missing
from pgkgrag.ingest import staging
from pgkgrag.queries import Q

if TYPE_CHECKING:
    from pgkgrag.llm.client import OpenAICompatibleClient


class CommunityCounts(BaseModel):
    """What kgrag_private.replace_communities() returns."""

    model_config = ConfigDict(extra="forbid")
    communities: int
    new: int
    removed: int


class ReportCounts(BaseModel):
    """What kgrag_private.refresh_reports() returns."""

    model_config = ConfigDict(extra="forbid")
    reports: int
    written: int


@dataclass
class BuildSummary:
    communities: CommunityCounts | None = None  # None: the communities were up to date
    reports: ReportCounts = field(default_factory=lambda: ReportCounts(reports=0, written=0))
    answers: int = 0
    summarized: int = 0  # reports rewritten by the LLM
    summaries_rejected: Counter[str] = field(default_factory=Counter)
    entity_embeddings: int = 0
    report_embeddings: int = 0
    common_lexemes: int = 0  # the words lexical search draws no candidates from (kgrag.lexeme_stats)
    common_trigrams: int = 0  # the name trigrams entity linking probes around (kgrag.alias_trigram_stats)
    renamed: int = 0  # entities given the name a curator decided (kgrag.rename_entity)
    relations_decided: int = 0  # relations whose edge a curator's decision removed or restored
    namesakes_moved: int = 0  # documents whose namesake a merge or split moved to another entity


def detect_communities(conn: psycopg.Connection) -> CommunityCounts:
    """Run hierarchical Leiden over each of the tenant's graphs the caller sees (the shared one, and
    each audience's: kgrag_private.community_graph) alone, and store the result (in the caller's
    transaction): the same graph gives the same communities, whatever the others hold."""
    try:
        import graspologic_native as gn
    except ImportError as exc:
        raise missing("graph") from exc
    row = conn.execute(Q["community_settings"]).fetchone()
    assert row is not None
    seed, resolution, max_size = row
    graphs: dict[str, list[tuple[str, str, float]]] = {}
    for graph, src, dst, weight in conn.execute(Q["community_graph"]).fetchall():
        graphs.setdefault(graph, []).append((src, dst, float(weight)))
    rows: list[tuple[str, int, int, int | None]] = []
    for graph in sorted(graphs):
        clusters = gn.hierarchical_leiden(
            graphs[graph],
            resolution=resolution,
            randomness=0.001,
            use_modularity=True,
            max_cluster_size=max_size,
            seed=seed,
        )
        # each graph's cluster numbers after the previous graphs' (a cluster is (level, number))
        offset = 1 + max((r[2] for r in rows), default=-1)
        rows += [
            (c.node, c.level, c.cluster + offset, None if c.parent_cluster is None else c.parent_cluster + offset)
            for c in clusters
        ]
    staging.begin(conn)
    staging.copy_rows(conn, staging.CLUSTERS, rows)
    counts = conn.execute(Q["replace_communities"]).fetchone()
    assert counts is not None
    return CommunityCounts.model_validate(counts[0])


def build(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    *,
    force: bool = False,
    report_writer: OpenAICompatibleClient | None = None,
    progress: ProgressCallback | None = None,
) -> BuildSummary:
    """Bring communities, reports, answers and embeddings up to date; only what is stale is redone.
    With a report_writer (an LLM client), template reports are rewritten as cited summaries;
    progress hears of each page of entity and report vectors ("entity embeddings", n)."""
    summary = BuildSummary()
    # the curators' decisions first, in a transaction of their own (the locks they take are an
    # ingestion's, held for this step only): the communities see the edges decided
    with tenant_transaction(conn, tenant):
        decided = conn.execute(Q["apply_decisions"]).fetchone()
        assert decided is not None
        summary.renamed, summary.relations_decided = decided[0]["renamed"], decided[0]["relations"]
        summary.namesakes_moved = decided[0]["namesakes_moved"]
    with tenant_transaction(conn, tenant):
        outdated = conn.execute(Q["communities_outdated"]).fetchone()
        if force or (outdated and outdated[0]):
            summary.communities = detect_communities(conn)
        # answers first: the reports quote them
        answers = conn.execute(Q["refresh_answers"]).fetchone()
        summary.answers = answers[0] if answers else 0
        reports = conn.execute(Q["refresh_reports"]).fetchone()
        assert reports is not None
        summary.reports = ReportCounts.model_validate(reports[0])
        lexemes = conn.execute(Q["refresh_lexeme_stats"]).fetchone()
        summary.common_lexemes = lexemes[0] if lexemes else 0
        trigrams = conn.execute(Q["refresh_alias_trigram_stats"]).fetchone()
        summary.common_trigrams = trigrams[0] if trigrams else 0
        if report_writer is not None:
            from pgkgrag.llm.reports import rewrite_reports

            rewrite = rewrite_reports(conn, report_writer)
            summary.summarized, summary.summaries_rejected = rewrite.written, rewrite.rejected
    # after the build's transaction, a page per transaction: no lock held while the model runs
    summary.entity_embeddings = embed_pending(conn, tenant, embedder, "entity", progress=progress)
    summary.report_embeddings = embed_pending(conn, tenant, embedder, "report", progress=progress)
    return summary

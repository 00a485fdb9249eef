"""Graph products after ingestion: communities (hierarchical Leiden, pgkgrag.graph.communities),
reports, answers, embeddings. Everything but Leiden is SQL (kgrag_private.replace_communities,
refresh_reports, refresh_answers, refresh_lexeme_stats, refresh_common_words, refresh_alias_trigram_stats,
refresh_chunk_spread).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psycopg
from pydantic import BaseModel, ConfigDict

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import ProgressCallback, embed_pending
from pgkgrag.graph.communities import CommunityCounts, detect_communities
from pgkgrag.queries import Q

REKEY_PAGE = 1000  # documents applied again a transaction when identifiers are compared anew

if TYPE_CHECKING:
    from pgkgrag.llm.client import OpenAICompatibleClient


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
    common_words: int = 0  # one-word names the documents also write in lowercase (kgrag.entity.common_word)
    common_trigrams: int = 0  # the name trigrams entity linking probes around (kgrag.alias_trigram_stats)
    chunk_spread: float | None = None  # the median similarity of two passages (kgrag.refresh_chunk_spread)
    renamed: int = 0  # entities given the name a curator decided (kgrag.rename_entity)
    relations_decided: int = 0  # relations whose edge a curator's decision removed or restored
    seconds: dict[str, float] = field(default_factory=dict)  # where the time went, step by step
    namesakes_moved: int = 0  # documents whose namesake a merge or split moved to another entity
    rekeyed: int = 0  # documents applied again: their identifiers are compared another way now
    unkept: list[str] = field(default_factory=list)  # of those, stored without an extraction to apply


def build(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    *,
    force: bool = False,
    fresh: bool = False,
    report_writer: OpenAICompatibleClient | None = None,
    progress: ProgressCallback | None = None,
) -> BuildSummary:
    """Bring communities, reports, answers and embeddings up to date; only what is stale is redone
    (force: detect the communities even if none is; fresh: from scratch, pgkgrag.graph.communities).
    With a report_writer (an LLM client), template reports are rewritten as cited summaries;
    progress hears of each page of entity and report vectors ("entity embeddings", n)."""
    summary = BuildSummary()
    started = time.perf_counter()

    def step(name: str) -> None:
        nonlocal started
        summary.seconds[name] = summary.seconds.get(name, 0.0) + time.perf_counter() - started
        started = time.perf_counter()

    # identifiers keyed by an older rule (or before the setting identifier_kinds changed) first,
    # a page of documents a transaction, as an ingestion of them would be
    while True:
        with tenant_transaction(conn, tenant):
            row = conn.execute(Q["rekey_identifiers"], {"most": REKEY_PAGE}).fetchone()
        assert row is not None
        summary.rekeyed += row[0]["documents"]
        summary.unkept = row[0]["unkept"]
        if progress is not None and row[0]["documents"]:
            progress("documents applied again", row[0]["documents"])
        if not row[0]["documents"] or not row[0]["left"]:
            break
    # the curators' decisions next, in a transaction of their own (the locks they take are an
    # ingestion's, held for this step only): the communities see the edges decided
    with tenant_transaction(conn, tenant):
        decided = conn.execute(Q["apply_decisions"]).fetchone()
        assert decided is not None
        summary.renamed, summary.relations_decided = decided[0]["renamed"], decided[0]["relations"]
        summary.namesakes_moved = decided[0]["namesakes_moved"]
    with tenant_transaction(conn, tenant):
        outdated = conn.execute(Q["communities_outdated"]).fetchone()
        if force or fresh or (outdated and outdated[0]):
            summary.communities = detect_communities(conn, fresh=fresh)
        step("decisions and communities")
        # answers first: the reports quote them
        answers = conn.execute(Q["refresh_answers"]).fetchone()
        summary.answers = answers[0] if answers else 0
        reports = conn.execute(Q["refresh_reports"]).fetchone()
        assert reports is not None
        summary.reports = ReportCounts.model_validate(reports[0])
        lexemes = conn.execute(Q["refresh_lexeme_stats"]).fetchone()
        summary.common_lexemes = lexemes[0] if lexemes else 0
        words = conn.execute(Q["refresh_common_words"]).fetchone()
        summary.common_words = words[0] if words else 0
        trigrams = conn.execute(Q["refresh_alias_trigram_stats"]).fetchone()
        summary.common_trigrams = trigrams[0] if trigrams else 0
        spread = conn.execute(Q["refresh_chunk_spread"]).fetchone()
        summary.chunk_spread = spread[0] if spread else None
        if report_writer is not None:
            from pgkgrag.llm.reports import rewrite_reports

            rewrite = rewrite_reports(conn, report_writer)
            summary.summarized, summary.summaries_rejected = rewrite.written, rewrite.rejected
    step("reports, answers and statistics")
    # after the build's transaction, a page per transaction: no lock held while the model runs
    summary.entity_embeddings = embed_pending(conn, tenant, embedder, "entity", progress=progress)
    step("embed entities")
    summary.report_embeddings = embed_pending(conn, tenant, embedder, "report", progress=progress)
    step("embed reports")
    return summary

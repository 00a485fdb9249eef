"""How results look in a terminal: the tables and lines the CLI and the demo print.

Nothing is computed here; every figure comes from an IngestSummary, a BuildSummary, a
SearchResult, an Answer or the evaluation, and every chunk text from kgrag.cited_chunks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from pgkgrag.graph.build import BuildSummary
from pgkgrag.graph.totals import GraphTotals, Stale
from pgkgrag.ingest.ingestor import BATCH_STEPS
from pgkgrag.ingest.queue_worker import WorkerCounts
from pgkgrag.ingest.summary import AppliedCounts, IngestSummary, split_where
from pgkgrag.retrieval.evaluation import RouteFigures
from pgkgrag.retrieval.results import SearchResult, SearchRow

if TYPE_CHECKING:
    from pgkgrag.graph.entities import EntityCard
    from pgkgrag.llm.answers import Answer

MAX_LISTED = 20  # rejected inputs and failed documents listed one by one, at most


def ingest_table(
    summary: IngestSummary, built: BuildSummary | None, jobs: int, elapsed: float, totals: GraphTotals
) -> Table:
    table = Table(title="ingestion", show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    rows = [
        ("documents read", summary.read),
        ("unchanged (skipped)", summary.unchanged),
        ("written", summary.written),
        ("failed", len(summary.failed)),
        ("rejected input", len(summary.rejected_inputs)),
        ("of which files", sum(split_where(where)[1] is None for where, _ in summary.rejected_inputs)),
        ("of which JSONL lines", sum(split_where(where)[1] is not None for where, _ in summary.rejected_inputs)),
        ("relations dropped", len(summary.dropped_relations)),
        ("chunks", summary.counts.chunks),
        ("mentions", summary.counts.mentions),
        ("relations", summary.counts.relations),
        ("entities touched", summary.counts.affected_entities),
        ("entities removed", summary.counts.removed_entities),
        ("entities in the tenant", totals.entities),
        ("edges in the tenant", totals.edges),
        ("retried transactions", summary.retries),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    for reason, n in sorted(summary.rejected_extractions.items()):
        table.add_row(f"rejected: {reason}", str(n))
    if built is not None:
        table.add_row("communities", str(built.communities.communities if built.communities else "unchanged"))
        table.add_row("reports written", str(built.reports.written))
        table.add_row("answers written", str(built.answers))
        for step, seconds in built.seconds.items():
            table.add_row(f"time: build: {step}", f"{seconds:.2f} s")
    summed = f" (summed over {jobs} writers)" if jobs > 1 else ""
    for step, seconds in summary.seconds.items():
        table.add_row(f"time: {step}{summed if step in BATCH_STEPS else ''}", f"{seconds:.2f} s")
    table.add_row("time: elapsed", f"{elapsed:.2f} s")
    return table


def ingest_problems(summary: IngestSummary) -> Iterator[str]:
    """One line per rejected input and failed document (rich markup), the first MAX_LISTED of each."""
    for where, why in summary.rejected_inputs[:MAX_LISTED]:
        yield f"[red]rejected[/] {where}: {why}"
    if len(summary.rejected_inputs) > MAX_LISTED:
        yield f"... and {len(summary.rejected_inputs) - MAX_LISTED} more rejected inputs"
    for doc_id, why in summary.failed[:MAX_LISTED]:
        yield f"[red]failed[/] {doc_id}: {why}"
    for where, why in summary.dropped_relations[:MAX_LISTED]:
        yield f"[yellow]dropped[/] {where}: {why}"
    if len(summary.dropped_relations) > MAX_LISTED:
        yield f"... and {len(summary.dropped_relations) - MAX_LISTED} more dropped relations"


def build_line(built: BuildSummary) -> str:
    communities = built.communities.communities if built.communities else "unchanged"
    line = (
        f"communities: {communities}; reports written: {built.reports.written} of {built.reports.reports}; "
        f"answers written: {built.answers}; common words counted: {built.common_lexemes}; "
        f"names that are common words: {built.common_words}; "
        f"common name trigrams counted: {built.common_trigrams}; "
        f"median passage similarity: {'none' if built.chunk_spread is None else f'{built.chunk_spread:.3f}'}; "
        f"embedded: {built.entity_embeddings} entities, {built.report_embeddings} reports"
    )
    if built.summarized or built.summaries_rejected:
        rejected = ", ".join(f"{why}: {n}" for why, n in sorted(built.summaries_rejected.items()))
        line += f"; summarized by the LLM: {built.summarized}" + (f" (rejected: {rejected})" if rejected else "")
    if built.renamed or built.relations_decided or built.namesakes_moved:
        line += (
            f"; curators' decisions applied: {built.renamed} names, {built.relations_decided} relations, "
            f"{built.namesakes_moved} namesakes moved"
        )
    if built.rekeyed:
        line += f"; documents applied again (their identifiers compared anew): {built.rekeyed}"
    if built.unkept:
        line += (
            "; identifiers in an older form in documents stored before revision 0042 (ingest them again): "
            + ", ".join(built.unkept)
        )
    return line + "; time: " + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in built.seconds.items())


def queue_line(states: dict[str, int]) -> str:
    line = "ingestion queue: " + ", ".join(f"{state} {n}" for state, n in sorted(states.items()))
    if states.get("waiting"):
        line += " (waiting: an endpoint failed them; a worker tries again after the wait)"
    if states.get("failed"):
        line += " (failed: SELECT ticket, reason FROM kgrag.ingest_queue WHERE state = 'failed'; kgrag.retry_documents)"
    return line


def worker_line(counts: WorkerCounts) -> str:
    settled = ", ".join(f"{state} {n}" for state, n in sorted(counts.settled.items())) or "nothing"
    line = f"tickets settled: {settled}; pages claimed: {counts.pages}"
    if counts.endpoint_failures:
        line += f"; pages that waited for a failing endpoint: {counts.endpoint_failures}"
    for built in counts.builds:
        line += "; built: " + build_line(built)
    return line


def delete_line(asked: int, deleted: AppliedCounts) -> str:
    return (
        f"deleted {deleted.documents} of {asked} documents; {deleted.removed_entities} entities no longer cited "
        "were removed. Run `pgkgrag build` to refresh communities and reports."
    )


def graph_line(totals: GraphTotals) -> str:
    return (
        f"graph: {totals.entities} entities, {totals.edges} edges, {totals.communities} communities, "
        f"{totals.reports} reports"
    )


def tenants_table(listed: dict[str, GraphTotals]) -> Table:
    table = Table(title="tenants")
    table.add_column("tenant")
    for column in ("documents", "chunks", "entities", "edges", "communities", "reports"):
        table.add_column(column, justify="right")
    for name, t in listed.items():
        table.add_row(name, *(str(n) for n in (t.documents, t.chunks, t.entities, t.edges, t.communities, t.reports)))
    return table


def status_table(tenant: str, totals: GraphTotals, stale: list[Stale]) -> Table:
    """A tenant's counts and what of it is stale, with the command that fixes each."""
    table = Table(title=f"tenant {tenant}", show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column()
    for label, n in (
        ("documents", totals.documents),
        ("chunks", totals.chunks),
        ("entities", totals.entities),
        ("edges", totals.edges),
        ("communities", totals.communities),
        ("reports", totals.reports),
    ):
        table.add_row(label, str(n), "")
    for row in stale:
        table.add_row(
            escape(row.what), str(row.how_many), escape(f"{row.fix} --tenant {tenant}") if row.how_many else ""
        )
    return table


def _place(payload: dict[str, Any]) -> str:
    """Where a chunk row stands in its source, from its payload: "p.3 § On call > Escalation: "."""
    page = f"p.{payload['page']}" if payload.get("page") else ""
    section = " > ".join(payload.get("headings") or [])
    place = " ".join(part for part in (page, f"§ {section}" if section else "") if part)
    return f"{place}: " if place else ""


def _what(row: SearchRow, texts: dict[str, str]) -> str:
    """The row in words: a chunk's text, an entity's answer and the path that reached it, a report's title."""
    if row.kind == "chunk":
        via = f"(via {row.payload['via']}) " if "via" in row.payload else ""
        return via + _place(row.payload) + " ".join(texts.get(row.ref_id, "").split())[:120]
    if row.kind == "entity":
        path = " -> ".join(f"{r['src']} -[{r['rel']}]-> {r['dst']}" for r in row.payload.get("relations", []))
        answer = f"{row.payload.get('name')} (hop {row.payload.get('hop')}): {row.payload.get('answer') or ''}"
        return answer[:120] + (f"\nvia {path}" if path else "")
    return str(row.payload.get("title", ""))


def results_table(result: SearchResult, texts: dict[str, str], limit: int | None = None) -> Table:
    """The rows of a search, with what each says and the chunks it cites (texts: chunk id -> text)."""
    table = Table(show_lines=False)
    for column in ("#", "kind", "source", "ref", "what", "evidence"):
        table.add_column(column, overflow="fold")
    for row in result.rows[:limit]:
        refs = row.payload.get("evidence_refs", [])
        evidence = ", ".join(refs[:3]) + (" ..." if len(refs) > 3 else "")
        table.add_row(str(row.rank), row.kind, row.source, row.ref_id, _what(row, texts), evidence)
    return table


def results_json(result: SearchResult) -> str:
    rows = [
        {
            "rank": r.rank,
            "ref_id": r.ref_id,
            "kind": r.kind,
            "source": r.source,
            "score": r.score,
            "route": result.route,
            "reason": result.reason,
            "payload": r.payload,
        }
        for r in result.rows
    ]
    return json.dumps(rows, ensure_ascii=False)


def evaluation_table(figures: dict[str, RouteFigures], title: str) -> Table:
    table = Table(title=title)
    table.add_column("route")
    for column in next(iter(figures.values())).row():
        table.add_column(column, justify="right")
    for route, f in figures.items():
        table.add_row(route, *f.row().values())
    return table


def answer_footer(answer: Answer) -> Table:
    """An answer's citations, what was dropped from it, and what it cost."""
    cost = answer.cost
    table = Table(
        title=f"{cost.calls} LLM calls, {cost.prompt_tokens} + {cost.completion_tokens} tokens, "
        f"{cost.context_chars} characters of context, {cost.ms:.0f} ms",
        show_lines=False,
    )
    for column in ("cited", "document", "where", "quote"):
        table.add_column(column, overflow="fold")
    for citation in answer.citations:
        where = _place({"page": citation.page, "headings": list(citation.headings)}).removesuffix(": ")
        table.add_row(
            escape(citation.chunk_id),
            escape(citation.title or citation.doc_id),
            escape(where),
            escape(citation.quote[:160]),
        )
    for dropped in answer.dropped:
        table.add_row(escape(dropped["chunk_id"]), "(dropped)", "", dropped["status"])
    return table


def entity_card(card: EntityCard) -> Table:
    """An entity as `pgkgrag show` prints it: what it is, its answer, its community, its edges."""
    stale = [
        w
        for w, on in (("answer of a changed document", card.answer_stale), ("no community yet", card.no_community))
        if on
    ]
    table = Table(title=f"{card.name} ({card.type}, {card.entity_id})", show_header=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for label, value in (
        ("aliases", ", ".join(card.aliases) or "-"),
        ("description", card.description or "-"),
        ("answer", f"{card.answer} ({card.answer_chunk_id})" if card.answer else "-"),
        ("community", card.community_title or "-"),
        ("degree", str(card.degree)),
        ("stale", "; ".join(stale) + " (run `pgkgrag build`)" if stale else "no"),
    ):
        table.add_row(label, escape(value))
    for e in card.edges:
        where = f"  ({e.evidence_chunk_id})" if e.evidence_chunk_id else ""
        table.add_row("edge", escape(f"{e.src_name} -[{e.rel}]-> {e.dst_name}  weight {e.weight:g}{where}"))
    return table

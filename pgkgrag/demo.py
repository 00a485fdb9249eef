"""`pgkgrag demo`: the whole product on the bundled sample corpus, start to finish.

Installs the schema, ingests the sample (services, teams, incidents, contracts; a few documents
in Portuguese), builds communities, reports and answers, asks a scripted set of questions on
every route (a multi-hop one and negatives included), evaluates the routes on the sample's
golden set, and draws one k-hop neighbourhood.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
from rich.console import Console
from rich.table import Table

from pgkgrag.build import build, graph_totals
from pgkgrag.db import READER, WRITER, tenant_transaction
from pgkgrag.embedders import Embedder, get_embedder
from pgkgrag.evaluate import evaluate, read_golden
from pgkgrag.extractors import ProvidedExtractor
from pgkgrag.ingest import Ingestor
from pgkgrag.migrations import connect_app
from pgkgrag.neighbourhood import write_neighbourhood
from pgkgrag.resources import SAMPLE_CORPUS, SAMPLE_GOLDEN
from pgkgrag.search import run_search

TENANT = "demo"
QUESTIONS = [
    ("local", "What does the Auth Service depend on?"),
    ("local, two hops", "Who approves changes to the PayFlow contract?"),
    ("local, multi-hop", "Who leads the team that owns the Payment Gateway?"),
    ("global", "What are the main themes across the documents?"),
    ("global (pt)", "Quais são os principais temas do acervo?"),
    ("mixed", "Tell me about the Payment Gateway in general"),
    ("vector", "What happens when a deploy fails?"),
    ("negative", "How do I bake a carrot cake?"),
    ("negative (pt)", "Como faço pão de queijo?"),
]


def run_demo(dsn: str, console: Console, picture: Path) -> None:
    """Ingest and build as kgrag_writer, then search as kgrag_reader (when the login role may)."""
    with connect_app(dsn, WRITER) as writer:
        embedder = _ingest(writer, console)
    with connect_app(dsn, READER) as reader:
        _ask(reader, console, embedder, picture)


def _ingest(conn: psycopg.Connection, console: Console) -> Embedder:
    embedder = get_embedder("use", 512)
    console.rule("ingest the sample corpus")
    report = Ingestor(conn, TENANT, ProvidedExtractor(), embedder).run([SAMPLE_CORPUS])
    console.print(
        f"{report.read} documents read, {report.written} written, {report.unchanged} unchanged; "
        f"{report.counts['chunks']} chunks, {report.counts['relations']} relations"
    )
    built = build(conn, TENANT, embedder)
    totals = graph_totals(conn, TENANT)
    console.print(
        f"graph: {totals.entities} entities, {totals.edges} edges, {totals.communities} communities, "
        f"{totals.reports} reports "
        f"({built.answers} answers written now)"
    )
    return embedder


def _ask(conn: psycopg.Connection, console: Console, embedder: Embedder, picture: Path) -> None:
    for label, question in QUESTIONS:
        console.rule(f"{label}: {question}")
        result = run_search(conn, TENANT, embedder, question, "auto", 4)
        console.print(f"[bold]route[/] {result.route}: {result.reason}", highlight=False)
        if not result.rows:
            console.print("[italic]no result[/]: nothing in the collection answers this, and the log says why")
            continue
        texts = _chunk_texts(conn, result.evidence())
        for row in result.rows[:6]:
            if row.kind == "entity":
                hop = row.payload["hop"]
                path = " -> ".join(f"{r['src']} -[{r['rel']}]-> {r['dst']}" for r in row.payload["relations"])
                line = f"{row.payload['name']} (hop {hop}): {row.payload.get('answer') or ''}"
                line += f"  [{', '.join(row.payload['evidence_refs'][:2])}]" + (f"\n      via {path}" if path else "")
            elif row.kind == "community":
                line = f"map {row.ref_id} '{row.payload['title']}' cites {', '.join(row.payload['evidence_refs'][:3])}"
            else:
                via = f" via {row.payload['via']}" if "via" in row.payload else ""
                line = f"[{row.ref_id}]{via} {texts.get(row.ref_id, '')[:110]}"
            console.print(f"  {row.rank:>2} {row.kind:<9} {row.source:<9} {line}", highlight=False, markup=False)

    console.rule("evaluation per route (sample golden set)")
    figures = evaluate(conn, TENANT, embedder, read_golden(SAMPLE_GOLDEN), k=5)
    table = Table()
    table.add_column("route")
    for column in next(iter(figures.values())).row():
        table.add_column(column, justify="right")
    for route, f in figures.items():
        table.add_row(route, *f.row().values())
    console.print(table)

    console.rule("a k-hop neighbourhood")
    written = write_neighbourhood(conn, TENANT, "service:payment gateway", picture)
    console.print(f"the 2-hop neighbourhood of the Payment Gateway is drawn in {written}")
    console.print(
        "next: pgkgrag search 'your question' --tenant demo   |   psql: SELECT * FROM kgrag.kgrag_search(...)"
    )


def _chunk_texts(conn: psycopg.Connection, refs: list[str]) -> dict[str, str]:
    with tenant_transaction(conn, TENANT):
        rows = conn.execute("SELECT chunk_id, text FROM kgrag.cited_chunks(%s)", [refs]).fetchall()
    return {chunk_id: " ".join(text.split()) for chunk_id, text in rows}

"""`pgkgrag demo`: the whole product on the bundled sample corpus, start to finish.

Installs the schema, ingests the sample (services, teams, incidents, contracts; a few documents
in Portuguese), builds communities, reports and answers, asks a scripted set of questions on
every route (a multi-hop one and negatives included), evaluates the routes on the sample's
golden set, and draws one k-hop neighbourhood.
"""

from __future__ import annotations

from pathlib import Path

import click
import psycopg
from rich.console import Console
from rich.markup import escape

from pgkgrag import migrations
from pgkgrag.cli import render
from pgkgrag.cli.common import console, friendly_errors
from pgkgrag.config import Config
from pgkgrag.db.connections import READER, WRITER, connect_app, ensure_server
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.graph.build import build
from pgkgrag.graph.picture import write_neighbourhood
from pgkgrag.graph.totals import graph_totals
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.resources import SAMPLE_CORPUS, SAMPLE_GOLDEN
from pgkgrag.retrieval.evaluation import evaluate, read_golden
from pgkgrag.retrieval.search import cited_chunks, routes, run_search

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
    embedder = tenant_embedder(conn, TENANT)  # the default (setting embedder), or the one it started with
    console.rule("ingest the sample corpus")
    summary = Ingestor(conn, TENANT, ProvidedExtractor(), embedder).run([SAMPLE_CORPUS])
    console.print(
        f"{summary.read} documents read, {summary.written} written, {summary.unchanged} unchanged; "
        f"{summary.counts.chunks} chunks, {summary.counts.relations} relations"
    )
    built = build(conn, TENANT, embedder)
    console.print(f"{render.graph_line(graph_totals(conn, TENANT))} ({built.answers} answers written now)")
    return embedder


def _ask(conn: psycopg.Connection, console: Console, embedder: Embedder, picture: Path) -> None:
    for label, question in QUESTIONS:
        console.rule(f"{label}: {question}")
        result = run_search(conn, TENANT, embedder, question, "auto", 4)
        console.print(f"[bold]route[/] {escape(f'{result.route}: {result.reason}')}", highlight=False)
        if not result.rows:
            console.print("[italic]no result[/]: nothing in the collection answers this, and the log says why")
            continue
        texts = {c.chunk_id: c.text for c in cited_chunks(conn, TENANT, result.chunks())}
        console.print(render.results_table(result, texts, limit=6))

    console.rule("evaluation per route (sample golden set)")
    figures = evaluate(conn, TENANT, embedder, read_golden(SAMPLE_GOLDEN, routes(conn)), k=5)
    console.print(render.evaluation_table(figures, "the sample's golden questions, k = 5"))

    console.rule("a k-hop neighbourhood")
    written = write_neighbourhood(conn, TENANT, "service:payment gateway", picture)
    console.print(f"the 2-hop neighbourhood of the Payment Gateway is drawn in {written}")
    console.print(
        "next: pgkgrag search 'your question' --tenant demo   |   psql: SELECT * FROM kgrag.kgrag_search(...)"
    )


@click.command(name="demo")
@friendly_errors
def demo_command() -> None:
    """Install the schema, ingest the sample corpus, build, and ask questions on every route."""
    config = Config.from_env()
    dsn = ensure_server(config)
    migrations.upgrade(dsn, "head")
    run_demo(dsn, console, config.home / "neighbourhood.html")

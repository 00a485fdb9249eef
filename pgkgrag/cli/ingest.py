"""pgkgrag ingest, build and delete: documents in, the graph built, documents out."""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from pathlib import Path

import click

from pgkgrag.cli import render
from pgkgrag.cli.common import (
    check_groups,
    console,
    err_console,
    friendly_errors,
    open_tenant,
    progress,
    report_writer,
    reports_option,
    steps,
    tenant_option,
)
from pgkgrag.db.connections import WRITER, connect_app, ensure_server
from pgkgrag.embed.embedders import EMBEDDERS
from pgkgrag.embed.reembed import reembed
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.graph.build import build as build_products
from pgkgrag.graph.totals import graph_totals
from pgkgrag.ingest.extractors.base import EXTRACTORS
from pgkgrag.ingest.extractors.choice import make_extractor
from pgkgrag.ingest.ingestor import Ingestor, delete_documents
from pgkgrag.ingest.readers.files import count_inputs


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@tenant_option
@click.option(
    "--extractor",
    type=click.Choice(EXTRACTORS),
    default="auto",
    show_default=True,
    help="auto: provided for documents that carry entities or relations, keyphrases for the others; "
    "provided: entities/relations from the JSONL; keyphrases: names and YAKE! keyphrases found in any text "
    "(offline); gazetteer: known names found in the text; llm: an OpenAI-compatible endpoint (KGRAG_LLM_URL).",
)
@click.option(
    "--embedder",
    type=click.Choice(EMBEDDERS),
    default=None,
    help="Default: the tenant's embedder, else the default (setting embedder: e5).",
)
@click.option(
    "--gazetteer",
    "gazetteer_file",
    type=click.Path(path_type=Path),
    default=None,
    help="Names for --extractor gazetteer (JSONL or CSV); default: the tenant's entities.",
)
@click.option(
    "--batch-size", type=click.IntRange(1, 100_000), default=2000, show_default=True, help="Documents per transaction."
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Batches written at once, one connection each. Their text and vector indexing overlaps; the graph "
    "updates of a tenant still take turns. The graph does not depend on it; where documents disagree about "
    "an entity's spelling, description or answer, the batch that finishes first (spelling) or last wins.",
)
@click.option(
    "--access",
    "access",
    multiple=True,
    callback=check_groups,
    help="A group the documents are for (repeat for several: any one of them sees them); a JSONL line's own "
    '"access" wins. None: everyone of the tenant. Documents for a group stay out of the shared graph.',
)
@click.option(
    "--build/--no-build",
    default=True,
    show_default=True,
    help="Rebuild communities, reports and answers afterwards (only what is stale).",
)
@reports_option
@friendly_errors
def ingest(
    paths: tuple[Path, ...],
    tenant: str | None,
    extractor: str,
    embedder: str | None,
    gazetteer_file: Path | None,
    batch_size: int,
    jobs: int,
    build: bool,
    reports: str,
    access: tuple[str, ...],
) -> None:
    """Ingest documents: .jsonl files (one document per line), .txt/.md files, or folders of them."""
    config, conn = open_tenant(tenant, WRITER, existing=False)
    with conn, ExitStack() as writers:
        dsn = ensure_server(config)
        workers = [writers.enter_context(connect_app(dsn, WRITER)) for _ in range(jobs - 1)]
        # one writer: the next batch is chunked, extracted and embedded on another connection meanwhile
        stage_conn = writers.enter_context(connect_app(dsn, WRITER)) if jobs == 1 else None
        emb = tenant_embedder(conn, config.tenant, embedder)
        chosen = make_extractor(conn, config.tenant, extractor, gazetteer_file)
        path_list = list(paths)
        started = time.perf_counter()
        with progress() as bar:
            tasks = {"documents": bar.add_task("ingesting", total=count_inputs(path_list))}
            advance = steps(bar, tasks)

            ingestor = Ingestor(
                conn,
                config.tenant,
                chosen,
                emb,
                batch_size=batch_size,
                progress=advance,
                workers=workers,
                stage_conn=stage_conn,
                access=access,
            )
            summary = ingestor.run(path_list)
            built = None
            if build:
                bar.update(tasks["documents"], description="building communities, reports, answers")
                start = time.perf_counter()
                built = build_products(conn, config.tenant, emb, report_writer=report_writer(reports), progress=advance)
                summary.seconds["build"] += time.perf_counter() - start
        totals = graph_totals(conn, config.tenant)
    console.print(render.ingest_table(summary, built, jobs, time.perf_counter() - started, totals))
    for line in render.ingest_problems(summary):
        err_console.print(line, highlight=False, soft_wrap=True)
    if totals.documents and not totals.entities and not access:  # (documents for a group give the graph nothing)
        err_console.print(
            f"warning: tenant {config.tenant!r} has {totals.documents} documents and no graph (no entity was "
            f"found with --extractor {extractor}): search has vector and full-text search only. "
            "Ingest again with --extractor keyphrases (or auto, gazetteer, llm): documents are extracted again "
            "when the extractor changes.",
            highlight=False,
            soft_wrap=True,
        )
    if not summary.ok:
        sys.exit(1)


@click.command(name="build")
@tenant_option
@click.option("--force", is_flag=True, help="Run community detection even if nothing is stale.")
@click.option(
    "--fresh",
    is_flag=True,
    help="Detect the communities from scratch: the same graph always gives the same ones (by default "
    "detection starts from the current communities, and a change moves only those it reaches).",
)
@reports_option
@friendly_errors
def build_command(tenant: str | None, force: bool, fresh: bool, reports: str) -> None:
    """Bring communities, reports, answers and embeddings up to date (only what is stale)."""
    config, conn = open_tenant(tenant, WRITER)
    with conn, progress() as bar:
        built = build_products(
            conn,
            config.tenant,
            tenant_embedder(conn, config.tenant),
            force=force,
            fresh=fresh,
            report_writer=report_writer(reports),
            progress=steps(bar),
        )
    console.print(render.build_line(built), highlight=False)


@click.command()
@click.argument("doc_ids", nargs=-1, required=True)
@tenant_option
@friendly_errors
def delete(doc_ids: tuple[str, ...], tenant: str | None) -> None:
    """Delete documents and everything that came from them."""
    config, conn = open_tenant(tenant, WRITER)
    with conn:
        deleted = delete_documents(conn, config.tenant, list(doc_ids))
    console.print(render.delete_line(len(doc_ids), deleted))


@click.command(name="reembed")
@tenant_option
@click.option("--embedder", type=click.Choice(EMBEDDERS), required=True, help="The embedder to move the tenant to.")
@click.option(
    "--batch-size", type=click.IntRange(1, 10_000), default=64, show_default=True, help="Texts embedded per page."
)
@friendly_errors
def reembed_command(tenant: str | None, embedder: str, batch_size: int) -> None:
    """Move a tenant to another embedder: embed its chunks, entities and reports with it beside the
    vectors in use (searches keep answering), then switch in one transaction. Run it again after an
    interruption: it resumes. Until the switch, the tenant keeps its embedder."""
    config, conn = open_tenant(tenant, WRITER)
    with conn:
        target = tenant_embedder(conn, config.tenant, embedder)
        with progress() as bar:
            moved = reembed(conn, config.tenant, target, batch=batch_size, progress=steps(bar))
    console.print(
        f"tenant {config.tenant} embeds with {moved['embedder']} ({moved['dimension']} dimensions) now: "
        f"{moved['chunks']} chunks, {moved['entities']} entities and {moved['reports']} reports moved, "
        f"{moved['embedded']} texts embedded by this run",
        highlight=False,
    )

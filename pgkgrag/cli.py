"""The `pgkgrag` command line."""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import psycopg
from alembic.util import CommandError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from sqlalchemy.exc import DBAPIError

from pgkgrag import migrations, render
from pgkgrag.build import build as build_products
from pgkgrag.config import SHARED_TENANT, Config
from pgkgrag.db import READER, WRITER, connect_app, ensure_server
from pgkgrag.demo import run_demo
from pgkgrag.documents import count_inputs
from pgkgrag.embedders import EMBEDDERS
from pgkgrag.embedding import tenant_embedder
from pgkgrag.entities import entity_card
from pgkgrag.errors import KgragError
from pgkgrag.evaluate import evaluate, read_golden
from pgkgrag.extraction_setup import make_extractor
from pgkgrag.extractors import EXTRACTORS
from pgkgrag.ingest import Ingestor, delete_documents
from pgkgrag.neighbourhood import write_neighbourhood
from pgkgrag.search import cited_chunks, context, routes, run_search
from pgkgrag.tenants import graph_totals, require_documents, staleness, tenants

if TYPE_CHECKING:
    from pgkgrag.llm_client import OpenAICompatibleClient

# Piped output (not a terminal) gets wide lines rather than rich's 80 columns.
console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, soft_wrap=True, width=None if sys.stderr.isatty() else 160)
F = TypeVar("F", bound=Callable[..., Any])


LOST_CONNECTION_HINT = (
    "the connection to PostgreSQL was lost. Nothing is half-written: every ingestion batch is one"
    " transaction. Run the same command again; documents already stored are skipped."
)


def _connection_lost(exc: psycopg.Error) -> bool:
    """The server went away (crash, shutdown, terminated backend), not a query error."""
    state = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError)
    return state.startswith("08") or state in ("57P01", "57P02", "57P03")


def friendly_errors(func: F) -> F:
    """User mistakes and environment problems end with one clear message, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (KgragError, CommandError, OSError) as exc:
            err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            sys.exit(1)
        except (psycopg.Error, DBAPIError) as exc:
            if isinstance(exc, DBAPIError) and isinstance(exc.orig, psycopg.Error):
                exc = exc.orig
            diag = getattr(exc, "diag", None)
            message = (diag.message_primary if diag is not None else None) or str(exc).strip().splitlines()[0]
            hint = f"\nhint: {diag.message_hint}" if diag is not None and diag.message_hint else ""
            if isinstance(exc, psycopg.Error) and _connection_lost(exc) and not hint:
                hint = f"\nhint: {LOST_CONNECTION_HINT}"
            err_console.print(f"[bold red]error:[/] {escape(message + hint)}", highlight=False, soft_wrap=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@click.group()
@click.version_option(package_name="pgkgrag")
def main() -> None:
    """pgkgrag: GraphRAG inside PostgreSQL."""


@main.group()
def db() -> None:
    """The database: embedded server and schema migrations."""


def _revision_before(dsn: str) -> str | None:
    """The revision before a migration run; unreadable, the run itself says what is missing."""
    try:
        return migrations.current(dsn)
    except migrations.RevisionUnreadable:
        return None


@db.command()
@friendly_errors
def start() -> None:
    """Start the embedded PostgreSQL (reuses it when it already runs)."""
    config = Config.from_env()
    if config.dsn:
        console.print("KGRAG_DSN is set: pgkgrag uses that server, the embedded one is not started.")
        return
    from pgkgrag.embedded import EmbeddedServer

    status, started = EmbeddedServer(config.home).start()
    verb = "started" if started else "already running"
    console.print(f"embedded PostgreSQL {verb}: pid {status.pid}, data {status.data_dir}")
    console.print(f"connect with: psql '{status.uri()}'", highlight=False, soft_wrap=True)


@db.command()
@friendly_errors
def stop() -> None:
    """Stop the embedded PostgreSQL."""
    from pgkgrag.embedded import EmbeddedServer

    config = Config.from_env()
    if EmbeddedServer(config.home).stop():
        console.print("embedded PostgreSQL stopped")
    else:
        console.print("embedded PostgreSQL was not running")


@db.command()
@friendly_errors
def status() -> None:
    """Show which server is used, whether it runs, and the schema revision."""
    config = Config.from_env()
    if config.dsn:
        console.print("server: KGRAG_DSN")
        dsn = config.dsn
    else:
        from pgkgrag.embedded import EmbeddedServer

        state = EmbeddedServer(config.home).status()
        if not state.running:
            extra = f" (stale lock left by pid {state.stale_pid})" if state.stale_pid else ""
            console.print(f"embedded PostgreSQL: not running{extra}, data {state.data_dir}")
            return
        console.print(f"embedded PostgreSQL: running, pid {state.pid}, data {state.data_dir}")
        console.print(f"uri: {state.uri()}", highlight=False, soft_wrap=True)
        dsn = state.uri()
    rev = migrations.current(dsn)
    head = migrations.head()
    if rev is None:
        console.print("schema: not installed (run `pgkgrag db upgrade`)")
    else:
        console.print(f"schema: revision {rev}" + (" (head)" if rev == head else f", head is {head}"))


@db.command()
@click.argument("revision", default="head")
@click.option(
    "--dim",
    type=click.IntRange(1, migrations.MAX_DIMENSION),
    default=None,
    help="Embedding dimension, chosen at install time (default 512, the default embedder's).",
)
@click.option(
    "--vector-index",
    type=click.Choice(migrations.VECTOR_INDEXES),
    default=None,
    help="The vector index, chosen when revision 0024 runs: bq (binary-quantized, the default: a fifth of the size, "
    "a quarter of the cost to insert into) or halfvec (faster to search, up to 4,000 dimensions).",
)
@friendly_errors
def upgrade(revision: str, dim: int | None, vector_index: str | None) -> None:
    """Install or upgrade the kgrag schema (to REVISION, default head)."""
    dsn = ensure_server(Config.from_env())
    before = _revision_before(dsn)
    migrations.upgrade(dsn, revision, dim=dim, vector_index=vector_index)
    after = migrations.current(dsn)
    if before == after:
        console.print(f"schema already at revision {after}")
    else:
        console.print(f"schema upgraded: {before or 'empty'} -> {after}")


@db.command()
@click.argument("revision")
@friendly_errors
def downgrade(revision: str) -> None:
    """Downgrade the schema to REVISION ('base' removes every kgrag object)."""
    dsn = ensure_server(Config.from_env())
    before = _revision_before(dsn)
    migrations.downgrade(dsn, revision)
    after = migrations.current(dsn)
    console.print(f"schema downgraded: {before or 'empty'} -> {after or 'base (nothing installed)'}")


@db.command()
@friendly_errors
def current() -> None:
    """Print the schema revision of the database."""
    rev = migrations.current(ensure_server(Config.from_env()))
    console.print(rev or "not installed")


def _open(tenant: str | None, role: str, *, existing: bool = True) -> tuple[Config, psycopg.Connection]:
    """Connect as the application role of the command (kgrag_writer or kgrag_reader) when allowed.
    With `existing`, a tenant without documents is an error that lists the tenants there are."""
    config = Config.from_env(tenant)
    if config.tenant == SHARED_TENANT and role == WRITER:
        raise KgragError(
            f"tenant {SHARED_TENANT!r} holds the defaults of every tenant (settings, router rules): it takes no "
            "documents, and only the schema owner may change it"
        )
    conn = connect_app(ensure_server(config), role)
    if existing:
        try:
            require_documents(conn, config.tenant)
        except BaseException:
            conn.close()
            raise
    return config, conn


reports_option = click.option(
    "--reports",
    type=click.Choice(["template", "llm"]),
    default="template",
    show_default=True,
    help="template: subjects and claims with their chunk ids; llm: the template summarized by KGRAG_LLM_URL, "
    "citations kept.",
)


def _report_writer(reports: str) -> OpenAICompatibleClient | None:
    if reports != "llm":
        return None
    from pgkgrag.llm_client import LlmSettings, OpenAICompatibleClient

    return OpenAICompatibleClient(LlmSettings.from_env())


tenant_option = click.option(
    "--tenant", default=None, help="Tenant to act for (default: KGRAG_TENANT, else 'default')."
)


@main.command()
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
    "--embedder", type=click.Choice(EMBEDDERS), default=None, help="Default: the tenant's embedder, else 'use'."
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
) -> None:
    """Ingest documents: .jsonl files (one document per line), .txt/.md files, or folders of them."""
    config, conn = _open(tenant, WRITER, existing=False)
    with conn, ExitStack() as writers:
        dsn = ensure_server(config)
        workers = [writers.enter_context(connect_app(dsn, WRITER)) for _ in range(jobs - 1)]
        # one writer: the next batch is chunked, extracted and embedded on another connection meanwhile
        stage_conn = writers.enter_context(connect_app(dsn, WRITER)) if jobs == 1 else None
        emb = tenant_embedder(conn, config.tenant, embedder)
        chosen = make_extractor(conn, config.tenant, extractor, gazetteer_file)
        path_list = list(paths)
        started = time.perf_counter()
        with _progress() as progress:
            tasks = {"documents": progress.add_task("ingesting", total=count_inputs(path_list))}

            def advance(step: str, n: int) -> None:
                if step not in tasks:
                    tasks[step] = progress.add_task(step, total=None)
                progress.advance(tasks[step], n)

            ingestor = Ingestor(
                conn,
                config.tenant,
                chosen,
                emb,
                batch_size=batch_size,
                progress=advance,
                workers=workers,
                stage_conn=stage_conn,
            )
            summary = ingestor.run(path_list)
            built = None
            if build:
                progress.update(tasks["documents"], description="building communities, reports, answers")
                start = time.perf_counter()
                built = build_products(conn, config.tenant, emb, report_writer=_report_writer(reports))
                summary.seconds["build"] += time.perf_counter() - start
        totals = graph_totals(conn, config.tenant)
    console.print(render.ingest_table(summary, built, jobs, time.perf_counter() - started, totals))
    for line in render.ingest_problems(summary):
        err_console.print(line, highlight=False, soft_wrap=True)
    if totals.documents and not totals.entities:
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


@main.command(name="build")
@tenant_option
@click.option("--force", is_flag=True, help="Run community detection even if nothing is stale.")
@reports_option
@friendly_errors
def build_command(tenant: str | None, force: bool, reports: str) -> None:
    """Bring communities, reports, answers and embeddings up to date (only what is stale)."""
    config, conn = _open(tenant, WRITER)
    with conn:
        built = build_products(
            conn,
            config.tenant,
            tenant_embedder(conn, config.tenant),
            force=force,
            report_writer=_report_writer(reports),
        )
    console.print(render.build_line(built), highlight=False)


@main.command()
@click.argument("doc_ids", nargs=-1, required=True)
@tenant_option
@friendly_errors
def delete(doc_ids: tuple[str, ...], tenant: str | None) -> None:
    """Delete documents and everything that came from them."""
    config, conn = _open(tenant, WRITER)
    with conn:
        deleted = delete_documents(conn, config.tenant, list(doc_ids))
    console.print(render.delete_line(len(doc_ids), deleted))


def _progress() -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def _options(pairs: tuple[str, ...]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise KgragError(f"--option expects key=value, got {pair!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


search_options = [
    click.option(
        "--route",
        default="auto",
        show_default=True,
        help="auto lets the router pick (and say why); or one of kgrag.routes(): local, global, mixed, vector.",
    ),
    click.option("--k", type=click.IntRange(1, 1000), default=10, show_default=True, help="Chunk rows at most."),
    click.option(
        "--option",
        "-o",
        "option_pairs",
        multiple=True,
        help="A search option as key=value (JSON value), e.g. -o hops=3 -o degree_cap=null.",
    ),
    tenant_option,
]


def _with_search_options(func: F) -> F:
    for decorator in reversed(search_options):
        func = decorator(func)
    return func


@main.command(name="search")
@click.argument("question")
@_with_search_options
@click.option("--json", "as_json", is_flag=True, help="Print the rows as a JSON array.")
@friendly_errors
def search_command(
    question: str, route: str, k: int, option_pairs: tuple[str, ...], tenant: str | None, as_json: bool
) -> None:
    """Search: the route and why, then the results with their citations."""
    config, conn = _open(tenant, READER)
    with conn:
        result = run_search(
            conn, config.tenant, tenant_embedder(conn, config.tenant), question, route, k, _options(option_pairs)
        )
        texts = {c.chunk_id: c.text for c in cited_chunks(conn, config.tenant, result.chunks())}
    if as_json:
        console.print_json(render.results_json(result))
        return
    console.print(f"[bold]route:[/] {escape(f'{result.route} - {result.reason}')}", highlight=False)
    if not result.rows:
        console.print("no result: nothing in the collection answers this question", highlight=False)
        return
    console.print(render.results_table(result, texts))


@main.command(name="context")
@click.argument("question")
@_with_search_options
@click.option("--max-chars", type=click.IntRange(1, 1_000_000), default=4000, show_default=True)
@friendly_errors
def context_command(
    question: str, route: str, k: int, option_pairs: tuple[str, ...], tenant: str | None, max_chars: int
) -> None:
    """Print the context block an LLM would get for the question (within --max-chars)."""
    config, conn = _open(tenant, READER)
    with conn:
        embedder = tenant_embedder(conn, config.tenant)
        block = context(conn, config.tenant, embedder, question, route, k, max_chars, _options(option_pairs))
    console.print(block or "(empty: nothing in the collection answers this question)", highlight=False, markup=False)


@main.command(name="ask")
@click.argument("question")
@_with_search_options
@click.option("--json", "as_json", is_flag=True, help="Print the answer, its citations and its cost as JSON.")
@friendly_errors
def ask_command(
    question: str, route: str, k: int, option_pairs: tuple[str, ...], tenant: str | None, as_json: bool
) -> None:
    """Answer from the tenant's documents only, with verified citations (an OpenAI-compatible chat
    endpoint: KGRAG_LLM_URL, KGRAG_LLM_MODEL, KGRAG_LLM_API_KEY)."""
    from pgkgrag.answering import ask
    from pgkgrag.llm_client import LlmSettings, OpenAICompatibleClient

    llm = OpenAICompatibleClient(LlmSettings.from_env())
    config, conn = _open(tenant, READER)
    with conn:
        answer = ask(
            conn, config.tenant, tenant_embedder(conn, config.tenant), llm, question, route, k, _options(option_pairs)
        )
    llm.close()
    if as_json:
        console.print_json(json.dumps(answer.to_json(), ensure_ascii=False))
        return
    console.print(escape(answer.answer), highlight=False)
    console.print(f"[bold]route:[/] {escape(f'{answer.route} - {answer.reason}')}", highlight=False)
    console.print(render.answer_footer(answer), highlight=False)


@main.command(name="eval")
@click.argument("golden", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--k", type=click.IntRange(1, 1000), default=5, show_default=True)
@tenant_option
@friendly_errors
def eval_command(golden: Path, k: int, tenant: str | None) -> None:
    """Evaluate routing and retrieval per route on GOLDEN.jsonl
    ({"question", "route", "expect_chunks": [...], "expect_empty": false} per line)."""
    config, conn = _open(tenant, READER)
    with conn:
        questions = read_golden(golden, routes(conn))
        figures = evaluate(conn, config.tenant, tenant_embedder(conn, config.tenant), questions, k)
    console.print(render.evaluation_table(figures, f"evaluation per route ({len(questions)} questions, k = {k})"))
    for route, f in figures.items():
        for miss in f.misses:
            console.print(f"[yellow]{route}[/]: {escape(miss)}", highlight=False)


@main.command(name="graph")
@click.argument("name")
@click.option("--hops", type=click.IntRange(0, 10), default=2, show_default=True)
@click.option(
    "--degree-cap", type=click.IntRange(1, 1000), default=4, show_default=True, help="Each node's strongest edges."
)
@click.option("--relations", multiple=True, help="Follow only these relation types (any case); repeat for several.")
@click.option("--direction", type=click.Choice(["out", "in", "both"]), default="out", show_default=True)
@click.option("--out", "out_path", type=click.Path(path_type=Path), required=True, help="A .svg or an .html file.")
@tenant_option
@friendly_errors
def graph_command(
    name: str,
    hops: int,
    degree_cap: int,
    relations: tuple[str, ...],
    direction: str,
    out_path: Path,
    tenant: str | None,
) -> None:
    """Draw the neighbourhood of an entity (id, name or alias) into an SVG or HTML file."""
    config, conn = _open(tenant, READER)
    with conn:
        written = write_neighbourhood(
            conn, config.tenant, name, out_path, hops, degree_cap, list(relations) or None, direction
        )
    console.print(f"drew the {hops}-hop neighbourhood of {escape(name)} in {escape(str(written))}", highlight=False)


@main.command(name="show")
@click.argument("name")
@tenant_option
@friendly_errors
def show_command(name: str, tenant: str | None) -> None:
    """Print what the graph says of an entity (id, name or alias): its card and strongest edges."""
    config, conn = _open(tenant, READER)
    with conn:
        card = entity_card(conn, config.tenant, name)
    console.print(render.entity_card(card))


@main.command(name="status")
@tenant_option
@friendly_errors
def status_command(tenant: str | None) -> None:
    """The tenant's counts and what of it is stale (kgrag.staleness), with the command that fixes it."""
    config, conn = _open(tenant, READER)
    with conn:
        totals = graph_totals(conn, config.tenant)
        stale = staleness(conn, config.tenant)
    console.print(render.status_table(config.tenant, totals, stale))
    if any(row.how_many for row in stale):
        console.print(f"stale: run `pgkgrag build --tenant {config.tenant}`", highlight=False, markup=False)
    else:
        console.print("nothing is stale", highlight=False)


@main.command(name="tenants")
@friendly_errors
def tenants_command() -> None:
    """List the tenants that hold documents, with their documents, chunks, entities and communities."""
    config = Config.from_env()
    with connect_app(ensure_server(config), READER) as conn:
        listed = tenants(conn)
    if not listed:
        console.print("no tenant has documents yet: `pgkgrag ingest FILES --tenant NAME` creates one")
        return
    console.print(render.tenants_table(listed))


@main.command(name="serve")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (127.0.0.1: this machine only)."
)
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option(
    "--token",
    envvar="KGRAG_SERVE_TOKEN",
    default=None,
    help="Bearer token every request must carry (default: KGRAG_SERVE_TOKEN; none: no token asked).",
)
@friendly_errors
def serve_command(host: str, port: int, token: str | None) -> None:
    """Serve the tenants' embedders as an OpenAI-compatible POST /v1/embeddings (and GET /healthz),
    so a client in any language embeds its question with the model of the documents."""
    from pgkgrag.server import serve

    serve(ensure_server(Config.from_env()), host, port, token)


@main.command(name="demo")
@friendly_errors
def demo_command() -> None:
    """Install the schema, ingest the sample corpus, build, and ask questions on every route."""
    config = Config.from_env()
    dsn = ensure_server(config)
    migrations.upgrade(dsn, "head")
    run_demo(dsn, console, config.home / "neighbourhood.html")

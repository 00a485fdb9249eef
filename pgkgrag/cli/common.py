"""What every command shares: the consoles, the one error formatter, the tenant and search options,
and connecting as the command's role."""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
import psycopg
from alembic.util import CommandError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from sqlalchemy.exc import DBAPIError

from pgkgrag.config import SHARED_TENANT, Config
from pgkgrag.db.connections import WRITER, connect_app, ensure_server
from pgkgrag.errors import KgragError, describe
from pgkgrag.graph.totals import require_documents
from pgkgrag.ingest.inputs import GROUP_NAME

if TYPE_CHECKING:
    from pgkgrag.llm.client import OpenAICompatibleClient

# Piped output (not a terminal) gets wide lines rather than rich's 80 columns.
console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, soft_wrap=True, width=None if sys.stderr.isatty() else 160)
F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(func: F) -> F:
    """User mistakes and environment problems end with one clear message (pgkgrag.errors.describe),
    never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (KgragError, CommandError, OSError, psycopg.Error, DBAPIError) as exc:
            err_console.print(f"[bold red]error:[/] {escape(describe(exc).text())}", highlight=False, soft_wrap=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def open_tenant(tenant: str | None, role: str, *, existing: bool = True) -> tuple[Config, psycopg.Connection]:
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


def report_writer(reports: str) -> OpenAICompatibleClient | None:
    if reports != "llm":
        return None
    from pgkgrag.llm.client import LlmSettings, OpenAICompatibleClient

    return OpenAICompatibleClient(LlmSettings.from_env())


tenant_option = click.option(
    "--tenant", default=None, help="Tenant to act for (default: KGRAG_TENANT, else 'default')."
)


def progress() -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def steps(bar: Progress, tasks: dict[str, TaskID] | None = None) -> Callable[[str, int], None]:
    """A progress callback ((step, n): n more of that step done) showing each step as a line of bar,
    made when first heard of (tasks: lines made beforehand, by step)."""
    lines = tasks if tasks is not None else {}

    def advance(step: str, n: int) -> None:
        if step not in lines:
            lines[step] = bar.add_task(step, total=None)
        bar.advance(lines[step], n)

    return advance


def parse_options(pairs: tuple[str, ...]) -> dict[str, Any]:
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


def with_search_options(func: F) -> F:
    for decorator in reversed(search_options):
        func = decorator(func)
    return func


json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (for scripts).")


def check_groups(_ctx: click.Context, _param: click.Parameter, groups: tuple[str, ...]) -> tuple[str, ...]:
    """A click callback: group names as the database takes them (it checks them again)."""
    for group in groups:
        if not GROUP_NAME.fullmatch(group):
            raise click.BadParameter(f"{group!r} is not a group name (1-63 lower-case letters, digits or _.-)")
    return groups


def print_json(value: Any) -> None:
    """A command's result as JSON on stdout, dataclasses as objects."""
    plain = dataclasses.asdict(value) if dataclasses.is_dataclass(value) and not isinstance(value, type) else value
    print(json.dumps(plain, ensure_ascii=False, indent=2, default=_plain))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)

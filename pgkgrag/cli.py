"""The `pgkgrag` command line."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
import psycopg
from alembic.util import CommandError
from rich.console import Console
from sqlalchemy.exc import DBAPIError

from pgkgrag import migrations
from pgkgrag.config import Config
from pgkgrag.db import resolve_dsn
from pgkgrag.embedded import EmbeddedServer
from pgkgrag.errors import KgragError

console = Console()
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(func: F) -> F:
    """User mistakes and environment problems end with one clear message, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (KgragError, CommandError) as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            sys.exit(1)
        except (psycopg.Error, DBAPIError) as exc:
            if isinstance(exc, DBAPIError) and isinstance(exc.orig, psycopg.Error):
                exc = exc.orig
            diag = getattr(exc, "diag", None)
            hint = f"\nhint: {diag.message_hint}" if diag is not None and diag.message_hint else ""
            err_console.print(f"[bold red]database error:[/] {str(exc).strip()}{hint}", highlight=False, soft_wrap=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@click.group()
@click.version_option(package_name="pgkgrag")
def main() -> None:
    """pgkgrag: GraphRAG inside PostgreSQL."""


@main.group()
def db() -> None:
    """The database: embedded server and schema migrations."""


@db.command()
@friendly_errors
def start() -> None:
    """Start the embedded PostgreSQL (reuses it when it already runs)."""
    config = Config.from_env()
    if config.dsn:
        console.print("KGRAG_DSN is set: pgkgrag uses that server, the embedded one is not started.")
        return
    status, started = EmbeddedServer(config.home).start()
    verb = "started" if started else "already running"
    console.print(f"embedded PostgreSQL {verb}: pid {status.pid}, data {status.data_dir}")
    console.print(f"connect with: psql '{status.uri()}'", highlight=False, soft_wrap=True)


@db.command()
@friendly_errors
def stop() -> None:
    """Stop the embedded PostgreSQL."""
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
@friendly_errors
def upgrade(revision: str, dim: int | None) -> None:
    """Install or upgrade the kgrag schema (to REVISION, default head)."""
    dsn = resolve_dsn(Config.from_env())
    before = migrations.current(dsn)
    migrations.upgrade(dsn, revision, dim=dim)
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
    dsn = resolve_dsn(Config.from_env())
    before = migrations.current(dsn)
    migrations.downgrade(dsn, revision)
    after = migrations.current(dsn)
    console.print(f"schema downgraded: {before or 'empty'} -> {after or 'base (nothing installed)'}")


@db.command()
@friendly_errors
def current() -> None:
    """Print the schema revision of the database."""
    rev = migrations.current(resolve_dsn(Config.from_env()))
    console.print(rev or "not installed")

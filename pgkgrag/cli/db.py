"""pgkgrag db: the embedded server and the schema's revisions."""

from __future__ import annotations

import click

from pgkgrag import migrations
from pgkgrag.cli.common import (
    console,
    friendly_errors,
)
from pgkgrag.config import Config
from pgkgrag.db.connections import ensure_server


@click.group()
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
    from pgkgrag.db.server import EmbeddedServer

    status, started = EmbeddedServer(config.home).start()
    verb = "started" if started else "already running"
    console.print(f"embedded PostgreSQL {verb}: pid {status.pid}, data {status.data_dir}")
    console.print(f"connect with: psql '{status.uri()}'", highlight=False, soft_wrap=True)


@db.command()
@friendly_errors
def stop() -> None:
    """Stop the embedded PostgreSQL."""
    from pgkgrag.db.server import EmbeddedServer

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
        from pgkgrag.db.server import EmbeddedServer

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
    help="Embedding dimension, chosen at install time (default 512: the widest bundled embedder's; narrower "
    "models are stored zero-padded).",
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

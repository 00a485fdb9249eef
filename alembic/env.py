"""Alembic environment for pgkgrag: the same DSN as the CLI, one transaction, one advisory lock.

Run by `pgkgrag db upgrade`, by `alembic upgrade head` from the repository root, or on a caller's
connection by pgkgrag.alembic_host (a team's own Alembic environment). Options:
`-x dim=N` (or `pgkgrag db upgrade --dim N`) picks the embedding dimension at install time, and
`-x vector_index=halfvec|bq` (or `--vector-index`) the kind of vector index when revision 0024 runs.
"""

from logging.config import fileConfig

from alembic import context
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy.engine import Connection

from pgkgrag import migrations
from pgkgrag.config import Config
from pgkgrag.db import installer
from pgkgrag.db.connections import ensure_server
from pgkgrag.errors import KgragError

config = context.config
if config.config_file_name:
    fileConfig(config.config_file_name)


def _dimension() -> int | None:
    given = config.attributes.get("dim") or context.get_x_argument(as_dictionary=True).get("dim")
    if given is None:
        return None
    try:
        return int(given)
    except ValueError as exc:
        raise KgragError(f"dim must be an integer, got {given!r}") from exc


def _vector_index() -> str | None:
    given = config.attributes.get("vector_index") or context.get_x_argument(as_dictionary=True).get("vector_index")
    return str(given) if given is not None else None


def run_migrations(connection: Connection) -> None:
    ran: list[str] = []
    context.configure(
        connection=connection,
        target_metadata=None,
        version_table=migrations.VERSION_TABLE,
        transaction_per_migration=False,
        on_version_apply=lambda **kw: ran.append(kw["step"].up_revision_id),
    )
    # a connection already in a transaction (pgkgrag.alembic_host) keeps it: all or nothing with the caller
    with context.begin_transaction():
        installer.prepare(connection, _dimension(), _vector_index())
        context.run_migrations()
        heads = set(ScriptDirectory.from_config(config).get_heads())
        current = context.get_context().get_current_heads()
        installer.finish(
            connection, at_head=set(current) == heads, ran=bool(ran), revision=current[0] if current else None
        )


def run_migrations_online() -> None:
    given = config.attributes.get("connection")
    if given is not None:
        run_migrations(given)
        return
    dsn = config.attributes.get("dsn") or ensure_server(Config.from_env())
    with migrations.engine_for(dsn).connect() as connection:
        run_migrations(connection)


if context.is_offline_mode():
    raise CommandError(migrations.ONLINE_ONLY)
run_migrations_online()

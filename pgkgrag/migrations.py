"""Running pgkgrag's Alembic revisions: upgrade, downgrade, and the revision a database is at.

What a revision does (run its sql/incremental file, then bring the idempotent layer up to date)
is pgkgrag.db.installer's; this module only drives Alembic, with its own version table
(kgrag_alembic_version) so that pgkgrag's history never mixes with an application's.
"""

from __future__ import annotations

from typing import Any

import psycopg
from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.pool import NullPool

from pgkgrag.db.connections import connect
from pgkgrag.db.installer import MAX_DIMENSION, VECTOR_INDEXES, apply_revision
from pgkgrag.db.schema_version import head, revisions
from pgkgrag.errors import KgragError
from pgkgrag.queries import Q
from pgkgrag.resources import ALEMBIC_DIR

VERSION_TABLE = "kgrag_alembic_version"
ONLINE_ONLY = (
    "pgkgrag's revisions run online only: they read the database (its lock, roles and privileges) as they go. "
    "Run the upgrade without --sql."
)
# apply_revision: what the released revision scripts in alembic/versions import from here.
__all__ = [
    "MAX_DIMENSION",
    "ONLINE_ONLY",
    "VECTOR_INDEXES",
    "VERSION_TABLE",
    "apply_revision",
    "current",
    "downgrade",
    "head",
    "revisions",
    "upgrade",
]


def alembic_config(dsn: str | None = None, *, dim: int | None = None, vector_index: str | None = None) -> AlembicConfig:
    """An Alembic configuration for pgkgrag's revisions, without an ini file."""
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(ALEMBIC_DIR))
    cfg.attributes["dsn"] = dsn
    cfg.attributes["dim"] = dim
    cfg.attributes["vector_index"] = vector_index
    return cfg


def engine_for(dsn: str) -> Any:
    return create_engine("postgresql+psycopg://", creator=lambda: connect(dsn), poolclass=NullPool)


def upgrade(dsn: str, revision: str = "head", *, dim: int | None = None, vector_index: str | None = None) -> None:
    command.upgrade(alembic_config(dsn, dim=dim, vector_index=vector_index), revision)


def downgrade(dsn: str, revision: str) -> None:
    command.downgrade(alembic_config(dsn), revision)


class RevisionUnreadable(KgragError):
    """This role may read neither kgrag.version() nor the version table: not the schema's."""


def current(dsn: str) -> str | None:
    """The revision the database is at, or None when pgkgrag is not installed: kgrag.version()
    where the schema has it (at head, readable by the owner and the kgrag roles), else Alembic's
    version table (the owner's)."""
    try:
        with connect(dsn) as conn:
            schema, versioned = conn.execute(Q["schema_installed"]).fetchone() or (False, False)
            if versioned:
                return str(conn.execute(Q["schema_version"]).fetchone()[0])  # type: ignore[index]
        if not schema:
            return None
        with engine_for(dsn).connect() as connection:
            ctx = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
            heads = ctx.get_current_heads()
    except (psycopg.errors.InsufficientPrivilege, ProgrammingError) as exc:
        if isinstance(exc, ProgrammingError) and not isinstance(exc.orig, psycopg.errors.InsufficientPrivilege):
            raise
        raise RevisionUnreadable(
            "this role may not read the kgrag schema's revision: it is not the schema's owner, and the schema has no "
            "kgrag.version() for the kgrag roles (it is below head: the owner runs `pgkgrag db upgrade`) or the role "
            "is granted neither kgrag_reader nor kgrag_writer"
        ) from exc
    return heads[0] if heads else None

"""pgkgrag's migrations from a team's own Alembic environment.

Pin the kgrag schema in one of your revisions; it is applied on your connection, inside your
migration's transaction (all or nothing with the rest of it), under pgkgrag's advisory lock:

    from pgkgrag import alembic_host

    def upgrade():
        alembic_host.upgrade(op.get_bind(), "head")   # the installed package's newest revision

    def downgrade():
        alembic_host.downgrade(op.get_bind(), "base")   # or the revision your previous pin named

and keep autogenerate away from kgrag's objects in env.py (include_name keeps them from being
reflected at all, so `alembic check` stays quiet; include_object filters what is left):

    context.configure(..., include_name=alembic_host.include_name,
                      include_object=alembic_host.include_object)

kgrag keeps its own version table (kgrag_alembic_version), so your history and pgkgrag's never
mix. The connection must use psycopg 3 (postgresql+psycopg://). The pin moves with the package:
after upgrading pgkgrag, add a revision of yours that upgrades to "head" again (docs/operator.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import alembic.context
import alembic.op
from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.util import CommandError
from sqlalchemy.engine import Connection

from pgkgrag import migrations
from pgkgrag.errors import KgragError
from pgkgrag.queries import Q

SCHEMAS = ("kgrag", "kgrag_private")  # pgkgrag's, never part of a team's diff


class HostError(KgragError, CommandError):
    """Refused in a team's Alembic: its command line prints the message ("FAILED: ..."), no traceback."""


def upgrade(
    connection: Connection, revision: str = "head", *, dim: int | None = None, vector_index: str | None = None
) -> None:
    """Bring the kgrag schema to `revision` on the caller's connection and transaction (dim and
    vector_index: as `pgkgrag db upgrade --dim --vector-index`)."""
    _run(connection, lambda cfg: command.upgrade(cfg, revision), dim, vector_index)


def downgrade(connection: Connection, revision: str) -> None:
    """Take the kgrag schema back to `revision` ("base" removes it) on the caller's connection."""
    _run(connection, lambda cfg: command.downgrade(cfg, revision), None, None)


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Reflection filter: the kgrag schemas and pgkgrag's version table are never read for a diff."""
    if type_ == "schema":
        return name not in SCHEMAS
    return not (type_ == "table" and name == migrations.VERSION_TABLE)


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Autogenerate filter: kgrag's schemas and version table are pgkgrag's to manage, never a diff."""
    table = obj if type_ == "table" else getattr(obj, "table", None)
    schema = getattr(table, "schema", None) if table is not None else getattr(obj, "schema", None)
    if schema in SCHEMAS or (type_ == "schema" and name in SCHEMAS):
        return False
    return not (type_ == "table" and name == migrations.VERSION_TABLE)


def _run(
    connection: Connection, step: Callable[[AlembicConfig], None], dim: int | None, vector_index: str | None
) -> None:
    if not isinstance(connection, Connection):  # offline mode (--sql) binds a MockConnection
        raise HostError(migrations.ONLINE_ONLY)
    if connection.dialect.name != "postgresql" or connection.dialect.driver != "psycopg":
        raise HostError(
            "pgkgrag needs psycopg 3: use a postgresql+psycopg:// URL "
            f"(this connection is {connection.dialect.name}+{connection.dialect.driver})"
        )
    cfg = migrations.alembic_config(dim=dim, vector_index=vector_index)
    cfg.attributes["connection"] = connection
    # Alembic keeps one global `context` and `op` for the running migration (the caller's); a
    # nested run replaces them and clears them when it ends. Put the caller's back.
    saved = [module._proxy for module in (alembic.context, alembic.op)]
    # pgkgrag migrates as the defaults tenant, and a transaction has one tenant (kgrag.use_tenant)
    if connection.exec_driver_sql(Q["current_tenant_setting"]).scalar():
        raise HostError("run pgkgrag's migrations in a transaction that acts for no tenant (kgrag.tenant is set)")
    try:
        step(cfg)
    finally:
        for proxy in saved:
            if proxy is not None:
                proxy._install_proxy()
        connection.exec_driver_sql(Q["clear_tenant"])

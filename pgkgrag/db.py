"""Connections: which server to use, and the tenant of every transaction."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from pgkgrag.config import Config, validate_tenant
from pgkgrag.embedded import EmbeddedServer
from pgkgrag.errors import KgragError


def resolve_dsn(config: Config) -> str:
    """KGRAG_DSN when set; otherwise the embedded server, started if it is not running."""
    if config.dsn:
        return config.dsn
    status, started = EmbeddedServer(config.home).start()
    if started:
        print(
            f"pgkgrag: started the embedded PostgreSQL (data in {status.data_dir}); "
            "it keeps running for the next commands, `pgkgrag db stop` stops it",
            file=sys.stderr,
        )
    return status.uri()


READER = "kgrag_reader"
WRITER = "kgrag_writer"


def connect(dsn: str, *, autocommit: bool = False, role: str | None = None) -> psycopg.Connection:
    """Open a connection; the pgvector type is registered when the extension is installed.

    With a role (kgrag_reader or kgrag_writer) the session acts as that role when the login role
    may (SET ROLE): the database, not the driver, then limits what it can do.
    """
    try:
        # fallback_application_name: the DSN or PGAPPNAME may still name the application
        conn = psycopg.connect(dsn, autocommit=autocommit, fallback_application_name="pgkgrag")
    except psycopg.OperationalError as exc:
        raise KgragError(f"cannot connect to PostgreSQL: {str(exc).strip()}") from exc
    if conn.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone():
        register_vector(conn)
    if role is not None:
        use_role(conn, role)
    if not autocommit:
        conn.commit()
    return conn


def use_role(conn: psycopg.Connection, role: str) -> bool:
    """SET ROLE to an application role if the login role may; return whether it did."""
    allowed = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s) AND pg_has_role(session_user, %s, 'MEMBER')",
        [role, role],
    ).fetchone()
    if allowed and allowed[0]:
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        return True
    return False


@contextmanager
def tenant_transaction(conn: psycopg.Connection, tenant: str) -> Iterator[psycopg.Connection]:
    """A transaction whose kgrag.tenant setting is `tenant` (transaction-local, as RLS expects)."""
    with conn.transaction():
        conn.execute("SELECT set_config('kgrag.tenant', %s, true)", [validate_tenant(tenant)])
        yield conn

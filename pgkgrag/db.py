"""Connections: which server to use, and the tenant of every transaction."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from pgvector.psycopg import register_vector

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


def connect(dsn: str, *, autocommit: bool = False) -> psycopg.Connection:
    """Open a connection; the pgvector type is registered when the extension is installed."""
    try:
        conn = psycopg.connect(dsn, autocommit=autocommit)
    except psycopg.OperationalError as exc:
        raise KgragError(f"cannot connect to PostgreSQL: {str(exc).strip()}") from exc
    if conn.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone():
        register_vector(conn)
    if not autocommit:
        conn.rollback()
    return conn


@contextmanager
def tenant_transaction(conn: psycopg.Connection, tenant: str) -> Iterator[psycopg.Connection]:
    """A transaction whose kgrag.tenant setting is `tenant` (transaction-local, as RLS expects)."""
    with conn.transaction():
        conn.execute("SELECT set_config('kgrag.tenant', %s, true)", [validate_tenant(tenant)])
        yield conn

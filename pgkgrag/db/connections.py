"""Connections: which server to use, the role a command acts as, and the tenant of every transaction."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from pgkgrag.config import Config
from pgkgrag.db.schema_version import require_current
from pgkgrag.errors import KgragError
from pgkgrag.queries import Q

READER = "kgrag_reader"
WRITER = "kgrag_writer"
T = TypeVar("T", bound=Callable[..., Any])
# the API key a request of `pgkgrag serve` carries: its transactions name their tenant with it
_api_key: ContextVar[str | None] = ContextVar("kgrag_api_key", default=None)
_groups: ContextVar[list[str] | None] = ContextVar("kgrag_groups", default=None)


def transaction_retry(on_retry: Callable[[], None] | None = None) -> Callable[[T], T]:
    """The retry policy of database work, the one there is: a whole transaction (the decorated
    function opens it) runs again after a deadlock or a serialization failure, up to six times in
    all, after a short random wait that grows; any other error, or the sixth failure, is raised.
    on_retry is called before each new attempt (to count them)."""
    return retry(  # type: ignore[return-value]
        retry=retry_if_exception_type((psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)),
        stop=stop_after_attempt(6),
        wait=wait_random_exponential(multiplier=0.05, max=2),
        reraise=True,
        before_sleep=(lambda _: on_retry()) if on_retry is not None else None,
    )


def ensure_server(config: Config) -> str:
    """The DSN to use: KGRAG_DSN when set, else the embedded server's, started if it is not running."""
    if config.dsn:
        return config.dsn
    from pgkgrag.db.server import EmbeddedServer  # the embedded server's package only when it is used

    status, started = EmbeddedServer(config.home).start()
    if started:
        print(
            f"pgkgrag: started the embedded PostgreSQL (data in {status.data_dir}); "
            "it keeps running for the next commands, `pgkgrag db stop` stops it",
            file=sys.stderr,
        )
    return status.uri()


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
    if conn.execute(Q["vector_type_exists"]).fetchone():
        register_vector(conn)
    if role is not None:
        use_role(conn, role)
    if not autocommit:
        conn.commit()
    return conn


def use_role(conn: psycopg.Connection, role: str) -> bool:
    """SET ROLE to an application role if the login role may; return whether it did."""
    allowed = conn.execute(Q["may_use_role"], [role, role]).fetchone()
    if allowed and allowed[0]:
        conn.execute(sql.SQL(Q["set_role"]).format(role=sql.Identifier(role)))
        return True
    return False


def connect_app(dsn: str, role: str | None) -> psycopg.Connection:
    """A connection for an application command, as its role (None: the login role, for the schema
    owner's commands), after checking the schema revision."""
    conn = connect(dsn, role=role)
    try:
        require_current(conn)
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def acting_with_key(key: str | None, groups: Sequence[str] | None = None) -> Iterator[None]:
    """Within the block (this thread or task), every tenant_transaction names its tenant with the
    API key (kgrag.use_key; None: the login role's grant), so the database, not the caller, decides
    whether the key may act for it, and, given groups, narrows what it holds to them
    (kgrag.use_groups: the end user's groups, refused where the key does not hold one)."""
    token = _api_key.set(key)
    held = _groups.set(None if groups is None else list(groups))
    try:
        yield
    finally:
        _groups.reset(held)
        _api_key.reset(token)


@contextmanager
def tenant_transaction(conn: psycopg.Connection, tenant: str) -> Iterator[psycopg.Connection]:
    """A transaction acting for `tenant` (kgrag.use_tenant: checked against the login role's grants,
    and for this transaction only, as row-level security expects; inside acting_with_key,
    kgrag.use_key: checked against the key)."""
    key = _api_key.get()
    groups = _groups.get()
    with conn.transaction():
        if key is None:
            conn.execute(Q["use_tenant"], [tenant])
        else:
            conn.execute(Q["use_key"], [key, tenant])
        if groups is not None:
            conn.execute(Q["use_groups"], [groups])
        yield conn

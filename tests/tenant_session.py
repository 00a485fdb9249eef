"""A test connection that works for one tenant at a time, as a session-level tenant used to.

A tenant now lives one transaction (kgrag.use_tenant seals it), so each statement run through
TenantSession.execute is a transaction of its own that names the tenant first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg


class TenantSession:
    def __init__(self, conn: psycopg.Connection, tenant: str) -> None:
        self.conn = conn
        self.tenant = tenant

    def use(self, tenant: str) -> None:
        self.tenant = tenant

    def execute(self, query: Any, params: Sequence[Any] | None = None) -> psycopg.Cursor[Any]:
        with self.conn.transaction():
            self.conn.execute("SELECT kgrag.use_tenant(%s)", [self.tenant])
            return self.conn.execute(query, params)

    @contextmanager
    def acting(self) -> Iterator[psycopg.Connection]:
        """One transaction acting for the tenant, for several statements (a COPY, a cursor)."""
        with self.conn.transaction():
            self.conn.execute("SELECT kgrag.use_tenant(%s)", [self.tenant])
            yield self.conn

    def transaction(self) -> Any:
        return self.conn.transaction()

    def cursor(self) -> psycopg.Cursor[Any]:
        return self.conn.cursor()

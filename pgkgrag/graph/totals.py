"""What each tenant holds: the tenants listed (kgrag.tenants), one tenant's counts
(kgrag.graph_totals) and what of it is stale (kgrag.staleness)."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg.rows import class_row

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.errors import KgragError
from pgkgrag.queries import Q


@dataclass(frozen=True)
class GraphTotals:
    """How big a tenant's graph is now (kgrag.graph_totals)."""

    documents: int
    chunks: int
    entities: int
    edges: int
    communities: int
    reports: int


def graph_totals(conn: psycopg.Connection, tenant: str) -> GraphTotals:
    with tenant_transaction(conn, tenant), conn.cursor(row_factory=class_row(GraphTotals)) as cur:
        row = cur.execute(Q["graph_totals"]).fetchone()
    assert row is not None
    return row


@dataclass(frozen=True)
class Stale:
    """One kind of staleness (a row of kgrag.staleness)."""

    what: str
    how_many: int
    fix: str


def staleness(conn: psycopg.Connection, tenant: str) -> list[Stale]:
    with tenant_transaction(conn, tenant):
        return [Stale(*row) for row in conn.execute(Q["staleness"]).fetchall()]


def tenants(conn: psycopg.Connection) -> dict[str, GraphTotals]:
    """Every tenant that holds documents, with its counts."""
    with conn.transaction():
        names = [r[0] for r in conn.execute(Q["tenants"]).fetchall()]
    return {name: graph_totals(conn, name) for name in names}


def require_documents(conn: psycopg.Connection, tenant: str) -> GraphTotals:
    """The tenant's counts; a tenant without documents is an error that names the tenants there are."""
    totals = graph_totals(conn, tenant)
    if totals.documents:
        return totals
    with conn.transaction():
        listed = [f"{name} ({n} documents)" for name, n in conn.execute(Q["tenants"]).fetchall()]
    there = f"tenants with documents: {', '.join(listed)}" if listed else "no tenant has documents yet"
    raise KgragError(
        f"tenant {tenant!r} has no documents ({there}); pick one with --tenant or KGRAG_TENANT, "
        "or ingest documents for it first (`pgkgrag tenants` lists them)"
    )

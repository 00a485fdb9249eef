"""Searching the sample corpus (the session's demo database, tenant 'demo') from a test."""

from __future__ import annotations

import psycopg
from conftest import DEMO_TENANT

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.retrieval.results import SearchResult
from pgkgrag.retrieval.search import run_search


def ask(
    conn: psycopg.Connection, use: Embedder, question: str, route: str = "auto", k: int = 10, **options: object
) -> SearchResult:
    """run_search as the driver runs it, for the demo tenant."""
    return run_search(conn, DEMO_TENANT, use, question, route, k, options)


def sql(conn: psycopg.Connection, query: str, *params: object) -> list[tuple]:
    """One statement in a transaction acting for the demo tenant."""
    with tenant_transaction(conn, DEMO_TENANT):
        return conn.execute(query, list(params)).fetchall()  # type: ignore[arg-type]

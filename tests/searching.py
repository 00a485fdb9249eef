"""Searching from a test: the sample corpus (the session's demo database, tenant 'demo'), or any
tenant's chunks by a question vector."""

from __future__ import annotations

import numpy as np
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


def first_chunk(conn: psycopg.Connection, tenant: str, vector: np.ndarray) -> str:
    """The first chunk of the tenant's vector route for a question vector (of any model's dimension)."""
    with tenant_transaction(conn, tenant):
        found = conn.execute(
            "SELECT ref_id FROM kgrag.kgrag_search(%s, 'vector', k => 3) WHERE kind = 'chunk' ORDER BY rank", [vector]
        )
        return str(found.fetchall()[0][0])

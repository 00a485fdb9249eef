"""Searching from Python: embed the question with the tenant's embedder, call kgrag_search.

Nothing is decided here: the route, the ranking and the citations all come from SQL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import psycopg

from pgkgrag.config import Config
from pgkgrag.db import READER, resolve_dsn, tenant_transaction
from pgkgrag.embedders import DEFAULT_EMBEDDER, Embedder, get_embedder
from pgkgrag.migrations import connect_app


@dataclass(frozen=True)
class SearchRow:
    rank: int
    ref_id: str
    kind: str
    source: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True)
class SearchResult:
    route: str
    reason: str
    rows: list[SearchRow]

    def evidence(self) -> list[str]:
        """The chunk ids the rows cite, in rank order, once each."""
        seen: dict[str, None] = {}
        for row in self.rows:
            for ref in row.payload.get("evidence_refs", []):
                seen.setdefault(ref, None)
        return list(seen)

    def chunks(self) -> list[str]:
        """The chunk rows' ids, in rank order."""
        return [row.ref_id for row in self.rows if row.kind == "chunk"]


def tenant_embedder(conn: psycopg.Connection, tenant: str) -> Embedder:
    """The embedder the tenant's documents were embedded with."""
    with tenant_transaction(conn, tenant):
        row = conn.execute("SELECT kgrag.dimension(), kgrag.setting('embedder') #>> '{}'").fetchone()
    assert row is not None
    return get_embedder(row[1] or DEFAULT_EMBEDDER, row[0])


def run_search(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    question: str,
    route: str = "auto",
    k: int = 10,
    options: dict[str, Any] | None = None,
) -> SearchResult:
    vector = embedder.embed([question])[0]
    with tenant_transaction(conn, tenant):
        rows = conn.execute(
            "SELECT rank, ref_id, kind, source, score, payload FROM kgrag.kgrag_search(%s, %s, %s, %s, %s::jsonb)",
            [vector, route, question, k, json.dumps(options or {})],
        ).fetchall()
        decided = conn.execute(
            "SELECT current_setting('kgrag.last_route', true), current_setting('kgrag.last_reason', true)"
        ).fetchone()
    assert decided is not None
    return SearchResult(decided[0], decided[1], [SearchRow(*row) for row in rows])


def search(
    question: str, route: str = "auto", k: int = 10, *, tenant: str | None = None, options: dict[str, Any] | None = None
) -> SearchResult:
    """Search the configured database (KGRAG_DSN or the embedded server) as the configured tenant."""
    config = Config.from_env(tenant)
    with connect_app(resolve_dsn(config), READER) as conn:
        return run_search(conn, config.tenant, tenant_embedder(conn, config.tenant), question, route, k, options)

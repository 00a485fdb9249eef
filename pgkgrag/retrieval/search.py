"""Searching from Python: embed the question with the tenant's embedder, call kgrag_search.

Nothing is decided here: the route, the ranking, the context and the citations all come from SQL
(kgrag.kgrag_search, kgrag.context, kgrag.cited_chunks). The one stage SQL cannot run, an HTTP
reranker after fusion (pgkgrag.retrieval.reranking), runs here when the tenant configured one.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg.rows import class_row, dict_row

from pgkgrag.config import Config
from pgkgrag.db.connections import READER, connect_app, ensure_server, tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.queries import Q
from pgkgrag.retrieval.reranking import passages, rerank_rows, reranker
from pgkgrag.retrieval.results import CitedChunk, SearchResult, SearchRow


def run_search(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    question: str,
    route: str = "auto",
    k: int = 10,
    options: dict[str, Any] | None = None,
) -> SearchResult:
    vector = embedder.embed_queries([question])[0]
    with tenant_transaction(conn, tenant):
        reranking = reranker(conn)
        asked = max(k, reranking.candidates) if reranking else k
        params = [vector, route, question, asked, json.dumps(options or {})]
        with conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(Q["kgrag_search"], params).fetchall()
            # every row carries the route and the reason; an empty answer leaves them in the settings
            decided = rows[0] if rows else cur.execute(Q["last_search"]).fetchone()
        assert decided is not None
        found = [SearchRow(r["rank"], r["ref_id"], r["kind"], r["source"], r["score"], r["payload"]) for r in rows]
        texts = passages(conn, found) if reranking and found else {}
    if reranking is None or not found:
        return SearchResult(decided["route"], decided["reason"], found)
    reranked = rerank_rows(reranking, question, found, texts, k)  # after the transaction: an HTTP call
    return SearchResult(decided["route"], f"{decided['reason']}; {reranked.note}", reranked.rows)


def context(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    question: str,
    route: str = "auto",
    k: int = 10,
    max_chars: int = 4000,
    options: dict[str, Any] | None = None,
) -> str:
    """The context block an LLM would get for the question (kgrag.context): empty when nothing answers it."""
    vector = embedder.embed_queries([question])[0]
    with tenant_transaction(conn, tenant):
        row = conn.execute(Q["context"], [vector, route, question, max_chars, k, json.dumps(options or {})]).fetchone()
    return row[0] if row else ""


def routes(conn: psycopg.Connection) -> list[str]:
    """The routes kgrag_search can take besides auto, in SQL's order (kgrag.routes)."""
    return [r[0] for r in conn.execute(Q["routes"]).fetchall()]


def cited_chunks(conn: psycopg.Connection, tenant: str, refs: list[str]) -> list[CitedChunk]:
    """The chunks the references name, in order, once each; references that do not resolve are left out."""
    with tenant_transaction(conn, tenant), conn.cursor(row_factory=class_row(CitedChunk)) as cur:
        return cur.execute(Q["cited_chunks"], [refs]).fetchall()


def search(
    question: str, route: str = "auto", k: int = 10, *, tenant: str | None = None, options: dict[str, Any] | None = None
) -> SearchResult:
    """One search of the configured database (KGRAG_DSN or the embedded server) as the configured
    tenant: connects, loads the embedder and searches, every time."""
    config = Config.from_env(tenant)
    with connect_app(ensure_server(config), READER) as conn:
        return run_search(conn, config.tenant, tenant_embedder(conn, config.tenant), question, route, k, options)

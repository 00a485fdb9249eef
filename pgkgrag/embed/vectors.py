"""Embedding what the database holds: the tenant's embedder, and the vectors SQL asks for.

What an entity is embedded from, which rows lack a vector and whether a vector may still be
stored are decided in SQL (kgrag.embedding_todo, kgrag.store_embeddings, kgrag.use_embedder);
this module only runs the model on the texts SQL hands out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import psycopg

from pgkgrag.db.connections import tenant_transaction, transaction_retry
from pgkgrag.embed.embedders import Embedder, get_embedder
from pgkgrag.queries import Q

ProgressCallback = Callable[[str, int], None]  # (what, how many were just done)
Kind = Literal["entity", "report"]


def tenant_embedder(
    conn: psycopg.Connection,
    tenant: str,
    requested: str | None = None,
    load: Callable[[str, int], Embedder] = get_embedder,
) -> Embedder:
    """The embedder `requested`, else the one the tenant's vectors were made with (setting embedder),
    made by `load` (name, dimension): get_embedder, or a server's cache of loaded models."""
    with tenant_transaction(conn, tenant):
        row = conn.execute(Q["tenant_embedder"]).fetchone()
    assert row is not None
    dimension, recorded = row
    return load(requested or recorded, dimension)


def use_embedder(conn: psycopg.Connection, tenant: str, embedder: Embedder) -> None:
    """Record the tenant's embedder; refused (by kgrag.use_embedder) once it embedded with another."""
    with tenant_transaction(conn, tenant):
        conn.execute(Q["use_embedder"], [embedder.name, embedder.dim])


def embed_pending(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    kind: Kind,
    *,
    batch: int = 256,
    progress: ProgressCallback | None = None,
) -> int:
    """Embed the tenant's entities or reports that have no vector (kgrag.embedding_todo,
    kgrag.store_embeddings), a page at a time (embed_pages). Returns how many were embedded."""
    todo = (Q["embedding_todo"], [kind])
    store = (Q["store_embeddings"], [kind])
    return embed_pages(conn, tenant, embedder, todo, store, f"{kind} embeddings", batch=batch, progress=progress)


Call = tuple[str, list[Any]]  # a query and its leading parameters


def embed_pages(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    todo: Call,
    store: Call,
    label: str,
    *,
    batch: int,
    progress: ProgressCallback | None = None,
) -> int:
    """Embed what SQL hands out, a page at a time: the todo query (its parameters, then the last id
    of the page before and the page size) read in one transaction, the texts embedded with none
    open (no lock held while the model runs), the vectors stored by the store query (its
    parameters, then ids, vectors and text hashes) in another, retried on a deadlock or a
    serialization failure (SQL stores only what still has the text that was embedded). Progress
    hears (label, how many were just stored). Returns how many were embedded."""
    done, after = 0, None
    while True:
        with tenant_transaction(conn, tenant):
            rows = conn.execute(todo[0], [*todo[1], after, batch]).fetchall()
        if not rows:
            return done
        ids, texts, hashes = (list(column) for column in zip(*rows, strict=True))
        _store(conn, tenant, store[0], [*store[1], ids, list(embedder.embed(texts)), hashes])
        done += len(rows)
        after = ids[-1]
        if progress is not None:
            progress(label, len(rows))


@transaction_retry()
def _store(conn: psycopg.Connection, tenant: str, query: str, params: list[Any]) -> None:
    with tenant_transaction(conn, tenant):
        conn.execute(query, params)

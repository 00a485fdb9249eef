"""Moving a tenant to another embedder (`pgkgrag reembed`).

What lacks a vector of the new model, where those vectors wait, and the switch are SQL's
(kgrag.reembed_todo, kgrag.reembed_store, kgrag.reembed_switch); this module runs the model on
the texts SQL hands out, a page at a time, with no transaction open while it runs, so searches
and ingestion go on. A run that stops keeps every page it stored and resumes from there.
"""

from __future__ import annotations

from typing import Any, Literal

import psycopg

from pgkgrag.db.connections import tenant_transaction, transaction_retry
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import ProgressCallback
from pgkgrag.errors import KgragError
from pgkgrag.queries import Q

Kind = Literal["chunk", "entity", "report"]
KINDS: tuple[Kind, ...] = ("chunk", "entity", "report")
SWITCH_ATTEMPTS = 3  # texts that change during a run are embedded again before each attempt


def reembed(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    *,
    batch: int = 64,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Embed every chunk, entity and report of the tenant with `embedder` beside the vectors in
    use, then switch to it in one transaction. Returns what the switch reports, with `embedded`
    (how many texts this run embedded)."""
    embedded = 0
    for attempt in range(SWITCH_ATTEMPTS):
        for kind in KINDS:
            embedded += _embed_kind(conn, tenant, embedder, kind, batch, progress)
        try:
            with tenant_transaction(conn, tenant):
                row = conn.execute(Q["reembed_switch"], [embedder.name, embedder.dim]).fetchone()
        except psycopg.errors.ObjectNotInPrerequisiteState:
            if attempt + 1 == SWITCH_ATTEMPTS:
                raise
            continue  # texts changed meanwhile: embed them and try again
        assert row is not None
        return {**row[0], "embedded": embedded}
    raise KgragError("unreachable")  # pragma: no cover


def _embed_kind(
    conn: psycopg.Connection, tenant: str, embedder: Embedder, kind: Kind, batch: int, progress: ProgressCallback | None
) -> int:
    done, after = 0, None
    while True:
        with tenant_transaction(conn, tenant):
            rows = conn.execute(Q["reembed_todo"], [embedder.name, kind, after, batch]).fetchall()
        if not rows:
            return done
        ids, texts, hashes = (list(column) for column in zip(*rows, strict=True))
        _store(conn, tenant, embedder, kind, ids, list(embedder.embed(texts)), hashes)
        done += len(rows)
        after = ids[-1]
        if progress is not None:
            progress(f"{kind} vectors ({embedder.name})", len(rows))


@transaction_retry()
def _store(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    kind: Kind,
    ids: list[str],
    vectors: list[Any],
    hashes: list[str],
) -> None:
    with tenant_transaction(conn, tenant):
        conn.execute(Q["reembed_store"], [embedder.name, embedder.dim, kind, ids, vectors, hashes])

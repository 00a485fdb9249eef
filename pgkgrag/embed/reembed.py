"""Moving a tenant to another embedder (`pgkgrag reembed`).

What lacks a vector of the new model, where those vectors wait, and the switch are SQL's
(kgrag.reembed_todo, kgrag.reembed_store, kgrag.reembed_switch); this module runs the model on
the texts SQL hands out, a page at a time, with no transaction open while it runs, so searches
and ingestion go on. A run that stops keeps every page it stored and resumes from there.
"""

from __future__ import annotations

from typing import Any, Literal

import psycopg

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import ProgressCallback, embed_pages
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
    embedded, attempt = 0, 0
    while True:
        attempt += 1
        for kind in KINDS:
            embedded += _embed_kind(conn, tenant, embedder, kind, batch, progress)
        try:
            with tenant_transaction(conn, tenant):
                row = conn.execute(Q["reembed_switch"], [embedder.name, embedder.dim]).fetchone()
        except psycopg.errors.ObjectNotInPrerequisiteState:
            if attempt == SWITCH_ATTEMPTS:
                raise
            continue  # texts changed meanwhile: embed them and try again
        assert row is not None
        return {**row[0], "embedded": embedded}


def _embed_kind(
    conn: psycopg.Connection, tenant: str, embedder: Embedder, kind: Kind, batch: int, progress: ProgressCallback | None
) -> int:
    todo = (Q["reembed_todo"], [embedder.name, kind])
    store = (Q["reembed_store"], [embedder.name, embedder.dim, kind])
    label = f"{kind} vectors ({embedder.name})"
    return embed_pages(conn, tenant, embedder, todo, store, label, batch=batch, progress=progress)

"""Small helpers that write test corpora straight into the tables (no ingestion pipeline)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import psycopg
from tenant_session import TenantSession


def _raw(conn: psycopg.Connection | TenantSession) -> psycopg.Connection:
    return conn.conn if isinstance(conn, TenantSession) else conn


def add_chunks(
    conn: psycopg.Connection | TenantSession,
    tenant: str,
    texts: dict[str, str],
    *,
    lang: str = "english",
    vectors: Sequence[np.ndarray] | None = None,
) -> None:
    """One document per text, with one chunk each: doc_id -> text."""
    conn = _raw(conn)
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT kgrag.use_tenant(%s)", [tenant])
        cur.executemany(
            "INSERT INTO kgrag.document (tenant_id, doc_id, title, lang, content_hash)"
            " VALUES (%s, %s, %s, %s::regconfig, md5(%s))",
            [(tenant, doc, doc, lang, text) for doc, text in texts.items()],
        )
        rows = [
            (tenant, f"{doc}#0", doc, len(text), text, text, lang, None if vectors is None else vectors[i])
            for i, (doc, text) in enumerate(texts.items())
        ]
        cur.executemany(
            "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text,"
            " content_hash, lang, embedding, quantized)"
            " VALUES (%s, %s, %s, 0, 0, %s, %s, md5(%s), %s::regconfig, %s, kgrag.quantize(%s::vector))",
            [(*row, row[-1]) for row in rows],
        )


def add_entity(
    conn: psycopg.Connection | TenantSession, tenant: str, etype: str, name: str, *aliases: str, degree: int = 1
) -> str:
    conn = _raw(conn)
    with conn.transaction():
        conn.execute("SELECT kgrag.use_tenant(%s)", [tenant])
        return _add_entity(conn, tenant, etype, name, aliases, degree)


def _add_entity(
    conn: psycopg.Connection, tenant: str, etype: str, name: str, aliases: tuple[str, ...], degree: int
) -> str:
    (entity_id,) = conn.execute(
        "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type, degree)"
        " VALUES (%s, kgrag.entity_key(%s, %s), %s, %s, %s) RETURNING entity_id",
        [tenant, etype, name, name, etype, degree],
    ).fetchone()  # type: ignore[misc]
    for alias in (name, *aliases):
        conn.execute(
            "INSERT INTO kgrag.alias (tenant_id, entity_id, alias) VALUES (%s, %s, %s)", [tenant, entity_id, alias]
        )
    return str(entity_id)


def add_mesh(admin: psycopg.Connection, tenant: str, ids: Sequence[str], *, hub: str | None = None) -> None:
    """Entities `ids`, every ordered pair linked by co-occurrence (and, with `hub`, an existing
    entity, that one to each of them both ways): a graph whose breadth-first walk still follows
    len(ids) ** 2 edges at its second hop, for the tests of a walk's budgets. Written by the
    installing superuser without the foreign-key triggers (session_replication_role = replica),
    which would take most of a minute for 600 entities; every key written exists."""
    with admin.transaction():
        admin.execute("SET LOCAL session_replication_role = replica")
        admin.execute(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type, degree)"
            " SELECT %s, x, x, 'k', %s FROM unnest(%s::text[]) AS x",
            [tenant, len(ids) - 1, list(ids)],
        )
        linked = [*ids, hub] if hub else list(ids)
        admin.execute(
            "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight) SELECT %s, a, b, 'CO_OCCURS', 1"
            " FROM unnest(%s::text[]) AS a, unnest(%s::text[]) AS b WHERE a <> b",
            [tenant, linked, linked],
        )

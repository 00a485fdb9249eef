"""What the graph says of one entity (`pgkgrag show`): its card from kgrag.entities and its
strongest edges from kgrag.edges. The entity is found by id, name or alias in SQL."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg.rows import class_row, dict_row

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.queries import Q


@dataclass(frozen=True)
class EntityCard:
    entity_id: str
    name: str
    type: str
    description: str
    aliases: list[str]
    degree: int
    answer: str | None
    answer_chunk_id: str | None
    community_title: str | None
    answer_stale: bool
    no_community: bool
    edges: list[CardEdge]


@dataclass(frozen=True)
class CardEdge:
    """One of an entity's strongest edges, as kgrag.edges shows it."""

    src_name: str
    rel: str
    dst_name: str
    weight: float
    evidence_chunk_id: str | None


def entity_card(conn: psycopg.Connection, tenant: str, name: str) -> EntityCard:
    with tenant_transaction(conn, tenant), conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(Q["entity_card"], [name]).fetchone()
        assert row is not None  # kgrag.resolve_entities raised for a name no entity has
        edges = conn.cursor(row_factory=class_row(CardEdge)).execute(Q["entity_edges"], {"id": row["entity_id"]})
        return EntityCard(**row, edges=edges.fetchall())

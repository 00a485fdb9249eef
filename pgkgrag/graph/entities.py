"""What the graph says of one entity (`pgkgrag show`): its card from kgrag.entities and its
strongest edges from kgrag.edges. The entity is found by id, name or alias in SQL."""

from __future__ import annotations

from dataclasses import dataclass, fields

import psycopg

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
    edges: list[tuple[str, str, str, float, str | None]]  # src name, rel, dst name, weight, evidence chunk


def entity_card(conn: psycopg.Connection, tenant: str, name: str) -> EntityCard:
    with tenant_transaction(conn, tenant):
        row = conn.execute(Q["entity_card"], [name]).fetchone()
        assert row is not None  # kgrag.resolve_entities raised for a name no entity has
        edges = conn.execute(Q["entity_edges"], {"id": row[0]}).fetchall()
    columns = [f.name for f in fields(EntityCard) if f.name != "edges"]  # entity_card's columns, in order
    return EntityCard(**dict(zip(columns, row, strict=True)), edges=[tuple(e) for e in edges])

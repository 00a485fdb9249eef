"""The local route's graph list: the chunks citing the reached entities, ranked by the hop of the
nearest entity they cite, then by how many reached entities they cite, then by chunk id; a hub's
chunks bounded by the setting graph_chunks_per_entity, with the other lists' chunks always ranked."""

from __future__ import annotations

import pytest
from corpus import add_chunks, add_entity
from tenant_session import TenantSession

SEED, HUB = "service:saturn service", "cluster:hub cluster"
QUESTION = "Hub Cluster zebra crossing after midnight"


@pytest.fixture
def hub(tconn: TenantSession) -> dict[str, set[str]]:
    """A hub cited by 40 chunks (one of them the only one about zebras), a seed cited by 3 (one of
    them citing the hub too), an edge between them. Returns chunk id -> the entities it cites."""
    texts = {f"h{i:02d}": f"Hub Cluster log entry {i}" for i in range(40)}
    texts["h35"] = "Hub Cluster zebra crossing after midnight"
    texts |= {f"s{i}": f"Saturn Service note {i}" for i in range(3)}
    add_chunks(tconn, "t1", texts)
    add_entity(tconn, "t1", "Service", "Saturn Service")
    add_entity(tconn, "t1", "Cluster", "Hub Cluster")
    cites = {f"{doc}#0": {HUB} for doc in texts if doc.startswith("h")}
    cites |= {f"s{i}#0": {SEED} for i in range(3)}
    cites["s1#0"] = {SEED, HUB}
    with tconn.acting() as conn:
        for chunk, entities in cites.items():
            for entity in entities:
                conn.execute(
                    "INSERT INTO kgrag.mention (tenant_id, entity_id, chunk_id) VALUES ('t1', %s, %s)", [entity, chunk]
                )
        for src, dst in ((SEED, HUB), (HUB, SEED)):
            conn.execute(
                "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight) VALUES ('t1', %s, %s, 'CO_OCCURS', 1)",
                [src, dst],
            )
    return cites


def graph_ranks(tconn: TenantSession, per_entity: int | None) -> dict[str, int]:
    """The graph rank (payload.ranks.graph) of each chunk the local route returns, with the setting."""
    tconn.execute("DELETE FROM kgrag.settings WHERE tenant_id = 't1' AND key = 'graph_chunks_per_entity'")
    if per_entity is not None:
        tconn.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'graph_chunks_per_entity', %s)",
            [str(per_entity)],
        )
    rows = tconn.execute(
        "SELECT ref_id, (payload -> 'ranks' ->> 'graph')::integer FROM kgrag.kgrag_search(NULL, 'local', %s, 60)"
        " WHERE kind = 'chunk'",
        [QUESTION],
    ).fetchall()
    assert all(rank is not None for _, rank in rows)  # only the graph and lexical lists: every chunk is the graph's
    return dict(rows)


def expected(cites: dict[str, set[str]], ranked: set[str]) -> dict[str, int]:
    """The list over the chunks ranked: the hub (the seed, hop 0) first, then those citing more of
    the two, then by chunk id."""
    hop = {HUB: 0, SEED: 1}
    order = sorted(ranked, key=lambda c: (min(hop[e] for e in cites[c]), -len(cites[c]), c))
    return {chunk: i + 1 for i, chunk in enumerate(order)}


def lexical(tconn: TenantSession) -> set[str]:
    rows = tconn.execute("SELECT chunk_id FROM kgrag.search_chunks_lexical(%s, 60, 'any', NULL, 0.5)", [QUESTION])
    return {r[0] for r in rows}


def test_unbounded_the_list_ranks_every_citing_chunk(tconn: TenantSession, hub: dict[str, set[str]]) -> None:
    found = graph_ranks(tconn, 1000)
    assert found == expected(hub, set(hub)) and len(found) == 43
    assert found["s1#0"] == 1  # cites both: first among the hub's chunks


def test_a_hub_contributes_its_first_chunks_and_those_other_lists_hold(
    tconn: TenantSession, hub: dict[str, set[str]]
) -> None:
    """With 3 chunks per entity the hub's chunks in the list are its first three by id and the one
    about zebras (lexical search found it); ranks follow the same order over those only, each
    chunk's entities all counted (s1, third of the seed's, cites the hub too and comes first)."""
    assert lexical(tconn) == {"h35#0"}
    found = graph_ranks(tconn, 3)
    assert found == expected(hub, {"h00#0", "h01#0", "h02#0", "s0#0", "s1#0", "s2#0", "h35#0"})
    assert found["s1#0"] == 1 and found["h35#0"] == 5
    assert graph_ranks(tconn, None) == graph_ranks(tconn, 100)  # the default: 100

"""Community detection: hierarchical Leiden (graspologic-native, the Rust Leiden of Microsoft
GraphRAG) on each of the tenant's co-occurrence graphs apart (kgrag_private.community_graph: the
shared one and each audience's), seeded; SQL stores the result (kgrag_private.replace_communities:
a community's id is its level and members, so a community that keeps its members keeps its id and
its report).

Two ways, with the same settings (community_seed, community_resolution, community_max_size):
- **fresh**: every level from scratch (graspologic's hierarchical_leiden): the same graph always gives
  the same communities, whatever came before. The first build, and `pgkgrag build --fresh`.
- **from the current communities** (the default once a tenant has some): each level's Leiden starts
  from the communities its nodes are in now, and every community no change reached (not stale:
  kgrag_private.refresh_graph marks those holding an entity a write touched) is kept as it is; the
  other nodes take the communities Leiden gives them. Leiden from scratch draws every node's order
  anew: one sentence added to one of 300 documents rewrote 93-143 of ~290 reports that way, 7-18 this
  way (docs/benchmarks.md, "One changed document"). What this way gives depends on where it started:
  a fresh build of the same graph may group some nodes otherwise (the benchmark compares their
  modularity).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count
from typing import Any

import psycopg
from pydantic import BaseModel, ConfigDict

from pgkgrag.extras import missing
from pgkgrag.ingest import staging
from pgkgrag.queries import Q

Edge = tuple[str, str, float]
Row = tuple[str, int, int, int | None]  # node, level, cluster, parent cluster (as hierarchical_leiden's)


class CommunityCounts(BaseModel):
    """What kgrag_private.replace_communities() returns."""

    model_config = ConfigDict(extra="forbid")
    communities: int
    new: int
    removed: int


@dataclass(frozen=True)
class Leiden:
    gn: Any  # the graspologic_native module
    seed: int
    resolution: float
    max_size: int

    def partition(self, edges: list[Edge], start: dict[str, int] | None) -> dict[str, int]:
        _, membership = self.gn.leiden(
            edges,
            starting_communities=start,
            resolution=self.resolution,
            randomness=0.001,
            use_modularity=True,
            seed=self.seed,
        )
        return dict(membership)

    def fresh(self, edges: list[Edge]) -> list[Row]:
        clusters = self.gn.hierarchical_leiden(
            edges,
            resolution=self.resolution,
            randomness=0.001,
            use_modularity=True,
            max_cluster_size=self.max_size,
            seed=self.seed,
        )
        return [(c.node, c.level, c.cluster, c.parent_cluster) for c in clusters]

    def from_current(self, edges: list[Edge], current: Current) -> list[Row]:
        """Hierarchical Leiden as graspologic's (a community of max_size members or more is split
        again, on its own subgraph, one level down), each level starting from the current
        communities. A current community no change reached (not stale, its members all still in the
        community being split) stays whole: at this level as it is; below, whole where Leiden put
        most of its members. The other nodes take the communities Leiden gives them, less the kept
        ones' members (a changed node Leiden puts with a kept community stands beside it)."""
        rows: list[Row] = []
        numbers = count()

        def split(group: list[str], group_edges: list[Edge], level: int, parent: int | None) -> None:
            unit = current.units(group, level)
            membership = self.partition(group_edges, current.start(level, group_edges)) if group_edges else {}
            # each unit where Leiden put most of its members (then the lowest cluster: a fixed order)
            placed: dict[str, Counter[int]] = defaultdict(Counter)
            for node in group:
                if node in membership:
                    placed[unit[node]][membership[node]] += 1
            cluster_of = {u: min(c.items(), key=lambda p: (-p[1], p[0]))[0] for u, c in placed.items()}
            found: dict[tuple[str, object], list[str]] = defaultdict(list)
            for node in group:
                if unit[node] == current.community(node, level):
                    found["kept", unit[node]].append(node)
                elif unit[node] in cluster_of:  # (beside a kept community Leiden put it with: apart)
                    found["leiden", cluster_of[unit[node]]].append(node)
                else:
                    found["unit", unit[node]].append(node)  # no edge inside the group: alone
            groups = sorted(found.values())
            if parent is not None and len(groups) == 1:
                return  # nothing to split: the parent is final
            child = {node: n for n, members in enumerate(groups) if len(members) >= self.max_size for node in members}
            inner: dict[int, list[Edge]] = defaultdict(list)
            for edge in group_edges:  # each edge to the community below that holds both its ends
                n = child.get(edge[0])
                if n is not None and n == child.get(edge[1]):
                    inner[n].append(edge)
            for n, members in enumerate(groups):
                cluster = next(numbers)
                rows.extend((node, level, cluster, parent) for node in members)
                if len(members) >= self.max_size:
                    split(members, inner[n], level + 1, cluster)

        split(sorted({node for edge in edges for node in edge[:2]}), edges, 0, None)
        return rows


@dataclass(frozen=True)
class Current:
    """The communities now: each entity's by level, each community's members, the stale ones (those a
    change reached: kgrag_private.refresh_graph marks them)."""

    levels: dict[str, dict[int, str]]
    members: dict[str, frozenset[str]]
    stale: frozenset[str]

    def community(self, node: str, level: int) -> str | None:
        return self.levels.get(node, {}).get(level)

    def holds_any(self, edges: list[Edge]) -> bool:
        return any(edge[0] in self.levels or edge[1] in self.levels for edge in edges)

    def units(self, group: list[str], level: int) -> dict[str, str]:
        """What each node stays with at this level: the largest community of this level or below
        holding it that no change reached and whose members are all in the group, else the node
        alone (an entity id holds a colon, a community id none)."""
        inside = set(group)
        usable: dict[str, bool] = {}
        out: dict[str, str] = {}
        for node in group:
            out[node] = node
            held = self.levels.get(node, {})
            for community in (held[at] for at in sorted(held) if at >= level):
                if community not in usable:
                    usable[community] = community not in self.stale and self.members[community] <= inside
                if usable[community]:
                    out[node] = community
                    break
        return out

    def start(self, level: int, edges: list[Edge]) -> dict[str, int] | None:
        """Each node's current community at this level as a number (in the order of their ids), a node
        that has none alone; None when no node has one (Leiden from scratch)."""
        nodes = sorted({node for edge in edges for node in edge[:2]})
        held = {node: c for node in nodes if (c := self.community(node, level)) is not None}
        if not held:
            return None
        numbered = {community: n for n, community in enumerate(sorted(set(held.values())))}
        alone = (len(numbered) + n for n in count())
        return {node: numbered[held[node]] if node in held else next(alone) for node in nodes}


def _current(conn: psycopg.Connection) -> Current:
    """The communities the caller sees now (kgrag_private.community_partition)."""
    levels: dict[str, dict[int, str]] = defaultdict(dict)
    members: dict[str, set[str]] = defaultdict(set)
    stale: set[str] = set()
    for entity_id, level, community_id, is_stale in conn.execute(Q["community_partition"]).fetchall():
        levels[entity_id][level] = community_id
        members[community_id].add(entity_id)
        if is_stale:
            stale.add(community_id)
    return Current(dict(levels), {c: frozenset(nodes) for c, nodes in members.items()}, frozenset(stale))


def _graphs(conn: psycopg.Connection) -> Iterator[list[Edge]]:
    graphs: dict[str, list[Edge]] = {}
    for graph, src, dst, weight in conn.execute(Q["community_graph"]).fetchall():
        graphs.setdefault(graph, []).append((src, dst, float(weight)))
    for graph in sorted(graphs):
        yield graphs[graph]


def detect_communities(conn: psycopg.Connection, *, fresh: bool = False) -> CommunityCounts:
    """Detect the communities of each of the tenant's graphs the caller sees, alone, from scratch
    (fresh, or when there are none yet) or from the current ones, and store them (in the caller's
    transaction)."""
    try:
        import graspologic_native as gn
    except ImportError as exc:
        raise missing("graph") from exc
    row = conn.execute(Q["community_settings"]).fetchone()
    assert row is not None
    leiden = Leiden(gn, *row)
    current = None if fresh else _current(conn)
    rows: list[Row] = []
    for edges in _graphs(conn):  # a graph none of whose nodes is in a community yet: from scratch
        found = leiden.from_current(edges, current) if current and current.holds_any(edges) else leiden.fresh(edges)
        # each graph's cluster numbers after the previous graphs' (a cluster is (level, number))
        offset = 1 + max((r[2] for r in rows), default=-1)
        rows += [(node, level, c + offset, None if p is None else p + offset) for node, level, c, p in found]
    staging.begin(conn)
    staging.copy_rows(conn, staging.CLUSTERS, rows)
    counts = conn.execute(Q["replace_communities"]).fetchone()
    assert counts is not None
    return CommunityCounts.model_validate(counts[0])

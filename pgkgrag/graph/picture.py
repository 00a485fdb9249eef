"""A picture of one k-hop neighbourhood: an SVG, alone or in a self-contained HTML page.

What is drawn is kgrag.neighbourhood's answer (each node with the edge that reached it, and that
edge's evidence); this module only lays it out. The seed is in the middle and each hop on its own
ring, as igraph's circular Reingold-Tilford layout places a tree: each node's sector of its ring
holds the nodes it reached, so the edges that reached them do not cross (the nodes in the order
SQL gives them, hop then entity_id: the same graph always gives the same picture). A stated
relation is a solid line with an arrowhead in its own direction and its type written on it; two
edges between the same pair are drawn apart; co-occurrence is dashed. Names are placed one after
the other, each at the first spot of a fixed list around its node that no label before it holds,
then each relation's type on its own edge, at the first free spot along it, so no two labels
overlap. Hovering a node shows its id; hovering an edge shows its evidence quote and chunk.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.errors import KgragError
from pgkgrag.extras import missing
from pgkgrag.queries import Q

CHAR_WIDTH = 7.2  # px per character of 12 px sans-serif, generous: a label's box holds its text
LINE_HEIGHT = 15
RING = 170
MARGIN = 150
COLOURS = ("#c0392b", "#2471a3", "#7d8c8d", "#aab7b8")  # seed, hop 1, hop 2, hop 3 and more
Box = tuple[float, float, float, float]  # x, y (top left), width, height


@dataclass(frozen=True)
class Node:
    entity_id: str
    name: str
    hop: int


@dataclass(frozen=True)
class Edge:
    src: str
    rel: str
    dst: str
    chunk_id: str | None
    quote: str | None


def neighbourhood(
    conn: psycopg.Connection,
    tenant: str,
    seed: str,
    hops: int = 2,
    degree_cap: int | None = 4,
    relations: list[str] | None = None,
    direction: str = "out",
) -> tuple[list[Node], list[Edge]]:
    """The nodes (seed by id, name or alias) and, for each, the step that reached it."""
    with tenant_transaction(conn, tenant), conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(Q["neighbourhood"], [[seed], hops, degree_cap, relations, direction]).fetchall()
    nodes = [Node(r["entity_id"], r["name"], r["hop"]) for r in rows]
    edges = {
        Edge(r["src"], r["rel"], r["dst"], r["evidence_chunk_id"], r["evidence_quote"])
        for r in rows
        if r["src"] is not None
    }
    return nodes, sorted(edges, key=lambda e: (e.src, e.dst, e.rel))


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _place(text: str, x: float, y: float, gap: float, taken: list[Box]) -> Box:
    """The first free box for `text` around (x, y): below, above, right, left, then further out."""
    width, height = len(text) * CHAR_WIDTH + 6, LINE_HEIGHT + 2
    for step in range(40):
        reach = gap + step * (height + 2)
        for dx, dy in (
            (-width / 2, reach),
            (-width / 2, -reach - height),
            (reach, -height / 2),
            (-reach - width, -height / 2),
        ):
            box = (x + dx, y + dy, width, height)
            if not any(_overlaps(box, other) for other in taken):
                taken.append(box)
                return box
    box = (x - width / 2, max(b[1] + b[3] for b in taken) + 2, width, height)  # below everything
    taken.append(box)
    return box


def _label(box: Box, text: str, css: str, tooltip: str) -> str:
    x, y, width, height = box
    return (
        f'<g class="{css}" data-box="{x:.1f},{y:.1f},{width:.1f},{height:.1f}"><title>{html.escape(tooltip)}</title>'
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" rx="3"/>'
        f'<text x="{x + width / 2:.1f}" y="{y + height - 5:.1f}" text-anchor="middle">{html.escape(text)}</text></g>'
    )


def _positions(nodes: list[Node], edges: list[Edge]) -> dict[str, tuple[float, float]]:
    """Each node's place: the seed (hop 0) in the middle, hop h on the circle of radius h * RING,
    the nodes a node reached in its sector (igraph's circular Reingold-Tilford tree layout over
    the edge that reached each node)."""
    try:
        import igraph
    except ImportError as exc:
        raise missing("graph") from exc
    index = {n.entity_id: i for i, n in enumerate(nodes)}
    hop = {n.entity_id: n.hop for n in nodes}
    tree: list[tuple[int, int]] = []
    for node in nodes:
        parents = sorted(
            (e.dst if e.src == node.entity_id else e.src)
            for e in edges
            if node.entity_id in (e.src, e.dst) and hop.get(e.dst if e.src == node.entity_id else e.src) == node.hop - 1
        )
        if parents:
            tree.append((index[parents[0]], index[node.entity_id]))
    graph = igraph.Graph(n=len(nodes), edges=tree, directed=False)
    roots = [index[n.entity_id] for n in nodes if n.hop == 0]
    coords = graph.layout_reingold_tilford_circular(root=roots).coords if len(nodes) > 1 else [(0.0, 0.0)]
    deepest = max(n.hop for n in nodes)
    centre = deepest * RING + MARGIN
    placed = {}
    for node, (x, y) in zip(nodes, coords, strict=True):
        length = math.hypot(x, y)
        scale = node.hop * RING / length if length else 0.0  # exactly on the node's ring
        placed[node.entity_id] = (centre + x * scale, centre + y * scale)
    return placed


def _on_edge(text: str, a: tuple[float, float], b: tuple[float, float], taken: list[Box]) -> Box:
    """The first free box for a relation's type centred on its edge, from the middle outwards;
    beside the middle when the whole edge is taken."""
    width, height = len(text) * CHAR_WIDTH + 6, LINE_HEIGHT + 2
    for t in sorted((i / 40 for i in range(4, 37)), key=lambda t: (abs(t - 0.5), t)):
        x, y = a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t
        box = (x - width / 2, y - height / 2, width, height)
        if not any(_overlaps(box, other) for other in taken):
            taken.append(box)
            return box
    return _place(text, (a[0] + b[0]) / 2, (a[1] + b[1]) / 2, 2, taken)


def _apart(edges: list[Edge]) -> dict[Edge, float]:
    """How far (px, across the line) each edge is drawn from the straight line between its ends:
    0 for the only edge of a pair, else side by side."""
    pairs: dict[tuple[str, str], list[Edge]] = {}
    for edge in edges:
        pairs.setdefault((min(edge.src, edge.dst), max(edge.src, edge.dst)), []).append(edge)
    return {
        edge: (i - (len(group) - 1) / 2) * (LINE_HEIGHT + 5) for group in pairs.values() for i, edge in enumerate(group)
    }


def svg(nodes: list[Node], edges: list[Edge]) -> str:
    """The picture as an SVG document."""
    if not nodes:
        raise KgragError("nothing to draw: the neighbourhood is empty")
    deepest = max(n.hop for n in nodes)
    size = 2 * (deepest * RING + MARGIN)
    where = _positions(nodes, edges)
    radius = {n.entity_id: 14.0 if n.hop == 0 else 9.0 for n in nodes}
    legend_box: Box = (10, 10, 190, 112)
    taken: list[Box] = [legend_box] + [
        (x - radius[i], y - radius[i], 2 * radius[i], 2 * radius[i]) for i, (x, y) in where.items()
    ]
    lines, labels = [], []
    drawn: dict[Edge, tuple[tuple[float, float], tuple[float, float]]] = {}
    offsets = _apart(edges)
    for edge in edges:
        (x1, y1), (x2, y2) = where[edge.src], where[edge.dst]
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        ux, uy = (x2 - x1) / length, (y2 - y1) / length
        # side by side with the other edges of the pair: the same side whichever way the edge points
        side = 1.0 if edge.src <= edge.dst else -1.0
        ox, oy = -uy * offsets[edge] * side, ux * offsets[edge] * side
        x1, y1 = x1 + ux * radius[edge.src] + ox, y1 + uy * radius[edge.src] + oy
        x2, y2 = x2 - ux * (radius[edge.dst] + 2) + ox, y2 - uy * (radius[edge.dst] + 2) + oy
        drawn[edge] = ((x1, y1), (x2, y2))
        typed = edge.rel != "CO_OCCURS"
        tip = f"{edge.src} -[{edge.rel}]-> {edge.dst}" + (
            f"\n{edge.quote} ({edge.chunk_id})" if edge.quote else f" ({edge.chunk_id})" if edge.chunk_id else ""
        )
        style = ' class="typed" marker-end="url(#arrow)"' if typed else ' class="cooccurs" stroke-dasharray="4 3"'
        ends = f'x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"'
        lines.append(f"<line {ends}{style}><title>{html.escape(tip)}</title></line>")
    for node in nodes:  # names first: they matter more than relation types
        x, y = where[node.entity_id]
        box = _place(node.name, x, y, radius[node.entity_id] + 3, taken)
        labels.append(_label(box, node.name, f"name hop{min(node.hop, 3)}", f"{node.entity_id} (hop {node.hop})"))
    for edge in edges:
        if edge.rel != "CO_OCCURS":
            box = _on_edge(edge.rel, *drawn[edge], taken)
            labels.append(_label(box, edge.rel, "rel", f"{edge.src} -[{edge.rel}]-> {edge.dst}"))
    circles = [
        f'<circle cx="{where[n.entity_id][0]:.1f}" cy="{where[n.entity_id][1]:.1f}" r="{radius[n.entity_id]:.0f}"'
        f' fill="{COLOURS[min(n.hop, 3)]}"><title>{html.escape(f"{n.entity_id} (hop {n.hop})")}</title></circle>'
        for n in nodes
    ]
    legend = [
        f'<g class="legend" data-box="{",".join(f"{v:.1f}" for v in legend_box)}">',
        f'<rect x="{legend_box[0]}" y="{legend_box[1]}" width="{legend_box[2]}" height="{legend_box[3]}" fill="#fff"'
        ' stroke="#ccc"/>',
    ]
    for i, (label, colour) in enumerate(zip(("seed", "hop 1", "hop 2", "hop 3 and more"), COLOURS, strict=True)):
        legend.append(f'<circle cx="26" cy="{28 + 16 * i}" r="6" fill="{colour}"/>')
        legend.append(f'<text x="40" y="{32 + 16 * i}">{label}</text>')
    legend.append('<line x1="18" y1="94" x2="36" y2="94" class="cooccurs" stroke-dasharray="4 3"/>')
    legend.append('<text x="40" y="98">co-occurrence</text>')
    legend.append('<line x1="18" y1="110" x2="34" y2="110" class="typed" marker-end="url(#arrow)"/>')
    legend.append('<text x="40" y="114">stated relation (its type)</text></g>')
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size:.0f}" height="{size:.0f}"'
        f' viewBox="0 0 {size:.0f} {size:.0f}" font-family="sans-serif" font-size="12">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7"'
        ' orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#444"/></marker>'
        "<style>line{stroke:#888;stroke-width:1.2} line.typed{stroke:#444} g rect{fill:#fff;fill-opacity:.85}"
        " g.rel text{fill:#555;font-size:11px}</style></defs>"
        + "".join(lines)
        + "".join(circles)
        + "".join(labels)
        + "".join(legend)
        + "</svg>"
    )


def page(picture: str, title: str) -> str:
    """The SVG in a self-contained HTML page."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1>{picture}</body></html>\n"
    )


def write_neighbourhood(
    conn: psycopg.Connection,
    tenant: str,
    seed: str,
    path: Path,
    hops: int = 2,
    degree_cap: int | None = 4,
    relations: list[str] | None = None,
    direction: str = "out",
) -> Path:
    """Draw the neighbourhood of `seed` into `path`: .svg for the picture alone, .html for a page."""
    if path.suffix not in (".svg", ".html"):
        raise KgragError(f"{path}: write the picture to a .svg or an .html file")
    nodes, edges = neighbourhood(conn, tenant, seed, hops, degree_cap, relations, direction)
    picture = svg(nodes, edges)
    name = next((n.name for n in nodes if n.hop == 0), seed)
    cap = f"degree cap {degree_cap}" if degree_cap else "no degree cap"
    title = f"{name}: {hops}-hop neighbourhood ({cap}, direction {direction})"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".svg":
        path.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n{picture}\n')
    else:
        path.write_text(page(picture, title))
    return path

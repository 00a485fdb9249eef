"""A picture of one k-hop neighbourhood: a self-contained HTML page with an SVG.

The neighbourhood, with the edge that reached each node, is kgrag.neighbourhood's answer; this
module only lays it out: the seed in the middle, each hop on its own ring, nodes placed in a fixed
order, so the same graph always gives the same picture.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import psycopg

from pgkgrag.db import tenant_transaction
from pgkgrag.queries import Q


def neighbourhood(
    conn: psycopg.Connection, tenant: str, seed: str, hops: int = 2, degree_cap: int | None = 4
) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, str]]]:
    """Nodes (id, name, hop) and the last step of each one's shortest path (src, rel, dst)."""
    with tenant_transaction(conn, tenant):
        rows = conn.execute(Q["neighbourhood"], [[seed], hops, degree_cap]).fetchall()
    nodes = [(entity_id, name, hop) for entity_id, name, hop, _, _, _ in rows]
    edges = {(src, rel, dst) for _, _, _, src, rel, dst in rows if src is not None}
    return nodes, sorted(edges)


def render(nodes: list[tuple[str, str, int]], edges: list[tuple[str, str, str]], title: str) -> str:
    size, ring = 760, 160
    centre = size / 2
    position: dict[str, tuple[float, float]] = {}
    for hop in sorted({h for _, _, h in nodes}):
        members = [n for n in nodes if n[2] == hop]
        for i, (entity_id, _, _) in enumerate(members):
            angle = 2 * math.pi * i / len(members) - math.pi / 2 + hop * 0.35
            position[entity_id] = (centre + hop * ring * math.cos(angle), centre + hop * ring * math.sin(angle))
    colours = ["#c0392b", "#2471a3", "#7d8c8d", "#aab7b8", "#d5dbdb"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" viewBox="0 0 {size} {size}"'
        ' font-family="sans-serif" font-size="12">'
    ]
    for src, rel, dst in edges:
        (x1, y1), (x2, y2) = position[src], position[dst]
        dash = ' stroke-dasharray="4 3"' if rel == "CO_OCCURS" else ""
        parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#888"{dash}/>')
        if rel != "CO_OCCURS":
            parts.append(
                f'<text x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2:.1f}" fill="#555" font-size="10"'
                f' text-anchor="middle">{html.escape(rel)}</text>'
            )
    for entity_id, name, hop in nodes:
        x, y = position[entity_id]
        colour = colours[min(hop, len(colours) - 1)]
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{14 if hop == 0 else 9}" fill="{colour}">'
            f"<title>{html.escape(entity_id)} (hop {hop})</title></circle>"
        )
        parts.append(f'<text x="{x:.1f}" y="{y + 24:.1f}" text-anchor="middle">{html.escape(name)}</text>')
    parts.append("</svg>")
    legend = (
        "Seed in the middle, one ring per hop; solid lines are stated relations (their type on the line), "
        "dashed lines co-occurrence."
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{legend}</p>{''.join(parts)}</body></html>\n"
    )


def write_neighbourhood(
    conn: psycopg.Connection, tenant: str, seed: str, path: Path, hops: int = 2, degree_cap: int | None = 4
) -> Path:
    nodes, edges = neighbourhood(conn, tenant, seed, hops, degree_cap)
    name = next((n for i, n, _ in nodes if i == seed), seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(nodes, edges, f"{name}: {hops}-hop neighbourhood (degree cap {degree_cap})"))
    return path

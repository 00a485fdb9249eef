"""The neighbourhood picture: its structure (arrowheads, legend, labels that do not overlap, the
same drawing every run), `pgkgrag graph` and `pgkgrag show` as a user runs them, and the page
rendered in headless Chromium (Debian's chromium) with no console error."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
from commands import run
from conftest import DEMO_TENANT

from pgkgrag.db.connections import READER, connect
from pgkgrag.graph.picture import RING, Edge, Node, neighbourhood, svg, write_neighbourhood

BOX = re.compile(r'<g class="([^"]+)" data-box="([\d.,-]+)"')
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def boxes(picture: str) -> list[tuple[str, tuple[float, ...]]]:
    return [(css, tuple(float(v) for v in box.split(","))) for css, box in BOX.findall(picture)]


def overlapping(found: list[tuple[str, tuple[float, ...]]]) -> list[tuple[str, str]]:
    clashes = []
    for i, (a_css, a) in enumerate(found):
        for b_css, b in found[i + 1 :]:
            if a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]:
                clashes.append((a_css, b_css))
    return clashes


def test_labels_never_overlap_even_when_crowded() -> None:
    # a hub with 40 neighbours whose long names would collide on one ring, and two typed edges
    # between the same pair (the labels that used to read "DEPENDS_ONAFFECTS")
    nodes = [Node("hub", "Hub", 0)] + [Node(f"n{i:02d}", f"Neighbour number {i:02d} of the hub", 1) for i in range(40)]
    edges = [Edge("hub", "CO_OCCURS", f"n{i:02d}", None, None) for i in range(40)]
    edges += [Edge("hub", "DEPENDS_ON", "n00", "d#0", "Hub depends on n00."), Edge("n00", "AFFECTS", "hub", None, None)]
    picture = svg(nodes, edges)
    found = boxes(picture)
    assert len([css for css, _ in found if css.startswith("name")]) == 41
    assert len([css for css, _ in found if css == "rel"]) == 2 and len([c for c, _ in found if c == "legend"]) == 1
    assert overlapping(found) == []
    assert picture.count('marker-end="url(#arrow)"') == 3  # two typed edges and the legend's
    assert "Hub depends on n00. (d#0)" in picture  # the edge's tooltip: its evidence
    assert svg(nodes, edges) == picture  # the same layout every run


LINE = re.compile(r'<line x1="([\d.-]+)" y1="([\d.-]+)" x2="([\d.-]+)" y2="([\d.-]+)"[^>]*><title>([^\n<]+)')
REL = re.compile(r'<g class="rel" data-box="([\d.,-]+)"><title>([^<]+)</title>')
CIRCLE = re.compile(r'<circle cx="([\d.-]+)" cy="([\d.-]+)" r="\d+" fill="[^"]+"><title>([^<]+) \(hop (\d+)\)')


def segments(picture: str) -> dict[str, tuple[float, float, float, float]]:
    """Each drawn edge by its tooltip's first line (src -[rel]-> dst)."""
    return {html.unescape(m.group(5)): tuple(float(m.group(i)) for i in range(1, 5)) for m in LINE.finditer(picture)}  # type: ignore[misc]


def crossings(lines: list[tuple[float, float, float, float]]) -> int:
    def side(ax: float, ay: float, bx: float, by: float, px: float, py: float) -> float:
        return (bx - ax) * (py - ay) - (by - ay) * (px - ax)

    count = 0
    for i, (a1, a2, a3, a4) in enumerate(lines):
        for b1, b2, b3, b4 in lines[i + 1 :]:
            if side(a1, a2, a3, a4, b1, b2) * side(a1, a2, a3, a4, b3, b4) < 0 and (
                side(b1, b2, b3, b4, a1, a2) * side(b1, b2, b3, b4, a3, a4) < 0
            ):
                count += 1
    return count


def distance_to(segment: tuple[float, float, float, float], x: float, y: float) -> float:
    x1, y1, x2, y2 = segment
    length = ((x2 - x1) ** 2 + (y2 - y1) ** 2) or 1.0
    t = max(0.0, min(1.0, ((x - x1) * (x2 - x1) + (y - y1) * (y2 - y1)) / length))
    return float(((x1 + t * (x2 - x1) - x) ** 2 + (y1 + t * (y2 - y1) - y) ** 2) ** 0.5)


def test_each_hop_is_a_ring_and_each_relation_type_sits_on_its_own_edge() -> None:
    """A seed, three nodes it reached and four those reached: the nodes of hop h lie on the circle
    of radius h * RING around the seed, no two edges cross (each node's sector holds what it
    reached), and every relation type's label is centred on its own line, two edges of one pair
    apart."""
    nodes = [Node("s", "Seed", 0)] + [Node(f"a{i}", f"First {i}", 1) for i in range(3)]
    nodes += [Node(f"b{i}", f"Second {i}", 2) for i in range(4)]
    parent = {"b0": "a2", "b1": "a0", "b2": "a2", "b3": "a1"}  # listed apart from their parents on purpose
    edges = [Edge("s", "DEPENDS_ON", f"a{i}", None, None) for i in range(3)]
    edges += [Edge(p, "CALLS", b, None, None) for b, p in parent.items()] + [Edge("a0", "FEEDS", "s", None, None)]
    picture = svg(nodes, edges)
    where = {m.group(3): (float(m.group(1)), float(m.group(2)), int(m.group(4))) for m in CIRCLE.finditer(picture)}
    cx, cy, _ = where["s"]
    for x, y, hop in where.values():
        assert abs(((x - cx) ** 2 + (y - cy) ** 2) ** 0.5 - hop * RING) < 0.5
    drawn = segments(picture)
    assert len(drawn) == 8 and crossings(list(drawn.values())) == 0
    for box, title in REL.findall(picture):
        x, y, w, h = (float(v) for v in box.split(","))
        assert distance_to(drawn[html.unescape(title)], x + w / 2, y + h / 2) < 1.0, title
    pair = [drawn["s -[DEPENDS_ON]-> a0"], drawn["a0 -[FEEDS]-> s"]]
    assert distance_to(pair[0], (pair[1][0] + pair[1][2]) / 2, (pair[1][1] + pair[1][3]) / 2) > 4  # apart


def test_the_demo_neighbourhood_crosses_no_edge(demo: str) -> None:
    with connect(demo, role=READER) as conn:
        nodes, edges = neighbourhood(conn, DEMO_TENANT, "payment gateway", 2)
    assert crossings(list(segments(svg(nodes, edges)).values())) == 0


def test_the_check_sees_an_overlap() -> None:
    assert crossings([(0, 0, 10, 10), (0, 10, 10, 0)]) == 1 and crossings([(0, 0, 10, 0), (0, 5, 10, 5)]) == 0
    assert overlapping([("a", (0, 0, 10, 10)), ("b", (5, 5, 10, 10))]) == [("a", "b")]
    assert overlapping([("a", (0, 0, 10, 10)), ("b", (10, 0, 10, 10))]) == []


def test_the_demo_neighbourhood_by_name(demo: str, tmp_path: Path) -> None:
    with connect(demo, role=READER) as conn:
        nodes, edges = neighbourhood(conn, DEMO_TENANT, "payment gateway", 2)
        assert nodes[0] == Node("service:payment gateway", "Payment Gateway", 0) and len(nodes) > 5
        typed = [e for e in edges if e.rel != "CO_OCCURS"]
        assert typed and all(e.chunk_id for e in typed)
        written = write_neighbourhood(conn, DEMO_TENANT, "Payment Gateway", tmp_path / "g.svg")
        again = write_neighbourhood(conn, DEMO_TENANT, "Payment Gateway", tmp_path / "again.svg")
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="no entity is named"):
            neighbourhood(conn, DEMO_TENANT, "Payment Gatway", 2)
    assert written.read_text() == again.read_text() and written.read_text().startswith("<?xml")
    assert overlapping(boxes(written.read_text())) == []


@pytest.mark.slow
def test_graph_and_show_from_the_command_line(demo: str, tmp_path: Path) -> None:
    out = tmp_path / "payflow.html"
    drawn = run(
        "graph",
        "PayFlow Processing Agreement",
        "--hops",
        "1",
        "--relations",
        "signed",
        "--direction",
        "in",
        "--out",
        str(out),
        dsn=demo,
        KGRAG_TENANT=DEMO_TENANT,
    )
    assert drawn.returncode == 0, drawn.stderr
    page = out.read_text()
    assert "Maria Silva" in page and "SIGNED" in page and "direction in" in page
    refused = run("graph", "Payment Gateway", "--out", str(tmp_path / "x.png"), dsn=demo, KGRAG_TENANT=DEMO_TENANT)
    assert refused.returncode == 1 and ".svg or an .html" in refused.stderr and "Traceback" not in refused.stderr
    shown = run("show", "payment gateway", dsn=demo, KGRAG_TENANT=DEMO_TENANT)
    assert shown.returncode == 0, shown.stderr
    assert "Payment Gateway" in shown.stdout and "service:payment gateway" in shown.stdout
    assert "DEPENDS_ON" in shown.stdout or "CO_OCCURS" in shown.stdout
    unknown = run("show", "nobody at all", dsn=demo, KGRAG_TENANT=DEMO_TENANT)
    assert unknown.returncode == 1 and "no entity is named" in unknown.stderr


CHECK = """<script>
window.addEventListener('load', () => {
  const boxes = [...document.querySelectorAll('g.name, g.rel, g.legend')].map(g => g.getBBox());
  let clashes = 0;
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) clashes++;
  }
  document.body.dataset.labels = boxes.length;
  document.body.dataset.clashes = clashes;
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_page_renders_in_headless_chromium(demo: str, tmp_path: Path) -> None:
    with connect(demo, role=READER) as conn:
        written = write_neighbourhood(conn, DEMO_TENANT, "Payment Gateway", tmp_path / "g.html")
    checked = tmp_path / "checked.html"
    checked.write_text(written.read_text().replace("</body>", CHECK + "</body>"))
    shown = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            "--dump-dom",
            checked.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    console = [line for line in shown.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == []
    labels = re.search(r'data-labels="(\d+)"', shown.stdout)
    clashes = re.search(r'data-clashes="(\d+)"', shown.stdout)
    assert labels and int(labels.group(1)) > 5, shown.stdout[-500:]
    assert clashes and clashes.group(1) == "0"  # the boxes the browser measured, not the estimates

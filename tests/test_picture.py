"""The neighbourhood picture: its structure (arrowheads, legend, labels that do not overlap, the
same drawing every run), `pgkgrag graph` and `pgkgrag show` as a user runs them, and the page
rendered in headless Chromium (Debian's chromium) with no console error."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
from commands import run
from conftest import DEMO_TENANT

from pgkgrag.db.connections import READER, connect
from pgkgrag.graph.picture import Edge, Node, neighbourhood, svg, write_neighbourhood

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


def test_the_check_sees_an_overlap() -> None:
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

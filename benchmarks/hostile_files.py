"""Hostile files against the machine that ingests them: for each, `pgkgrag ingest FILE` end to end
(hash embedder, no build) on the configured server (KGRAG_DSN or the embedded one), its wall time,
the peak memory of its largest process (the ingest or its reader's worker: the largest resident set
among the processes it waited for) and what kgrag.ingest_failure says of the file. Prints a table;
run it once on the code before a change and once after (PYTHONPATH names the code).

    python benchmarks/hostile_files.py [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import markdown_table, scratch_database

from pgkgrag.db.connections import connect, tenant_transaction

SENTENCE = b"The Ledger Service records every payment the Checkout Gateway sends it.\n"


def _big_text(folder: Path) -> Path:
    path = folder / "big.txt"
    with path.open("wb") as out:
        for _ in range(200 * 2**20 // len(SENTENCE)):  # just under 200 MB: not above max_file_mb
            out.write(SENTENCE)
    return path


def _deep_html(folder: Path) -> Path:
    path = folder / "deep.html"
    path.write_text("<html><body>" + "<div>" * 100_000 + "x" + "</div>" * 100_000 + "</body></html>")
    return path


def _long_line(folder: Path) -> Path:
    path = folder / "long.jsonl"
    text = SENTENCE.decode() * (150 * 2**20 // len(SENTENCE))
    path.write_text(json.dumps({"doc_id": "long", "text": text}) + "\n")
    return path


def _spaced_heading(folder: Path) -> Path:
    path = folder / "heading.txt"
    path.write_text("# a" + " " * 2000 + "x\n\nThe Ledger Service records every payment.\n")
    return path


CASES: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "txt": ("a 200 MB .txt", _big_text),
    "html": ("HTML nested 100,000 deep", _deep_html),
    "jsonl": ("a JSONL line of 150 MB", _long_line),
    "heading": (".txt whose first line is a heading with 2,000 spaces inside", _spaced_heading),
}
# the ingest in a process of its own, whose children's peak resident set is the ingest's alone
MEASURE = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True);"
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def measure(dsn: str, tenant: str, file: Path) -> list[object]:
    pgkgrag = str(Path(sys.executable).parent / "pgkgrag")
    command = [pgkgrag, "ingest", str(file), "--embedder", "hash", "--no-build", "--tenant", tenant]
    env = {**os.environ, "KGRAG_DSN": dsn}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURE, *command], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    status, peak_kb = done.stdout.split()
    with connect(dsn) as conn, tenant_transaction(conn, tenant):
        where = " WHERE tenant_id = %s"  # the owner reads every tenant's rows
        reasons = [r for (r,) in conn.execute(f"SELECT reason FROM kgrag.ingest_failure{where}", [tenant])]
        written = conn.execute(f"SELECT count(*) FROM kgrag.document{where}", [tenant]).fetchone()
    outcome = "; ".join(reasons) or f"{written[0] if written else 0} document(s) written"
    return [f"{seconds:.1f} s", f"{int(peak_kb) / 1024:.0f} MB", status, outcome[:160]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=sorted(CASES), action="append")
    args = parser.parse_args()
    rows = []
    with scratch_database("kgrag_bench_hostile") as dsn, tempfile.TemporaryDirectory() as tmp:
        for name in args.only or CASES:
            what, make = CASES[name]
            folder = Path(tmp) / name
            folder.mkdir()
            rows.append([what, *measure(dsn, name, make(folder))])
            print(rows[-1], flush=True)
    print(markdown_table(["file", "time", "peak memory", "exit status", "what was recorded"], rows))


if __name__ == "__main__":
    main()

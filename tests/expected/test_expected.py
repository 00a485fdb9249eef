"""Expected output, as pg_regress keeps it: each tests/expected/NAME.sql runs through psql as a
kgrag_reader login granted the sample tenant, and what psql prints (the statements echoed, then
their rows) must equal NAME.out. The cases search by the question's text alone, so no embedder
enters them: a change in a row or a reason is a change in SQL.

A deliberate change: KGRAG_WRITE_EXPECTED=1 pytest tests/expected writes the .out files again;
read the diff before committing it.
"""

from __future__ import annotations

import difflib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from conftest import DEMO_TENANT, as_role

from pgkgrag.db.connections import READER
from pgkgrag.db.server import _BIN

HERE = Path(__file__).resolve().parent
CASES = sorted(HERE.glob("*.sql"))


@pytest.mark.parametrize("case", CASES, ids=[case.stem for case in CASES])
def test_sql_in_rows_and_reasons_out(demo: str, login_roles: Callable[[str], str], case: Path) -> None:
    role = login_roles(READER)
    with psycopg.connect(demo, autocommit=True) as owner:
        owner.execute("SELECT kgrag.grant_tenant(%s, %s)", [role, DEMO_TENANT])
    done = subprocess.run(
        [str(_BIN / "psql"), "-X", "-q", "-a", "-v", "ON_ERROR_STOP=1", "-f", str(case), as_role(demo, role)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PGTZ": "UTC", "PGDATESTYLE": "ISO"},
    )
    assert done.returncode == 0, done.stderr
    expected_path = case.with_suffix(".out")
    if os.environ.get("KGRAG_WRITE_EXPECTED") == "1":
        expected_path.write_text(done.stdout)
    expected = expected_path.read_text() if expected_path.exists() else ""
    diff = list(
        difflib.unified_diff(expected.splitlines(), done.stdout.splitlines(), expected_path.name, "psql", lineterm="")
    )
    assert diff == [], "\n".join(diff[:80])

"""Shared by the benchmark scripts: a scratch database, timing, and the report in docs/."""

from __future__ import annotations

import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tenant_session import TenantSession

from pgkgrag import migrations
from pgkgrag.config import DEFAULT_DIMENSION, Config
from pgkgrag.db.connections import connect, ensure_server

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("KGRAG_DATA", ROOT.parent / "shared" / "data" / "multihop"))
REPORT = ROOT / "docs" / "benchmarks.md"


@contextmanager
def scratch_database(name: str, *, dim: int = DEFAULT_DIMENSION, vector_index: str | None = None) -> Iterator[str]:
    """A fresh database on the configured server (KGRAG_DSN or the embedded one), at head (the
    vector index: as `pgkgrag db upgrade --vector-index`, the default when None)."""
    admin = ensure_server(Config.from_env())
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = make_conninfo(admin, dbname=name)
    migrations.upgrade(dsn, "head", dim=dim, vector_index=vector_index)
    try:
        yield dsn
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def tenant_connection(dsn: str, tenant: str, role: str | None = None) -> Iterator[TenantSession]:
    """An autocommit connection working for one tenant: each statement its own transaction that
    names the tenant first (benchmarks only; .conn is the connection itself, for VACUUM). As the
    installing superuser unless a role is given (kgrag_reader: row-level security applies, as to
    an application)."""
    with connect(dsn, autocommit=True, role=role) as conn:
        yield TenantSession(conn, tenant)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1000.0, result


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def markdown_table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_section(key: str, title: str, body: str, command: str | None = None, report: Path = REPORT) -> None:
    """Replace (or add) the section `key` of docs/benchmarks.md (or of another markdown file, `report`),
    written by `command` (by default `python benchmarks/<key>.py`)."""
    report.parent.mkdir(exist_ok=True)
    text = (
        report.read_text()
        if report.exists()
        else (
            "# Benchmarks\n\nEvery figure here is written by a script in `benchmarks/`; rerun it to refresh its"
            " section. Timings on a shared 2-core machine are noisy: compare rows of one table (one run),"
            " not tables of different runs.\n"
        )
    )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = (
        f"<!-- bench:{key} -->\n## {title}\n\n_{stamp}; {machine()}; `{command or f'python benchmarks/{key}.py'}`_\n\n"
        f"{body.strip()}\n<!-- /bench:{key} -->"
    )
    pattern = re.compile(rf"<!-- bench:{key} -->.*?<!-- /bench:{key} -->", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    report.write_text(text)
    print(f"wrote the {key} section of {report.relative_to(ROOT)}")

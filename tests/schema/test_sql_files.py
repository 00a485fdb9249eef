"""The SQL files as a reader finds them: one current definition of every object in sql/idempotent,
the kept files holding what the revisions created, and sql/schema.sql equal to a fresh install."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import pglast
import psycopg
import pytest
from schema_file import PG_DUMP_MAJOR, REFERENCE_FILE, dump, reference

from pgkgrag.db import installer, schema_version

IDEMPOTENT = installer.SQL_DIR / "idempotent"
_DEFINED = re.compile(r"^CREATE (?:OR REPLACE )?(FUNCTION|VIEW) ([\w.]+)[ (]", re.M)


def _definitions(paths: list[Path]) -> list[tuple[str, Path]]:
    return [(m.group(2), path) for path in paths for m in _DEFINED.finditer(path.read_text())]


def _kept_files() -> list[Path]:
    return [p for p in installer.idempotent_files() if p.name.endswith(".kept.sql")]


def _installed(conn: psycopg.Connection) -> set[str]:
    return {
        name
        for (name,) in conn.execute(
            "SELECT n.nspname || '.' || p.proname FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace"
            " WHERE n.nspname IN ('kgrag', 'kgrag_private')"
            " UNION SELECT c.oid::regclass::text FROM pg_class AS c"
            " WHERE c.relnamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace) AND c.relkind = 'v'"
        )
    }


def test_every_function_and_view_is_defined_in_exactly_one_idempotent_file(conn: psycopg.Connection) -> None:
    defined = _definitions(installer.idempotent_files())
    files: dict[str, list[str]] = {}
    for name, path in defined:
        files.setdefault(name, []).append(path.name)
    assert {name: where for name, where in files.items() if len(where) > 1} == {}
    installed = _installed(conn)
    assert sorted(installed - set(files)) == []
    assert sorted(set(files) - installed) == []


def test_the_kept_files_keep_what_the_revisions_created(admin: psycopg.Connection) -> None:
    """A kept file replaces what a revision created (never creates: the installer would record it
    and drop it), and everything a revision created is kept by one."""
    kept = {name for name, _ in _definitions(_kept_files())}
    assert len(kept) >= 16
    admin.execute("SELECT kgrag.use_tenant('*')")
    (recorded,) = admin.execute(
        "SELECT value FROM kgrag.settings WHERE tenant_id = '*' AND key = 'idempotent_objects'"
    ).fetchone()  # type: ignore[misc]
    dropped_and_created = {identity.split("(")[0] for _, identity in recorded}
    assert sorted(kept & dropped_and_created) == []
    by_revisions = _installed(admin) - dropped_and_created
    assert sorted(by_revisions - kept) == []


def _function_statements(path: Path) -> dict[str, dict[str, Any]]:
    """name -> the parse tree of its CREATE FUNCTION, without what differs between equal definitions."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if not k.endswith("location") and k != "replace"}
        if isinstance(node, (list, tuple)):
            return [strip(v) for v in node]
        return node

    found = {}
    for raw in pglast.parse_sql(path.read_text()):
        stmt = raw.stmt
        if isinstance(stmt, pglast.ast.CreateFunctionStmt):
            name = ".".join(part.sval for part in stmt.funcname)
            found[name] = strip(stmt(skip_none=True))
    return found


def test_the_stored_forms_of_a_name_are_the_ones_the_revisions_left() -> None:
    """Generated columns and indexes hold the results of 001_names.kept.sql: its definitions may
    not drift from what the revisions installed (a change is a revision that recomputes them)."""
    last: dict[str, dict[str, Any]] = {}
    for revision in schema_version.revisions():
        last.update(_function_statements(installer.file_to_run(revision)))
    kept = _function_statements(IDEMPOTENT / "001_names.kept.sql")
    assert sorted(kept) == ["kgrag.canonical_name", "kgrag.entity_key", "kgrag.fold", "kgrag.squash", "kgrag.trigrams"]
    for name, statement in kept.items():
        assert statement == last[name], f"{name} differs from the definition the revisions left"


def test_a_fresh_install_is_sql_schema_sql(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        major = conn.info.server_version // 10000
    if major != PG_DUMP_MAJOR:
        pytest.skip(f"sql/schema.sql is PostgreSQL {PG_DUMP_MAJOR}'s pg_dump of it; this server is {major}")
    expected = (installer.SQL_DIR / "schema.sql").read_text()
    actual = dump(dsn)
    diff = list(
        difflib.unified_diff(expected.splitlines(), actual.splitlines(), "sql/schema.sql", "fresh", lineterm="")
    )
    assert diff == [], "a fresh install differs from sql/schema.sql (make schema writes it):\n" + "\n".join(diff[:60])


def test_the_sql_reference_says_what_a_fresh_install_comments(dsn: str) -> None:
    expected = REFERENCE_FILE.read_text()
    actual = reference(dsn)
    diff = list(
        difflib.unified_diff(expected.splitlines(), actual.splitlines(), "docs/sql-reference.md", "fresh", lineterm="")
    )
    assert diff == [], "docs/sql-reference.md is out of date (make schema writes it):\n" + "\n".join(diff[:60])

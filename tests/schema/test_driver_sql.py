"""The driver's SQL lives in one place: pgkgrag/queries.sql, loaded by name (pgkgrag.queries).

Python modules of pgkgrag/ hold no SQL text, and no named query reads or writes a kgrag table
directly (only the installer's bookkeeping may): the rules live in kgrag.* functions, where psql
and every application get the same behaviour as the CLI, and where the catalog tests see them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pglast
import psycopg
from conftest import REPO
from pglast import ast as pg_ast
from pglast.visitors import Visitor

from pgkgrag import queries
from pgkgrag.ingest import staging

PACKAGE = REPO / "pgkgrag"
# Queries run by the installer as the schema owner, before the functions of sql/idempotent exist
# (or while they are dropped and created again): they may read and write kgrag.settings.
INSTALLER_TABLE_ACCESS = {
    "installer_get_setting",
    "installer_put_setting",
    "installer_dimension",
    "installer_vector_index",
}
# SQL as this project writes it: a statement starting with an upper-case keyword
_KEYWORDS = "SELECT|INSERT|UPDATE|DELETE|WITH|COPY|CREATE|ALTER|DROP|SET|TRUNCATE|ANALYZE|GRANT|REVOKE"
_SQL_START = re.compile(rf"^\s*\(?\s*({_KEYWORDS})\s")


def _kgrag_tables() -> set[str]:
    names: set[str] = set()
    for path in sorted((REPO / "sql" / "incremental").glob("*.sql")):
        if not path.name.endswith(".down.sql"):
            names |= set(re.findall(r"CREATE TABLE kgrag\.(\w+)", path.read_text()))
    return names


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def sql_in_python(root: Path = PACKAGE) -> list[str]:
    """Every string constant of pgkgrag/*.py (docstrings aside) that is SQL or names a kgrag table."""
    tables = _kgrag_tables()
    table_ref = re.compile(r"\bkgrag\.(" + "|".join(sorted(tables)) + r")\b")
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                text = node.value
                if _SQL_START.match(text) or table_ref.search(text):
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {text[:70]!r}")
    return found


class _Tables(Visitor):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.found: set[str] = set()

    def visit_RangeVar(self, ancestors: object, node: pg_ast.RangeVar) -> None:
        if node.schemaname == "kgrag":
            self.found.add(node.relname)


def tables_named(query: str) -> set[str]:
    """The kgrag tables a query reads or writes (functions are not tables)."""
    visitor = _Tables()
    # psycopg placeholders and sql.SQL fields are not SQL: give the parser something of their kind
    fields = {"kind": "FUNCTION", "object": "x()", "body": "'x'", "password": "'x'"}
    bound = re.sub(r"%(\(\w+\))?s", "NULL", query).replace("%%", "%")
    parseable = re.sub(r"\{(\w+)\}", lambda m: fields.get(m.group(1), "x"), bound)
    for raw in pglast.parse_sql(parseable):
        visitor(raw.stmt)
    return visitor.found & _kgrag_tables()


def test_no_sql_text_in_the_driver_modules() -> None:
    assert sql_in_python() == []


def test_the_check_finds_sql_in_a_module(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        'def f(conn):\n    """SELECT in a docstring is prose."""\n'
        '    return conn.execute("SELECT count(*) FROM kgrag.chunk"), "see kgrag.entity"\n'
    )
    found = sql_in_python(tmp_path)
    assert len(found) == 2 and all("bad.py:3" in f for f in found)


def test_named_queries_call_functions_and_leave_tables_to_them() -> None:
    direct = {name: sorted(tables_named(text)) for name, text in queries.Q.items()}
    assert {name: t for name, t in direct.items() if t and name not in INSTALLER_TABLE_ACCESS} == {}
    assert {name for name, t in direct.items() if t} == INSTALLER_TABLE_ACCESS


def test_the_table_check_sees_a_table_behind_a_join() -> None:
    assert tables_named("SELECT 1 FROM kgrag.chunk_stats() s JOIN kgrag.edge e ON true") == {"edge"}
    assert tables_named("WITH x AS (SELECT * FROM kgrag.k_hop(%s, 2)) SELECT * FROM x") == set()


def test_every_named_query_is_used_and_every_use_is_named() -> None:
    used: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id == "Q"
                and isinstance(node.slice, ast.Constant)
            ):
                used.add(node.slice.value)
    assert used - set(queries.Q) == set(), "a module asks for a query queries.sql does not hold"
    assert set(queries.Q) - used == set(), "queries.sql holds a query nothing runs"


SET_BY_SQL = {"kgrag_stage_entity": ("audience", "identifier_form")}


def test_copy_columns_match_the_staging_tables(conn: psycopg.Connection) -> None:
    with conn.transaction(force_rollback=True):
        conn.execute("SELECT kgrag.use_tenant('t1')")
        conn.execute("SELECT kgrag_private.stage_begin()")
        for table in staging.STAGED:
            columns = [
                r[0]
                for r in conn.execute(
                    "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
                    " AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
                    [f"pg_temp.{table.name}"],
                )
            ]
            # (the audience of a document's entities is set by SQL, from the staged document's access,
            # and so is the form of their identifiers, by kind)
            assert [*table.columns, *SET_BY_SQL.get(table.name, ())] == columns, table.name

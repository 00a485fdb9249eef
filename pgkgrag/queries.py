"""The driver's SQL, by name: every statement pgkgrag runs is a named block of queries.sql.

    from pgkgrag.queries import Q
    conn.execute(Q["use_tenant"], [tenant])

A block starts with a line `-- name: NAME`, then comment lines saying what it is for, then the
statement. Values are bound (%s); the few identifiers that vary (a role, a function name, a
staging table) are {fields} filled with psycopg.sql.Identifier. tests/schema/test_driver_sql.py checks
that no module holds SQL of its own, that the queries call kgrag functions rather than read
tables, and that every query is used.
"""

from __future__ import annotations

import re
from importlib.resources import files
from typing import LiteralString

_BLOCK = re.compile(r"^-- name: (\w+)\n((?:--[^\n]*\n)*)(.*?)(?=^-- name: |\Z)", re.M | re.S)


def _load() -> dict[str, LiteralString]:
    text = files("pgkgrag").joinpath("queries.sql").read_text(encoding="utf-8")
    found: dict[str, LiteralString] = {}
    for match in _BLOCK.finditer(text):
        name, lines = match.group(1), match.group(3).rstrip().splitlines()
        while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("--")):
            lines.pop()  # the comments that head the next section
        statement = "\n".join(lines).strip().removesuffix(";")
        if name in found or not statement:
            raise RuntimeError(f"queries.sql: query {name!r} is defined twice or is empty")
        found[name] = statement  # the package's own file, never user input: literal SQL
    return found


Q = _load()

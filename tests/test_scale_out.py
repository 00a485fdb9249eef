"""Citus readiness, checked here without Citus: every per-tenant statement of every function names
tenant_id on each kgrag table it reads or changes (so Citus can route it to one shard; RLS alone
does not prune shards, and a recursive CTE runs only as a single-shard query), and
kgrag.distribute() knows what to make of each table, or says that Citus is missing."""

from __future__ import annotations

import psycopg
import pytest
from catalog import tables as catalog_tables
from sqltext import statements, table_references

from pgkgrag.db import WRITER, connect

REFERENCE_TABLES = {"settings", "router_rule"}


def test_every_per_tenant_statement_names_the_tenant_on_every_table(admin: psycopg.Connection) -> None:
    tables = catalog_tables(admin)
    functions = admin.execute(
        "SELECT p.oid::regprocedure::text, l.lanname, pg_get_functiondef(p.oid), p.prosrc"
        " FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
        " WHERE p.pronamespace = 'kgrag'::regnamespace ORDER BY 1"
    ).fetchall()
    checked: dict[str, int] = {}
    loose = []
    for name, language, definition, body in functions:
        for statement in statements(definition, language, body):
            for ref in table_references(statement, set(tables)):
                checked[name] = checked.get(name, 0) + 1
                if not ref.pinned and ref.table not in REFERENCE_TABLES:
                    loose.append((name, ref.table, " ".join(ref.statement.split())[:160]))
    assert loose == []
    assert sum(checked.values()) > 80 and len(checked) > 25
    assert checked["kgrag._walk(text[],integer,integer,text[],timestamp with time zone)"] >= 1  # the recursive CTE


def test_distribute_lists_each_table_once_in_foreign_key_order(admin: psycopg.Connection) -> None:
    plan = admin.execute("SELECT table_name, kind, colocate_with FROM kgrag.distribute(dry_run => true)").fetchall()
    assert sorted(t for t, _, _ in plan) == [f"kgrag.{t}" for t in catalog_tables(admin)]
    kinds = {t: (k, c) for t, k, c in plan}
    assert {t for t, (k, _) in kinds.items() if k == "reference"} == {f"kgrag.{t}" for t in REFERENCE_TABLES}
    assert kinds["kgrag.document"] == ("distributed by tenant_id", None)
    assert all(c == "kgrag.document" for t, (k, c) in kinds.items() if k != "reference" and t != "kgrag.document")
    position = {t: i for i, (t, _, _) in enumerate(plan)}
    for child, parent in admin.execute(
        "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint"
        " WHERE contype = 'f' AND connamespace = 'kgrag'::regnamespace AND conrelid <> confrelid"
    ):
        assert position[parent] < position[child], (parent, child)


def test_distribute_without_citus_says_citus_is_required(admin: psycopg.Connection, dsn: str) -> None:
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="needs the Citus extension") as caught:
        admin.execute("SELECT * FROM kgrag.distribute()")
    assert "docs/scale-out.md" in (caught.value.diag.message_hint or "")
    admin.rollback()
    with connect(dsn, role=WRITER) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT * FROM kgrag.distribute(dry_run => true)")

"""Citus readiness, checked here without Citus: every per-tenant statement of every function names
tenant_id on each kgrag table it reads or changes (so Citus can route it to one shard; RLS alone
does not prune shards, and a recursive CTE runs only as a single-shard query), and
kgrag.distribute() knows what to make of each table, or says that Citus is missing."""

from __future__ import annotations

import psycopg
import pytest
from catalog import tables as catalog_tables
from corpus import add_chunks
from plans import explain
from sqltext import statements, table_references

from pgkgrag.db.connections import WRITER, connect

REFERENCE_TABLES = {"settings", "router_rule"}
# Statements that read every tenant on purpose, with why.
ACROSS_TENANTS = {
    "kgrag.tenants()": "lists the tenants and their document counts (an operator's command)",
    "kgrag.purge()": "acting as '*' (the owner), finds every tenant holding log rows to purge (a nightly job)",
}


def test_every_per_tenant_statement_names_the_tenant_on_every_table(admin: psycopg.Connection) -> None:
    tables = catalog_tables(admin)
    functions = admin.execute(
        "SELECT p.oid::regprocedure::text, l.lanname, pg_get_functiondef(p.oid), p.prosrc"
        " FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
        " WHERE p.pronamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace) ORDER BY 1"
    ).fetchall()
    checked: dict[str, int] = {}
    loose = []
    for name, language, definition, body in functions:
        for statement in statements(definition, language, body):
            for ref in table_references(statement, set(tables)):
                checked[name] = checked.get(name, 0) + 1
                if not ref.pinned and ref.table not in REFERENCE_TABLES and name not in ACROSS_TENANTS:
                    loose.append((name, ref.table, " ".join(ref.statement.split())[:160]))
    assert loose == []
    assert sum(checked.values()) > 80 and len(checked) > 25
    walk = "kgrag_private.walk(text[],integer,integer,text[],timestamp with time zone,text,boolean,double precision)"
    assert checked[walk] >= 1  # the recursive CTE


def test_the_dynamic_vector_statement_names_the_tenant(dsn: str, admin: psycopg.Connection) -> None:
    """kgrag_private.nearest builds its statement at run time (the dimension is written into it), so the
    catalog text above cannot show it: read the statements it ran for each kind instead."""
    add_chunks(admin, "t1", {"d": "renewal"})
    admin.commit()
    q = "[" + ",".join(["0.5"] * 512) + "]"
    ran = []
    for call in (
        "SELECT * FROM kgrag.search_chunks_vector(%s::vector)",
        "SELECT * FROM kgrag.search_entities_vector(%s::vector, profile => true)",
        "SELECT * FROM kgrag.search_reports_vector(%s::vector, 5, 0)",
    ):
        plans = explain(dsn, "t1", call, [q])
        # auto_explain logs "Query Text: <statement>\nQuery Parameters: ...\n<plan>"
        texts = [p.split("Query Text:", 1)[1].split("Query Parameters:", 1)[0] for p in plans if "WITH candidates" in p]
        assert len(texts) == 1, plans
        ran.append(texts[0])
    refs = [r for statement in ran for r in table_references(statement, set(catalog_tables(admin)))]
    assert {r.table for r in refs} == {"chunk", "entity", "community_report", "community"}
    assert all(r.pinned for r in refs), [(r.table, r.statement[:200]) for r in refs if not r.pinned]


def test_distribute_lists_each_table_once_in_foreign_key_order(admin: psycopg.Connection) -> None:
    plan = admin.execute("SELECT table_name, kind, colocate_with FROM kgrag.distribute(dry_run => true)").fetchall()
    # and the secret the workers check key seals with (revision 0041), the groups of the tenants (0042)
    secrets = ["kgrag_private.key_secret", "kgrag_private.audience"]
    assert sorted(t for t, _, _ in plan) == sorted([f"kgrag.{t}" for t in catalog_tables(admin)] + secrets)
    kinds = {t: (k, c) for t, k, c in plan}
    assert {t for t, (k, _) in kinds.items() if k == "reference"} == {f"kgrag.{t}" for t in REFERENCE_TABLES} | set(
        secrets
    )
    assert kinds["kgrag.document"] == ("distributed by tenant_id", None)
    # every table but the reference ones with document, the logs included (revision 0040: a tenant's
    # delegated search writes its log row next to its graph)
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

"""A comparable description of everything in schema kgrag, for migration tests."""

from __future__ import annotations

from typing import Any

import psycopg

_QUERIES = {
    "columns": """
        SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid), a.attgenerated
          FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
          LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE c.relnamespace = 'kgrag'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
           AND c.relkind IN ('r', 'v', 'p')
         ORDER BY 1, 2""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
          FROM pg_constraint WHERE connamespace = 'kgrag'::regnamespace ORDER BY 1, 2""",
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'kgrag' ORDER BY 1, 2""",
    "functions": """
        SELECT p.oid::regprocedure::text, pg_get_function_result(p.oid),
               -- the installation's identity, frozen in its body, is each database's own
               -- (and kgrag_private.may_see's, revision 0042)
               CASE WHEN p.oid = to_regprocedure('kgrag_private.installation()') THEN 'per database'
                    ELSE replace(p.prosrc, kgrag_private.installation(), '<installation>') END,
               p.provolatile,
               p.prosecdef, p.proconfig, obj_description(p.oid, 'pg_proc')
          FROM pg_proc p WHERE p.pronamespace IN ('kgrag'::regnamespace, to_regnamespace('kgrag_private'))
         ORDER BY 1""",
    "views": """
        SELECT viewname, definition FROM pg_views WHERE schemaname = 'kgrag' ORDER BY 1""",
    "policies": """
        SELECT tablename, policyname, cmd, qual, with_check FROM pg_policies
         WHERE schemaname = 'kgrag' ORDER BY 1, 2""",
    "tables": """
        SELECT relname, relrowsecurity, relforcerowsecurity, obj_description(oid, 'pg_class')
          FROM pg_class WHERE relnamespace = 'kgrag'::regnamespace AND relkind = 'r' ORDER BY 1""",
    "settings": """
        SELECT tenant_id, key, value::text FROM kgrag.settings ORDER BY 1, 2""",
}


def tables(conn: psycopg.Connection) -> list[str]:
    """The names of the tables in schema kgrag, sorted."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT relname::text FROM pg_class WHERE relnamespace = 'kgrag'::regnamespace AND relkind = 'r' ORDER BY 1"
        )
    ]


def snapshot(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(dsn) as conn:
        if not conn.execute("SELECT to_regnamespace('kgrag')").fetchone()[0]:  # type: ignore[index]
            return {}
        return {name: conn.execute(query).fetchall() for name, query in _QUERIES.items()}  # type: ignore[arg-type]


def oids(dsn: str) -> list[tuple[Any, ...]]:
    """Object ids in kgrag and kgrag_private: they change when an object is dropped and created again."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT oid, relname FROM pg_class WHERE relnamespace = 'kgrag'::regnamespace"
            " UNION ALL SELECT oid, proname FROM pg_proc"
            " WHERE pronamespace IN ('kgrag'::regnamespace, to_regnamespace('kgrag_private')) ORDER BY 1"
        ).fetchall()

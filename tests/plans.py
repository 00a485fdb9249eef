"""The plans of the statements a function runs, as an application role sees them (RLS on)."""

from __future__ import annotations

from collections.abc import Sequence

from pgkgrag.db.connections import WRITER, connect, use_role


def explain(dsn: str, tenant: str, query: str, params: Sequence[object] = ()) -> list[str]:
    """Run the query as kgrag_writer with auto_explain logging every nested statement's plan."""
    plans: list[str] = []
    with connect(dsn, autocommit=True) as conn:
        conn.add_notice_handler(lambda diag: plans.append(diag.message_primary or ""))
        conn.execute("LOAD 'auto_explain'")  # needs the superuser; the plans are the app role's
        conn.execute("SET auto_explain.log_min_duration = 0")
        conn.execute("SET auto_explain.log_nested_statements = on")
        conn.execute("SET auto_explain.log_level = notice")
        assert use_role(conn, WRITER)
        with conn.transaction():
            conn.execute("SELECT kgrag.use_tenant(%s)", [tenant])
            conn.execute(query, list(params)).fetchall()  # type: ignore[arg-type]
    return plans

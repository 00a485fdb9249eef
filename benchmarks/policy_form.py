"""The tenant policies' form, measured: `tenant_id = (SELECT kgrag.current_tenant())` (an init plan,
revisions up to 0018) against `tenant_id = kgrag.current_tenant()` (revision 0019: Citus refuses
subqueries in policies), on one database, alternating A B A B.

The generated operations corpus over 4 tenants (benchmarks/scale.py's load: the first tenant
built), then as kgrag_reader from a warm client, embedding excluded: kgrag_search per route on the
first tenant, kgrag.graph_totals() and a 2-hop kgrag.k_hop, p50 / p95 ms. The policies are switched
by ALTER POLICY between rounds.

    python benchmarks/policy_form.py [--chunks 40000] [--questions 30]
"""

from __future__ import annotations

import argparse

import psycopg
from common import markdown_table, scratch_database, write_section
from psycopg import sql
from scale import SEARCH, figures, load, questions, timed_ms, vector_text

from pgkgrag.db.connections import connect, tenant_transaction

SUBQUERY = "( SELECT kgrag.current_tenant() AS current_tenant)"
DIRECT = "kgrag.current_tenant()"
FORMS = {"(SELECT kgrag.current_tenant())": SUBQUERY, "kgrag.current_tenant()": DIRECT}


def use_form(dsn: str, form: str) -> None:
    """Rewrite every kgrag policy to compare tenant_id with `form`."""
    other = SUBQUERY if form == DIRECT else DIRECT
    with psycopg.connect(dsn, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT polrelid::regclass::text, polname, pg_get_expr(polqual, polrelid),"
            " pg_get_expr(polwithcheck, polrelid) FROM pg_policy ORDER BY 1, 2"
        ).fetchall()
        for rel, name, qual, checks in rows:
            for clause, expr in (("USING", qual), ("WITH CHECK", checks)):
                if expr and other in expr:
                    admin.execute(
                        sql.SQL("ALTER POLICY {} ON {} {} ({})").format(
                            sql.Identifier(name), sql.SQL(rel), sql.SQL(clause), sql.SQL(expr.replace(other, form))
                        )
                    )


def one_round(dsn: str, tenant: str, asked: dict[str, list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with connect(dsn, role="kgrag_reader") as conn, tenant_transaction(conn, tenant):
        hub = conn.execute("SELECT entity_id FROM kgrag.entity ORDER BY degree DESC, entity_id LIMIT 1").fetchone()
        assert hub is not None
        for label, batch in asked.items():
            for q in batch[:3]:  # warm the caches and the plans
                conn.execute(SEARCH, [vector_text(q), label.split()[0], q]).fetchall()
            out[f"kgrag_search {label}"] = figures(
                [timed_ms(conn, SEARCH, [vector_text(q), label.split()[0], q]) for q in batch]
            )
        totals = [timed_ms(conn, "SELECT * FROM kgrag.graph_totals()", None) for _ in range(30)]
        out["kgrag.graph_totals()"] = figures(totals)
        walks = [timed_ms(conn, "SELECT count(*) FROM kgrag.k_hop(%s, 2, 10)", [[hub[0]]]) for _ in range(30)]
        out["kgrag.k_hop(hub, 2, 10)"] = figures(walks)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=40000)
    parser.add_argument("--questions", type=int, default=30)
    args = parser.parse_args()
    with scratch_database("kgrag_bench_policy_form") as dsn:
        names, *_ = load(dsn, args.chunks, 4)
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("VACUUM ANALYZE")
        with connect(dsn, role="kgrag_reader") as conn:
            asked = questions(conn, names[0], args.questions)
        del asked["mixed"]
        rounds: list[tuple[str, dict[str, list[str]]]] = []
        for _ in range(2):
            for label, form in FORMS.items():
                use_form(dsn, form)
                rounds.append((label, one_round(dsn, names[0], asked)))
                print(rounds[-1], flush=True)
    header = ["call (p50 / p95 ms)", *(f"round {i + 1}: {label}" for i, (label, _) in enumerate(rounds))]
    rows = [[call, *(" / ".join(r[call]) for _, r in rounds)] for call in rounds[0][1]]
    body = (
        f"The generated operations corpus, {args.chunks:,} chunks over 4 tenants, as kgrag_reader from a warm "
        f"client (embedding excluded), {args.questions} questions per route on the first tenant; the tenant "
        "policies rewritten between rounds (revision 0019 keeps the second form: Citus refuses subqueries in "
        "policies).\n\n" + markdown_table(header, rows)
    )
    write_section("policy_form", "Policy form: an init plan or the function itself", body)


if __name__ == "__main__":
    main()

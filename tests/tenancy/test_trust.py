"""The trust model, tried by an attacker who can run SQL: a login role granted kgrag_reader or
kgrag_writer and one tenant tries the other tenant, a tenant set for the session, two tenants in
one statement, the defaults tenant '*', and the query log.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from commands import run
from ingesting import OPS, checksums, ingest, write_jsonl
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from tenant_calls import reads, writes

from pgkgrag.db.connections import READER, WRITER, connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build

# Refused for the tenant: 42501 (may not act for it) or 28000 (not set for this transaction).
REFUSED = (psycopg.errors.InsufficientPrivilege, psycopg.errors.InvalidAuthorizationSpecification)
# kgrag.tenant set by hand, with a seal computed as kgrag.use_tenant computes it
FORGED = (
    "SELECT set_config('kgrag.tenant', %s, true), set_config('kgrag.tenant_seal', kgrag_private.tenant_seal(%s), true)"
)


def _ids(conn: psycopg.Connection, tenant: str) -> dict[str, list[str]]:
    with tenant_transaction(conn, tenant):
        one = [r[0] for r in conn.execute("SELECT doc_id FROM kgrag.document ORDER BY 1")]
        return {
            "docs": one,
            "chunks": [r[0] for r in conn.execute("SELECT chunk_id FROM kgrag.chunk ORDER BY 1")],
            "entities": [r[0] for r in conn.execute("SELECT entity_id FROM kgrag.entity ORDER BY 1")],
            "communities": [r[0] for r in conn.execute("SELECT community_id FROM kgrag.community ORDER BY 1")],
            "hashes": [r[0] for r in conn.execute("SELECT DISTINCT content_hash FROM kgrag.chunk ORDER BY 1")],
        }


@pytest.fixture
def two_tenants(dsn: str, admin: psycopg.Connection, tmp_path: Path) -> dict[str, dict[str, list[str]]]:
    """Tenants a and b, each with the OPS corpus (its own copy), built."""
    for tenant in ("a", "b"):
        ingest(admin, tmp_path, OPS, tenant=tenant)
        build(admin, tenant, HashEmbedder(512))
    return {t: _ids(admin, t) for t in ("a", "b")}


@pytest.mark.parametrize("granted", [READER, WRITER])
def test_a_role_granted_tenant_a_gets_nothing_of_b(
    two_tenants: dict[str, dict[str, list[str]]], login: Callable[..., str], admin: psycopg.Connection, granted: str
) -> None:
    before = checksums(admin, "b")
    attacker = login(granted, "a")
    calls = reads("What does the Auth Service depend on?", two_tenants["b"], two_tenants["b"])
    if granted == WRITER:
        calls |= writes(two_tenants["b"])
    with connect(attacker) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="may not act for tenant 'b'"):
            conn.execute("SELECT kgrag.use_tenant('b')")
        conn.rollback()
        answered = set()
        for name, (query, params) in calls.items():
            for forge, args in (("SELECT set_config('kgrag.tenant', %s, true)", ["b"]), (FORGED, ["b", "b"])):
                conn.execute(forge, args)
                try:
                    rows = conn.execute(query, params).fetchall()  # type: ignore[arg-type]
                except REFUSED:
                    pass
                else:
                    answered.add(name)
                    if name == "tenants":
                        assert rows == [(True,)]  # it lists a, the one tenant granted
                    if name == "current_groups":
                        assert rows == [([],)]  # no group of b
                conn.rollback()
        assert {"version", "tenants", "last_search"} <= answered <= NO_TENANT, answered
        with tenant_transaction(conn, "a"):  # its own tenant works
            assert conn.execute("SELECT count(*) FROM kgrag.document").fetchone() == (5,)
            assert conn.execute("SELECT tenant_id FROM kgrag.tenants()").fetchall() == [("a",)]
    assert checksums(admin, "b") == before


# Functions that answer without reading any tenant's rows: the schema revision, the install-time
# dimension (a row of the shared defaults: through the index the planner reads it without asking
# for the tenant; when it scans the table, the tenant policy asks and refuses the forged tenant,
# which depends on the table's statistics, so either is right), the tenants the role may use, and
# the route and reason this session's own last search left (kgrag.last_search), and the groups the
# session holds of the tenant it names (kgrag.current_groups: none of a tenant it may not act for).
NO_TENANT = {"version", "dimension", "tenants", "last_search", "current_groups"}


@pytest.mark.parametrize("granted", [READER, WRITER])
def test_naming_another_tenant_to_a_delegated_call_is_refused(
    two_tenants: dict[str, dict[str, list[str]]], login: Callable[..., str], admin: psycopg.Connection, granted: str
) -> None:
    """The functions a public one calls with the tenant as first argument (on Citus, what sends the
    call to the tenant's worker) are callable directly: naming tenant b from a transaction acting
    for a reaches nothing of b, whatever the other arguments."""
    calls = [
        (str(f), int(n))
        for f, n in admin.execute(
            "SELECT f::text, p.pronargs FROM kgrag_private.delegated_calls() AS f"
            " JOIN pg_proc AS p ON p.oid = f ORDER BY 1"
        ).fetchall()
    ]
    assert {f.split("(")[0] for f, _ in calls} == {
        f"kgrag_private.{name}"
        for name in (
            "context_blocks_at",
            "link_entities_at",
            "log_answer_at",
            "log_llm_calls_at",
            "route_at",
            "search_at",
            "search_chunks_lexical_at",
        )
    }
    before = checksums(admin, "b")
    with connect(login(granted, "a")) as conn:
        for function, arguments in calls:
            call = f"SELECT * FROM {function.split('(')[0]}('b'{', NULL' * (arguments - 1)})"
            with tenant_transaction(conn, "a"), pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
                conn.execute(call)
            assert "not for 'b'" in str(refused.value) or "permission denied" in str(refused.value), (
                call,
                refused.value,
            )
    assert checksums(admin, "b") == before


def test_a_tenant_set_for_the_session_does_not_count(two_tenants: object, login: Callable[..., str]) -> None:
    dsn = login(READER, "a")
    attempts = [
        ("SET kgrag.tenant = 'a'", None),
        ("SELECT set_config('kgrag.tenant', 'a', false)", None),
    ]
    for statement, _ in attempts:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(statement)
            with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification, match="not set for this transaction"):
                conn.execute("SELECT count(*) FROM kgrag.document")
    with (
        psycopg.connect(dsn + " options='-c kgrag.tenant=a'", autocommit=True) as conn,
        pytest.raises(psycopg.errors.InvalidAuthorizationSpecification, match="not set for this transaction"),
    ):
        conn.execute("SELECT count(*) FROM kgrag.document")
    # a pooled connection: the next transaction does not inherit the previous one's tenant
    with psycopg.connect(dsn) as conn:
        with tenant_transaction(conn, "a"):
            assert conn.execute("SELECT count(*) FROM kgrag.document").fetchone() == (5,)
        with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification, match=r"kgrag\.tenant is not set"):
            conn.execute("SELECT count(*) FROM kgrag.document")


def test_a_tenant_named_outside_begin_is_gone_and_the_hint_says_to_begin(login: Callable[..., str]) -> None:
    """psql's default (and autocommit anywhere): each statement is its own transaction, so the
    tenant kgrag.use_tenant named is gone at the next one; the error's hint says so."""
    with psycopg.connect(login(READER, "a"), autocommit=True) as conn:
        conn.execute("SELECT kgrag.use_tenant('a')")
        with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification, match=r"kgrag\.tenant is not set") as err:
            conn.execute("SELECT count(*) FROM kgrag.document")
    assert err.value.diag.message_hint is not None and "BEGIN; SELECT kgrag.use_tenant(" in err.value.diag.message_hint
    assert "outside BEGIN" in err.value.diag.message_hint


def test_a_transaction_has_one_tenant(two_tenants: object, login: Callable[..., str]) -> None:
    with psycopg.connect(login(WRITER, "a", "b")) as conn:  # granted both: the rule holds all the same
        conn.execute("SELECT kgrag.use_tenant('a')")
        with pytest.raises(psycopg.errors.ActiveSqlTransaction, match="already acts for tenant 'a'"):
            conn.execute("SELECT kgrag.use_tenant('b')")
        conn.rollback()
        conn.execute("SELECT kgrag.use_tenant('a')")
        with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification, match="not set for this transaction"):
            conn.execute(
                "SELECT (SELECT count(*) FROM kgrag.document), set_config('kgrag.tenant', 'b', true),"
                " (SELECT count(*) FROM kgrag.document)"
            ).fetchall()


def test_the_defaults_tenant_is_the_owners(dsn: str, login: Callable[..., str], tmp_path: Path) -> None:
    service = login(WRITER, "*")  # every tenant: a service role
    with psycopg.connect(service) as conn:
        with tenant_transaction(conn, "anyone"):
            conn.execute("SELECT count(*) FROM kgrag.document")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="defaults tenant"):
            conn.execute("SELECT kgrag.use_tenant('*')")
        conn.rollback()
        for forged in (
            "UPDATE kgrag.settings SET value = '50' WHERE key = 'max_hops'",
            "INSERT INTO kgrag.router_rule (tenant_id, rule_id, route, pattern) VALUES ('*', 'x', 'global', '.')",
        ):
            conn.execute(FORGED, ["*", "*"])
            with pytest.raises(REFUSED):
                conn.execute(forged)
            conn.rollback()
    with connect(dsn) as owner, tenant_transaction(owner, "*"):
        assert owner.execute("SELECT kgrag.setting('max_hops')::int").fetchone() == (4,)
    out = run("ingest", str(write_jsonl(tmp_path / "x.jsonl", OPS[:1])), "--tenant", "*", "--embedder", "hash", dsn=dsn)
    assert out.returncode == 1 and "takes no documents" in out.stderr and "Traceback" not in out.stderr


def test_readers_write_the_log_only_through_the_search(two_tenants: object, login: Callable[..., str]) -> None:
    dsn = login(READER, "a")
    with psycopg.connect(dsn) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(conn, "a"):
            conn.execute(
                "INSERT INTO kgrag.query_log (tenant_id, route, reason, rows_returned, ms)"
                " VALUES ('a', 'local', 'forged', 0, 0)"
            )
        with tenant_transaction(conn, "a"):
            conn.execute(
                "SELECT kgrag_private.log_search('local', repeat('x', 10000), NULL, 1, 1, 1, false,"
                " NULL, NULL, NULL, NULL, NULL)"
            )
            assert conn.execute("SELECT length(reason), pg_typeof(log_id)::text FROM kgrag.query_log").fetchone() == (
                4000,
                "uuid",
            )
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="unknown route"), tenant_transaction(conn, "a"):
            conn.execute(
                "SELECT kgrag_private.log_search('everything', 'x', NULL, 1, 1, 1, false, NULL, NULL, NULL, NULL, NULL)"
            )


def test_grants_are_the_owners_to_give(login: Callable[..., str], admin: psycopg.Connection) -> None:
    dsn = login(WRITER, "a")
    with psycopg.connect(dsn) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT kgrag.grant_tenant(current_user, 'b')")
        conn.rollback()
        # a grant is a membership of the tenant's role, which a role cannot give itself
        login(READER, "b")  # so that b's role exists
        tenant_role = conn.execute("SELECT kgrag_private.tenant_role('b')").fetchone()[0]  # type: ignore[index]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(sql.SQL("GRANT {} TO CURRENT_USER").format(sql.Identifier(tenant_role)))
    role = conninfo_to_dict(dsn)["user"]
    assert admin.execute("SELECT kgrag.revoke_tenant(%s, 'a')", [role]).fetchone() == (True,)
    admin.commit()
    with psycopg.connect(dsn) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT kgrag.use_tenant('a')")
    with pytest.raises(psycopg.errors.UndefinedObject):
        admin.execute(sql.SQL("SELECT kgrag.grant_tenant('no_such_role_x', 'a')"))
    admin.rollback()

"""A tenant's calls on the real Citus cluster (../shared/citus/citus.sh): each public entry point is one
round trip to the worker holding the tenant's shards (counted with citus.log_remote_commands, as a
reader login role, inside the transaction the driver opens); a role made before the schema acts for
its tenant after kgrag.grant_tenant; and the schema goes down to base on the cluster.

Skipped, with the reason, where the cluster script is absent (a user's clone)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import commands
import psycopg
import pytest
from citus_cluster import login, notices, placement, remote, rss_anon_kb
from conftest import as_role
from ingesting import OPS, ingest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build

pytestmark = pytest.mark.citus  # the real cluster of ../shared/citus (skipped, saying why, without it)

QUESTION = "Which service does the billing ledger call?"
VECTOR = "[" + ",".join(map(str, HashEmbedder(512).embed([QUESTION])[0])) + "]"
ON_WORKERS = "SELECT result FROM run_command_on_workers($${}$$) ORDER BY nodeport"
CALLS = {
    "kgrag_search auto": "SELECT count(*) FROM kgrag.kgrag_search(%(v)s::vector, 'auto', %(q)s)",
    "kgrag_search local": "SELECT count(*) FROM kgrag.kgrag_search(%(v)s::vector, 'local', %(q)s)",
    "kgrag_search global": "SELECT count(*) FROM kgrag.kgrag_search(%(v)s::vector, 'global', %(q)s)",
    "kgrag_search vector": "SELECT count(*) FROM kgrag.kgrag_search(%(v)s::vector, 'vector', %(q)s)",
    "context": "SELECT kgrag.context(%(v)s::vector, 'auto', %(q)s)",
    "context_blocks": "SELECT count(*) FROM kgrag.context_blocks(%(v)s::vector, 'auto', %(q)s)",
    "route": "SELECT route FROM kgrag.route(%(v)s::vector, %(q)s)",
    "link_entities": "SELECT count(*) FROM kgrag.link_entities(%(q)s)",
    "search_chunks_lexical": "SELECT count(*) FROM kgrag.search_chunks_lexical(%(q)s)",
    "log_answer": "SELECT kgrag.log_answer(%(q)s, 'local', false, 1, 10, 5, 100, 1, 0, 3.5)",
    "log_llm_calls": """SELECT kgrag_private.log_llm_calls('[{"purpose": "answer", "model": "m"}]')""",
}


@pytest.fixture(scope="module")
def tenant(cluster: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Tenant 'trips', ingested by a writer login role; a reader login role may act for it."""
    with psycopg.connect(cluster, autocommit=True) as admin:
        login(admin, "citus_d_writer", "kgrag_writer", ["trips"])
        login(admin, "citus_d_reader", "kgrag_reader", ["trips"])
    with connect(as_role(cluster, "citus_d_writer")) as conn:
        ingest(conn, tmp_path_factory.mktemp("trips"), OPS, tenant="trips")
    yield "trips"


def test_each_entry_point_is_one_round_trip_to_the_tenants_worker(cluster: str, tenant: str) -> None:
    with psycopg.connect(cluster) as admin:
        worker = placement(admin, tenant)
    with connect(as_role(cluster, "citus_d_reader")) as conn:
        for name, query in CALLS.items():
            with notices(conn) as heard, tenant_transaction(conn, tenant):
                conn.execute("SET LOCAL citus.log_remote_commands = on")
                conn.execute("SET LOCAL client_min_messages = log")
                conn.execute(query, {"v": VECTOR, "q": QUESTION}).fetchall()
                first = len(heard)
                conn.execute(query, {"v": VECTOR, "q": QUESTION}).fetchall()  # the same call again
            sent = remote(heard)
            calls = [r.command for r in sent if not r.bookkeeping]
            assert len(calls) == 2 and len([r for r in remote(heard[:first]) if not r.bookkeeping]) == 1, (name, sent)
            assert {r.port for r in sent} == {worker}, (name, sent)
            assert all(re.match(r"SELECT .*FROM kgrag_private\.\w+\('trips'::text", c) for c in calls), calls


READS = [name for name in CALLS if name not in ("log_answer", "log_llm_calls")]


def worker_backend(cluster: str, port: int, role: str) -> tuple[int, int]:
    """The newest backend of the role on the worker (the one the coordinator's session keeps for the
    calls) and its anonymous resident memory in kB (the cluster runs on this machine: /proc)."""
    with psycopg.connect(make_conninfo(cluster, port=port), autocommit=True) as worker:
        row = worker.execute(
            "SELECT pid FROM pg_stat_activity WHERE usename = %s ORDER BY backend_start DESC LIMIT 1", [role]
        ).fetchone()
    assert row is not None, f"no backend of {role} on worker {port}"
    return row[0], rss_anon_kb(row[0])


def test_a_workers_connection_does_not_grow_search_after_search(cluster: str, tenant: str) -> None:
    """Citus 14.0.1 plans the shard query of a cached generic plan of a one-shard read again on every
    run and keeps each plan (citusdata/citus#8783): a worker's connection grew by about 1 MB a
    search. With every read entry point warmed past the 5 runs after which plan_cache_mode = auto
    weighs a generic plan, 20 more rounds of them (180 calls) leave the worker's backend within
    4 MB of where it was (before the fix, 52 MB over 90 calls; 14 MB with context_blocks' chunk
    read left cached; 0 to 1.3 MB over 900 calls after); and 150 searches over the tenant's log
    rate (each counted by an upsert into kgrag.log_overflow instead of logged) stay within 2 MB
    (about 40 kB a search before log_search forced custom plans: 24 MB in one cached plan after
    900 searches over the rate at 100k chunks)."""
    with psycopg.connect(cluster) as admin:
        worker = placement(admin, tenant)
    with connect(as_role(cluster, "citus_d_reader")) as conn:

        def grown(names: list[str], warm: int, measured: int) -> int:
            def rounds(n: int) -> None:
                for _ in range(n):
                    for name in names:
                        with tenant_transaction(conn, tenant):
                            conn.execute(CALLS[name], {"v": VECTOR, "q": QUESTION}).fetchall()

            rounds(warm)
            pid, before = worker_backend(cluster, worker, "citus_d_reader")
            rounds(measured)
            same, after = worker_backend(cluster, worker, "citus_d_reader")
            assert same == pid, "the calls moved to another connection of the worker"
            return after - before

        within = grown(READS, 8, 20)
        with psycopg.connect(cluster, autocommit=True) as admin:
            rate = "SELECT value FROM kgrag.settings WHERE tenant_id = '*' AND key = 'log_rate_per_minute'"
            (saved,) = admin.execute(rate).fetchone() or (None,)
            admin.execute("UPDATE kgrag.settings SET value = '1' WHERE tenant_id = '*' AND key = 'log_rate_per_minute'")
        try:
            over = grown(["kgrag_search vector"], 10, 150)
            with psycopg.connect(cluster) as admin:
                counted = admin.execute("SELECT sum(searches) FROM kgrag.log_overflow WHERE tenant_id = %s", [tenant])
                assert (counted.fetchone() or (0,))[0] >= 150  # the searches took the overflow's path
        finally:
            with psycopg.connect(cluster, autocommit=True) as admin:
                admin.execute(
                    "UPDATE kgrag.settings SET value = %s WHERE tenant_id = '*' AND key = 'log_rate_per_minute'",
                    [Jsonb(saved)],
                )
    assert within < 4 * 1024, f"the worker's backend grew by {within} kB over 180 calls"
    assert over < 2 * 1024, f"the worker's backend grew by {over} kB over 150 searches over the log rate"


def test_a_worker_without_metadata_is_warned_of_until_its_metadata_is_back(cluster: str, tenant: str) -> None:
    """Citus makes no delegated function while a worker lacks its metadata, and a call already
    delegated to it fails there (its shell tables are gone). kgrag_private.delegate_calls(), which
    every migration run and kgrag.distribute() call, then warns, says what to run and goes on (it
    failed before, and the migration with it); the tenant's search fails until the metadata is
    synced again, then answers, and the warning is gone."""
    with psycopg.connect(cluster, autocommit=True) as admin:
        worker = placement(admin, tenant)
        node = admin.execute("SELECT nodename FROM pg_dist_node WHERE nodeport = %s", [worker]).fetchone()
        assert node is not None
        admin.execute("SELECT stop_metadata_sync_to_node(%s, %s)", [node[0], worker])
        try:
            with notices(admin) as heard:
                admin.execute("SELECT kgrag_private.delegate_calls()")
            assert any("has no Citus metadata" in m for m, _ in heard), heard
            with (
                connect(as_role(cluster, "citus_d_reader")) as conn,
                pytest.raises(psycopg.errors.UndefinedTable),
                tenant_transaction(conn, tenant),
            ):
                conn.execute(CALLS["kgrag_search local"], {"v": VECTOR, "q": QUESTION})
        finally:
            admin.execute("SELECT start_metadata_sync_to_node(%s, %s)", [node[0], worker])
            with notices(admin) as heard:
                admin.execute("SELECT kgrag_private.delegate_calls()")
        assert not any("has no Citus metadata" in m for m, _ in heard), heard
    with connect(as_role(cluster, "citus_d_reader")) as conn, tenant_transaction(conn, tenant):
        found = conn.execute(CALLS["kgrag_search local"], {"v": VECTOR, "q": QUESTION}).fetchone()
    assert found is not None and found[0] > 0


def test_a_role_made_before_the_schema_searches_after_grant_tenant(cluster: str, tenant: str) -> None:
    """A role created where Citus is not (the postgres database: before CREATE EXTENSION citus, as an
    application's role usually is) exists on the coordinator alone; grant_tenant takes it, with its
    membership of kgrag_reader, to the workers. With role propagation off, the grant is refused then
    and there, saying why."""
    maintenance = make_conninfo(cluster, dbname="postgres")
    with psycopg.connect(cluster, autocommit=True) as admin:  # roles outlive the cluster's database
        admin.execute(ON_WORKERS.format("DROP ROLE IF EXISTS citus_d_before, citus_d_stranded"))
    with psycopg.connect(maintenance, autocommit=True) as server:
        for role in ("citus_d_before", "citus_d_stranded"):
            server.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
            server.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    with psycopg.connect(cluster, autocommit=True) as admin:
        assert admin.execute(
            ON_WORKERS.format("SELECT count(*) FROM pg_roles WHERE rolname = 'citus_d_before'")
        ).fetchall() == [
            ("0",),
            ("0",),
        ]
        admin.execute("GRANT kgrag_reader TO citus_d_before, citus_d_stranded")
        assert admin.execute("SELECT kgrag.grant_tenant('citus_d_before', %s)", [tenant]).fetchone() == (True,)
        (kgrag_role,) = admin.execute("SELECT kgrag_private.tenant_role(%s)", [tenant]).fetchone()  # type: ignore[misc]
        with admin.transaction():
            admin.execute("SET LOCAL citus.enable_create_role_propagation = off")
            with pytest.raises(psycopg.errors.UndefinedObject, match="not known to the Citus workers") as refused:
                admin.execute("SELECT kgrag.grant_tenant('citus_d_stranded', %s)", [tenant])
            assert "enable_create_role_propagation on" in (refused.value.diag.message_hint or "")
    # an owner without ADMIN OPTION on the role cannot take it there (PostgreSQL 16 on), and is told so
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS citus_d_owner")
        admin.execute("CREATE ROLE citus_d_owner LOGIN CREATEROLE")
        admin.execute("GRANT USAGE ON SCHEMA kgrag TO citus_d_owner")
        admin.execute("GRANT EXECUTE ON FUNCTION kgrag.grant_tenant(text, text) TO citus_d_owner")
    with (
        psycopg.connect(as_role(cluster, "citus_d_owner"), autocommit=True) as owner,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="may not take it there") as refused,
    ):
        owner.execute("SELECT kgrag.grant_tenant('citus_d_stranded', %s)", [tenant])
    assert "WITH ADMIN OPTION" in (refused.value.diag.message_hint or "")
    with connect(as_role(cluster, "citus_d_before")) as conn, tenant_transaction(conn, tenant):
        rows = conn.execute("SELECT count(*) FROM kgrag.kgrag_search(question => %s)", [QUESTION]).fetchone()
        assert rows is not None and rows[0] > 0
    with psycopg.connect(cluster, autocommit=True) as admin:  # and the revoke reaches the workers too
        assert admin.execute("SELECT kgrag.revoke_tenant('citus_d_before', %s)", [tenant]).fetchone() == (True,)
        member = (
            "SELECT count(*) FROM pg_auth_members AS m WHERE m.member = 'citus_d_before'::regrole"
            f" AND m.roleid = '{kgrag_role}'::regrole"
        )
        assert admin.execute(ON_WORKERS.format(member)).fetchall() == [("0",), ("0",)]


def test_a_document_for_a_group_reaches_its_holders_alone_on_the_cluster(
    cluster: str, tenant: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Audiences on the cluster: the groups' roles and memberships reach the workers, where the
    policies run; a reader holding hr finds the HR document (every route, the lists run on the
    tenant's worker), one holding no group does not, and a key's groups hold there too."""
    hr_doc = {
        "doc_id": "hr-review",
        "text": "Grievance filed by Quillon Marsh about the billing ledger.",
        "entities": [{"name": "Quillon Marsh", "type": "Person"}, {"name": "Billing Ledger", "type": "System"}],
        "relations": [{"source": "Quillon Marsh", "target": "Billing Ledger", "type": "FILED_AGAINST"}],
        "access": ["hr"],
    }
    with psycopg.connect(cluster, autocommit=True) as admin:
        login(admin, "citus_d_hr", "kgrag_reader", [tenant])
        admin.execute("SELECT kgrag.grant_groups('citus_d_hr', %s, '{hr}')", [tenant])
        admin.execute("SELECT kgrag.grant_groups('citus_d_writer', %s, '{hr}')", [tenant])
        key = admin.execute("SELECT kgrag.create_key('citus-hr', %s, 'reader', '{hr}')", [[tenant]]).fetchone()
        assert key is not None
        (group_role,) = admin.execute("SELECT kgrag_private.group_role(%s, 'hr')", [tenant]).fetchone()  # type: ignore[misc]
        member = f"SELECT count(*) FROM pg_auth_members WHERE roleid = '{group_role}'::regrole"
        assert admin.execute(ON_WORKERS.format(member)).fetchall() == [("2",), ("2",)]
    with connect(as_role(cluster, "citus_d_writer")) as conn:
        ingest(conn, tmp_path_factory.mktemp("hr"), [hr_doc], tenant=tenant)
    lexical = "SELECT string_agg(chunk_id, ',') FROM kgrag.search_chunks_lexical('Quillon grievance')"
    search = "SELECT string_agg(ref_id, ',') FROM kgrag.kgrag_search(%s::vector, 'auto', 'Quillon grievance')"
    found = {}
    for role in ("citus_d_hr", "citus_d_reader"):
        with connect(as_role(cluster, role)) as conn, tenant_transaction(conn, tenant):
            found[role] = (
                conn.execute(lexical).fetchone(),
                conn.execute(search, [VECTOR]).fetchone(),
                conn.execute("SELECT count(*) FROM kgrag.chunks WHERE doc_id = 'hr-review'").fetchone(),
                # hr's graph, on the tenant's worker, through the policies there
                conn.execute("SELECT string_agg(entity_id, ',') FROM kgrag.link_entities('Quillon Marsh')").fetchone(),
                conn.execute("SELECT count(*) FROM kgrag.edges WHERE rel = 'FILED_AGAINST'").fetchone(),
            )
    assert found["citus_d_hr"][0] == ("hr-review#0",) and "hr-review#0" in (found["citus_d_hr"][1][0] or "")
    assert found["citus_d_hr"][2] == (1,)
    assert found["citus_d_reader"][0] == (None,) and "hr-review" not in (found["citus_d_reader"][1][0] or "")
    assert found["citus_d_reader"][2] == (0,)
    assert found["citus_d_hr"][3:] == (("person:quillon marsh~hr",), (1,)), found["citus_d_hr"]
    assert found["citus_d_reader"][3:] == ((None,), (0,)), found["citus_d_reader"]
    with psycopg.connect(as_role(cluster, "citus_d_reader")) as conn:  # the key's groups, not the role's
        conn.execute("SELECT kgrag.use_key(%s)", [key[0]])
        assert conn.execute(lexical).fetchone() == ("hr-review#0",)
        conn.rollback()
    # every shard's policy is permissive on Citus: the audience is the tenant policy's, so a scan of
    # every shard shows neither another tenant's documents nor the group's (a second tenant's here)
    with connect(as_role(cluster, "citus_d_writer")) as conn:
        with psycopg.connect(cluster, autocommit=True) as admin:
            admin.execute("SELECT kgrag.grant_tenant('citus_d_writer', 'other')")
        ingest(
            conn, tmp_path_factory.mktemp("other"), [{"doc_id": "elsewhere", "text": "Another tenant."}], tenant="other"
        )
    with connect(as_role(cluster, "citus_d_reader")) as conn, tenant_transaction(conn, tenant):
        seen = {r[0] for r in conn.execute("SELECT doc_id FROM kgrag.document")}
        assert "elsewhere" not in seen and "hr-review" not in seen and seen
    # and a tenant's row of an owner's setting stays the owner's on the cluster (revision 0041's rule)
    with psycopg.connect(cluster, autocommit=True) as admin, admin.transaction():
        admin.execute("SELECT kgrag.use_tenant(%s)", [tenant])
        admin.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'rerank_url', '\"http://owner.example/\"')",
            [tenant],
        )
    with connect(as_role(cluster, "citus_d_writer")) as conn, tenant_transaction(conn, tenant):
        changed = conn.execute(
            "UPDATE kgrag.settings SET value = '\"http://127.0.0.1:9/\"' WHERE tenant_id = %s AND key = 'rerank_url'",
            [tenant],
        ).rowcount
        deleted = conn.execute(
            "DELETE FROM kgrag.settings WHERE tenant_id = %s AND key = 'rerank_url'", [tenant]
        ).rowcount
        assert (changed, deleted) == (0, 0)
    # the build's statistics per audience (revision 0043): written on the tenant's worker by the
    # writer of hr through the policy that asks its groups there, read by hr's holders alone
    with psycopg.connect(cluster, autocommit=True) as admin, admin.transaction():
        admin.execute("SELECT kgrag.use_tenant(%s)", [tenant])
        admin.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'lexical_candidates', '1')", [tenant]
        )
    with connect(as_role(cluster, "citus_d_writer")) as conn:
        ingest(conn, tmp_path_factory.mktemp("hr2"), [{**hr_doc, "doc_id": "hr-note"}], tenant=tenant)
        build(conn, tenant, HashEmbedder(512))
    stats = "SELECT count(*) FROM kgrag.lexeme_stats WHERE audience = 'hr' AND lexeme = 'quillon'"
    counted = {}
    for role in ("citus_d_hr", "citus_d_reader"):
        with connect(as_role(cluster, role)) as conn, tenant_transaction(conn, tenant):
            counted[role] = conn.execute(stats).fetchone()
    assert counted == {"citus_d_hr": (1,), "citus_d_reader": (0,)}
    with psycopg.connect(cluster, autocommit=True) as admin, admin.transaction():
        admin.execute("SELECT kgrag.use_tenant(%s)", [tenant])
        admin.execute("DELETE FROM kgrag.settings WHERE tenant_id = %s AND key = 'lexical_candidates'", [tenant])
    with connect(as_role(cluster, "citus_d_writer")) as conn:
        with tenant_transaction(conn, tenant):
            conn.execute("SELECT kgrag.delete_documents('{hr-review,hr-note}')")
        # (a transaction of its own: Citus refuses the writer's query on placements the definer
        # that deleted changed as the schema owner in the same transaction)
        with tenant_transaction(conn, tenant):
            conn.execute("SELECT kgrag.refresh_lexeme_stats()")


def test_the_schema_goes_down_to_base_on_the_cluster(cluster: str, tenant: str) -> None:
    """Last of the module: `pgkgrag db downgrade base` leaves no kgrag schema on any node."""
    down = commands.run("db", "downgrade", "base", dsn=cluster)
    assert down.returncode == 0, down.stderr
    with psycopg.connect(cluster, autocommit=True) as admin:
        left = admin.execute(
            "SELECT result FROM run_command_on_all_nodes("
            "$$SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'kgrag%'$$)"
        ).fetchall()
        assert left == [("0",)] * 3, left

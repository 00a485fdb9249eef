"""Scale-out on a real Citus cluster (../shared/citus/citus.sh: a coordinator and two workers on this
machine): kgrag.distribute(), then two tenants placed on different workers ingest, re-ingest, delete,
build and search through the driver as login roles, and every table and every public function's
answer must equal a single-node database given the same input. Every per-tenant statement must
run on one shard (citus.multi_task_query_log_level = error turns any other plan into an error),
and a tenant's role reaches nothing of the other's.

Skipped, with the reason, where the cluster script is absent (a user's clone)."""

from __future__ import annotations

import json
from pathlib import Path

import commands
import psycopg
import pytest
from catalog import tables as catalog_tables
from citus_cluster import login, placement
from conftest import Server, as_role
from ingesting import OPS, checksums, ingest, write_jsonl
from people import ACME_PAYROLL, ACME_STAFF, BETA_CLINIC
from searching import first_chunk
from tenant_calls import _graph_ids, _rows, reads

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import Embedder, HashEmbedder
from pgkgrag.embed.reembed import reembed
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.migrations import head
from pgkgrag.resources import SAMPLE_CORPUS
from pgkgrag.retrieval.search import run_search

pytestmark = pytest.mark.citus  # the real cluster of ../shared/citus (skipped, saying why, without it)

EMBEDDER = HashEmbedder(512)
GOLDEN = Path(SAMPLE_CORPUS).with_name("golden.jsonl").read_text().splitlines()
QUESTIONS = [*(json.loads(line)["question"] for line in GOLDEN[:6]), "How do I bake a carrot cake?"]
# reads every tenant on purpose (a directory of tenants): the one multi-shard statement allowed
ACROSS_TENANTS = {"tenants"}


def watched(dsn: str, spread: list[str]) -> psycopg.Connection:
    """A driver connection that adds to `spread` where a statement ran on more than one shard
    (Citus warns of each with citus.multi_task_query_log_level = warning; the CONTEXT says where)."""
    conn = connect(dsn)

    def heard(notice: psycopg.errors.Diagnostic) -> None:
        if "multi-task query" in (notice.message_primary or ""):
            spread.append(notice.context or "a statement of the test itself")

    conn.add_notice_handler(heard)
    return conn


def load(dsn: str, curator: str, tenants: tuple[str, str], tmp: Path, spread: list[str]) -> None:
    """The same steps on either database, as a writer login role: both tenants ingest (the second
    with two connections at once, two namesakes among its documents), one changed document is
    ingested again, one is deleted, the namesakes are merged by a curator login, both build."""
    sample = [json.loads(line) for line in Path(SAMPLE_CORPUS).read_text().splitlines()]
    a, b = tenants
    tmp.mkdir()
    with watched(dsn, spread) as conn:
        ingest(conn, tmp, sample, tenant=a, batch_size=10)
        with watched(dsn, spread) as other:
            path = write_jsonl(tmp / f"{b}.jsonl", [BETA_CLINIC, *sample[:20], ACME_PAYROLL, *OPS, ACME_STAFF])
            Ingestor(conn, b, ProvidedExtractor(), EMBEDDER, batch_size=5, workers=[other]).run([path])
        changed = dict(sample[0], text=sample[0]["text"] + " The Auth Service also calls the Billing Ledger.")
        ingest(conn, tmp, [changed], tenant=a)
        with tenant_transaction(conn, b):
            conn.execute("SELECT kgrag.delete_documents(%s)", [[sample[1]["doc_id"]]])
        merged = (
            "SELECT kgrag.merge_entities(min(entity_id), max(entity_id)) FROM kgrag.entity"
            " WHERE tenant_id = %s AND name = %s"
        )
        with watched(curator, spread) as own, tenant_transaction(own, b):
            own.execute(merged, [b, "João Souza"])  # applied by the build: documents move on the worker
        forged = (
            "INSERT INTO kgrag.curation (tenant_id, kind, target, decided_by) VALUES (%s, 'approve', 'x', 'nobody')"
        )
        # who decided is never the curator's to say, on a cluster too
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege),
            psycopg.connect(curator) as own,
            tenant_transaction(own, b),
        ):
            own.execute(forged, [b])
        with tenant_transaction(conn, a):  # so that the build stores common words (kgrag.lexeme_stats)
            conn.execute(
                "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'lexical_candidates', '5')", [a]
            )
        for tenant in tenants:
            build(conn, tenant, EMBEDDER)


def answers(dsn: str, tenant: str, other: str, spread: list[str]) -> dict[str, list[str]]:
    """Every reading public function's rows for a few questions, as the tenant's reader."""
    with connect(dsn) as conn:
        mine, others = _graph_ids(conn, tenant), _graph_ids(conn, other)
    out: dict[str, list[str]] = {}
    with watched(dsn, spread) as conn:
        for i, question in enumerate(QUESTIONS):
            for name, (query, params) in reads(question, others, mine).items():
                with tenant_transaction(conn, tenant):
                    if name in ACROSS_TENANTS:
                        conn.execute("SET LOCAL citus.multi_task_query_log_level = off")
                    out[f"{i}/{name}"] = _rows(conn, query, params)
    return out


def _groups(admin: psycopg.Connection) -> dict[str, int]:
    """The co-location group of each distributed kgrag table."""
    return {
        str(t): int(c)
        for t, c in admin.execute(
            "SELECT logicalrelid::text, colocationid FROM pg_dist_partition"
            " WHERE logicalrelid::text LIKE 'kgrag.%' AND partmethod = 'h'"
        ).fetchall()
    }


def test_distribute_runs_on_a_real_cluster_and_again_changes_nothing(cluster: str) -> None:
    with psycopg.connect(cluster, autocommit=True) as admin:
        first = admin.execute("SELECT table_name, kind, colocate_with FROM kgrag.distribute()").fetchall()
        placed = admin.execute(
            "SELECT logicalrelid::text, partmethod, colocationid FROM pg_dist_partition"
            " WHERE logicalrelid::text LIKE 'kgrag.%' ORDER BY 1"
        ).fetchall()
        again = admin.execute("SELECT table_name, kind, colocate_with FROM kgrag.distribute()").fetchall()
        assert again == first
        assert (
            admin.execute(
                "SELECT logicalrelid::text, partmethod, colocationid FROM pg_dist_partition"
                " WHERE logicalrelid::text LIKE 'kgrag.%' ORDER BY 1"
            ).fetchall()
            == placed
        )
        assert sorted(p[0] for p in placed) == sorted(f"kgrag.{t}" for t in catalog_tables(admin))
        kinds = {t: (m, c) for t, m, c in placed}
        assert {t for t, (m, _) in kinds.items() if m == "n"} == {"kgrag.settings", "kgrag.router_rule"}
        # every distributed table in the co-location group of kgrag.document, the logs included
        # (revision 0040: a tenant's delegated search writes its log row next to its graph)
        assert len({c for t, (m, c) in kinds.items() if m == "h"}) == 1, kinds
        # the functions the public ones call with the tenant are delegated by it, inside transactions too
        delegated = admin.execute(
            "SELECT f::text, o.distribution_argument_index, o.force_delegation, o.colocationid = (SELECT"
            " colocationid FROM pg_dist_partition WHERE logicalrelid = 'kgrag.document'::regclass)"
            " FROM kgrag_private.delegated_calls() AS f"
            " LEFT JOIN pg_dist_object AS o ON o.classid = 'pg_proc'::regclass AND o.objid = f::oid ORDER BY 1"
        ).fetchall()
        assert len(delegated) == 7 and all(row[1:] == (0, True, True) for row in delegated), delegated
        # the views' grants reached the workers (a view distributed with its tables reaches them without)
        granted = admin.execute(
            "SELECT result FROM run_command_on_workers($$SELECT count(*) FROM pg_class"
            " WHERE relkind = 'v' AND relnamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace)"
            " AND NOT has_table_privilege('kgrag_reader', oid, 'SELECT')$$)"
        ).fetchall()
        assert granted == [("0",), ("0",)], granted
        # the owners of the SECURITY DEFINER helpers may log in (Citus reaches the workers as them)
        assert admin.execute(
            "SELECT bool_and(rolcanlogin) FROM pg_roles WHERE rolname IN ('kgrag_probe', 'kgrag_logger')"
        ).fetchone() == (True,)
        # the shards' policies, functions and indexes are on the workers
        for worker in admin.execute("SELECT nodeport FROM pg_dist_node WHERE groupid > 0 ORDER BY 1").fetchall():
            counts = admin.execute(
                "SELECT result FROM run_command_on_workers($$SELECT count(*) FROM pg_policy$$) WHERE nodeport = %s",
                worker,
            ).fetchone()
            assert counts is not None and int(counts[0]) > 0


def test_two_tenants_on_two_workers_answer_as_on_a_single_node(
    cluster: str, server: Server, template: str, tmp_path: Path
) -> None:
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute("SELECT count(*) FROM kgrag.distribute()")
        names = [f"tenant{i}" for i in range(40)]
        ports = {n: placement(admin, n) for n in names}
        a = names[0]
        b = next(n for n in names if ports[n] != ports[a])  # the two tenants on different workers
    spread: list[str] = []
    single = server.create_database(template=template)
    single_dsn = server.dsn(single)
    try:
        for dsn in (cluster, single_dsn):
            with psycopg.connect(dsn, autocommit=True) as admin:
                login(admin, "citus_t_writer", "kgrag_writer", [a, b])
                login(admin, "citus_t_reader", "kgrag_reader", [a, b])
                login(admin, "citus_t_other", "kgrag_reader", [b])
                login(admin, "citus_t_curator", "kgrag_curator", [b])
                if dsn == cluster:
                    for role in ("citus_t_writer", "citus_t_reader", "citus_t_curator"):
                        admin.execute(f"ALTER ROLE {role} SET citus.multi_task_query_log_level = warning")
            load(
                as_role(dsn, "citus_t_writer"),
                as_role(dsn, "citus_t_curator"),
                (a, b),
                tmp_path / ("c" if dsn == cluster else "s"),
                spread,
            )
        written = sorted(set(spread))
        spread.clear()
        for tenant in (a, b):
            with psycopg.connect(cluster) as c, psycopg.connect(single_dsn) as s:
                assert checksums(c, tenant) == checksums(s, tenant), tenant
        with psycopg.connect(cluster) as c:
            assert c.execute("SELECT count(*) FROM kgrag.lexeme_stats WHERE tenant_id = %s", [a]).fetchone() != (0,)
        # the degrees ingestion moved are a recount's (nothing to change), recounted on one shard
        with watched(as_role(cluster, "citus_t_writer"), spread) as conn, tenant_transaction(conn, a):
            recount = "SELECT kgrag.refresh_edge_ranks(ARRAY(SELECT entity_id FROM kgrag.entity WHERE tenant_id = %s))"
            assert conn.execute(recount, [a]).fetchone() == (0,)
        for tenant, other in ((a, b), (b, a)):
            on_cluster = answers(as_role(cluster, "citus_t_reader"), tenant, other, spread)
            on_single = answers(as_role(single_dsn, "citus_t_reader"), tenant, other, [])
            differ = sorted(k for k in on_single if on_cluster.get(k) != on_single[k])
            assert differ == [], {k: (on_cluster.get(k), on_single[k]) for k in differ[:3]}
            assert len(on_cluster) > 40 * len(QUESTIONS)
        # ingest, re-ingest, delete and build ran each statement on one shard; so did every
        # search, walk and probe
        assert (written, sorted(set(spread))) == ([], [])
        # the other tenant's role reaches nothing of tenant a: refused by name, empty by policy
        with connect(as_role(cluster, "citus_t_other")) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute("SELECT kgrag.use_tenant(%s)", [a])
            with tenant_transaction(conn, b):
                assert conn.execute("SELECT count(*) FROM kgrag.chunk WHERE tenant_id = %s", [a]).fetchone() == (0,)
                assert conn.execute("SELECT count(*) FROM kgrag.chunk").fetchone() != (0,)
    finally:
        server.drop_database(single)


def test_a_statement_over_every_shard_is_caught(cluster: str) -> None:
    """The routing check of the test above can fail: a statement that names no tenant runs on every
    shard, and the log level makes that an error."""
    with psycopg.connect(cluster) as conn:
        conn.execute("SELECT count(*) FROM kgrag.distribute()")
        conn.execute("SET LOCAL citus.multi_task_query_log_level = error")
        conn.execute("SELECT count(*) FROM kgrag.chunk WHERE tenant_id = 'x'")  # one shard: allowed
        with pytest.raises(psycopg.errors.Error, match="multi-task query"):
            conn.execute("SELECT count(*) FROM kgrag.chunk")


def test_a_new_release_of_the_functions_installs_on_the_distributed_schema(cluster: str, tmp_path: Path) -> None:
    """What every release does to a distributed database: `pgkgrag db upgrade` drops and creates
    the functions and views of sql/idempotent again (here forced by a stale digest); Citus carries
    that to the workers, and searches work and route to one shard afterwards."""
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute("SELECT count(*) FROM kgrag.distribute()")
        login(admin, "citus_t_release", "kgrag_writer", ["rel"])
        admin.execute("ALTER ROLE citus_t_release SET citus.multi_task_query_log_level = error")
        admin.execute(
            "UPDATE kgrag.settings SET value = to_jsonb('stale'::text)"
            " WHERE tenant_id = '*' AND key = 'idempotent_sha256'"
        )
    done = commands.run("db", "upgrade", dsn=cluster)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(cluster) as admin:
        digest = admin.execute(
            "SELECT value #>> '{}' FROM kgrag.settings WHERE tenant_id = '*' AND key = 'idempotent_sha256'"
        ).fetchone()
    assert digest is not None and digest[0] != "stale"
    dsn = as_role(cluster, "citus_t_release")
    with connect(dsn) as conn:
        ingest(conn, tmp_path, OPS, tenant="rel")
        result = run_search(conn, "rel", EMBEDDER, "What does the Auth Service depend on?", "local", 5)
    assert result.route == "local" and any(r.ref_id.startswith("d1#") for r in result.rows), result


def test_a_schema_revision_runs_on_the_distributed_schema(cluster: str, tmp_path: Path) -> None:
    """`pgkgrag db downgrade 0039` and `upgrade` (0040 on the distributed schema: the logs out of
    the graph's group and back), then `pgkgrag db downgrade 0018` and `upgrade` on a distributed
    database holding a tenant's data: below 0019 (Citus's own revision) the amended down file brings every table back
    onto the coordinator, rows included (kgrag.query_log, which Citus cannot undistribute, copied),
    and the schema goes down as on one node; back at head and distributed again, 0020 and 0040 have
    moved the logs out of the graph's group and back in, 0021 dropped and created an index of the
    shards of kgrag.edge, 0023 and 0027 created tables distributed with kgrag.alias, 0026 turned off
    the pending lists of the shards' GIN indexes, no row changed, and a transaction may search three
    times, log an answer and read the logs it wrote (the log writers run on the worker, inside the
    caller's delegated calls)."""
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute("SELECT count(*) FROM kgrag.distribute()")
        login(admin, "citus_t_revision", "kgrag_writer", ["rev2"])
    dsn = as_role(cluster, "citus_t_revision")
    with connect(dsn) as conn:
        ingest(conn, tmp_path, OPS, tenant="rev2")
        with tenant_transaction(conn, "rev2"):
            conn.execute("SELECT count(*) FROM kgrag.kgrag_search(question => %s, route => 'local')", [QUESTIONS[0]])
    with psycopg.connect(cluster) as admin:
        # (what ingestion keeps of an extraction, kgrag.document.extraction, goes down with revision 0042)
        before = checksums(admin, "rev2", leave_out=["extraction"])
        logged_before = admin.execute("SELECT count(*) FROM kgrag.query_log WHERE tenant_id = 'rev2'").fetchone()
    # what an existing cluster meets: 0040 down (the logs apart, as 0020 placed them) and up again
    # on the distributed schema, the search delegated and logged afterwards
    assert commands.run("db", "downgrade", "0039", dsn=cluster).returncode == 0
    with psycopg.connect(cluster) as admin:
        groups = _groups(admin)
        assert groups["kgrag.query_log"] == groups["kgrag.llm_call"] != groups["kgrag.document"], groups
    # a log shard moved away from kgrag.document's of the same range: 0040 refuses, saying how
    moved = (
        "SELECT citus_move_shard_placement(l.shardid, n.nodename, n.nodeport, o.nodename, o.nodeport,"
        " shard_transfer_mode => 'block_writes')"
        " FROM pg_dist_shard AS l JOIN pg_dist_placement AS p ON p.shardid = l.shardid"
        " JOIN pg_dist_node AS n ON n.groupid = p.groupid"
        " JOIN pg_dist_node AS o ON o.groupid > 0 AND o.groupid <> p.groupid"
        " WHERE l.logicalrelid = 'kgrag.query_log'::regclass AND l.shardid = %s"
    )
    with psycopg.connect(cluster, autocommit=True) as admin:
        shard = admin.execute(
            "SELECT min(shardid) FROM pg_dist_shard WHERE logicalrelid = 'kgrag.query_log'::regclass"
        ).fetchone()
        admin.execute(moved, shard)
    refused = commands.run("db", "upgrade", dsn=cluster)
    assert refused.returncode != 0 and "cannot join kgrag.document's co-location group" in refused.stderr
    assert "citus_move_shard_placement" in refused.stderr, refused.stderr
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute(moved, shard)  # back where it was (two workers: the other one)
    assert commands.run("db", "upgrade", dsn=cluster).returncode == 0
    with psycopg.connect(cluster) as admin:
        assert len(set(_groups(admin).values())) == 1
    with connect(dsn) as conn, tenant_transaction(conn, "rev2"):
        conn.execute("SELECT count(*) FROM kgrag.kgrag_search(question => %s, route => 'local')", [QUESTIONS[1]])
        logged_before = conn.execute("SELECT count(*) FROM kgrag.query_log").fetchone()
    down = commands.run("db", "downgrade", "0018", dsn=cluster)
    assert down.returncode == 0, down.stderr
    with psycopg.connect(cluster) as admin:
        assert admin.execute("SELECT count(*) FROM pg_dist_partition").fetchone() == (0,)
        logged_after = admin.execute("SELECT count(*) FROM kgrag.query_log WHERE tenant_id = 'rev2'").fetchone()
        assert logged_after == logged_before
        search = "SELECT to_regprocedure('kgrag.kgrag_search(vector,text,text,integer,jsonb)')"
        assert admin.execute(search).fetchone() == (None,)
        # row-level security forced again on every table that has it (the rows moved with it off)
        unforced = "SELECT count(*) FROM pg_class WHERE relnamespace = 'kgrag'::regnamespace AND relkind = 'r'"
        assert admin.execute(unforced + " AND relrowsecurity AND NOT relforcerowsecurity").fetchone() == (0,)
    up = commands.run("db", "upgrade", dsn=cluster)
    assert up.returncode == 0, up.stderr
    assert f"0018 -> {head()}" in up.stdout, up.stdout  # 0019 and every revision after it
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute("SELECT count(*) FROM kgrag.distribute()")
        groups = _groups(admin)
        assert len(set(groups.values())) == 1, groups  # the logs included (0040)
        # 0023 and 0027 created their tables distributed, co-located with kgrag.alias
        assert groups.get("kgrag.alias_source") == groups.get("kgrag.alias_trigram_stats") == groups["kgrag.alias"]
        # no row changed: the query log's columns newer than 0018 went down with their revisions
        after = checksums(admin, "rev2", leave_out=["extraction"])
        assert {t: c for t, c in after.items() if t != "query_log"} == {
            t: c for t, c in before.items() if t != "query_log"
        }
        assert (
            admin.execute("SELECT count(*) FROM kgrag.query_log WHERE tenant_id = 'rev2'").fetchone() == logged_before
        )
        # 0026: Citus passes ALTER INDEX ... SET (fastupdate = off) on to every shard's GIN index
        shard_gin = admin.execute(
            "SELECT result FROM run_command_on_workers($$SELECT count(*) || '/' || count(*) FILTER (WHERE"
            " 'fastupdate=off' = ANY (COALESCE(c.reloptions, '{}'))) FROM pg_class AS c"
            " WHERE c.relname ~ '^(chunk_tsv_idx|alias_trigrams_idx)_[0-9]+$'$$) ORDER BY nodeport"
        ).fetchall()
        assert len(shard_gin) == 2 and all(
            int(total) > 0 and total == off for total, off in (r[0].split("/") for r in shard_gin)
        ), shard_gin
    with connect(dsn) as conn, tenant_transaction(conn, "rev2"):
        for question in QUESTIONS[:3]:
            conn.execute("SELECT count(*) FROM kgrag.kgrag_search(question => %s, route => 'local')", [question])
        conn.execute("SELECT kgrag.log_answer('q', 'local', false, 1, 10, 5, 100, 1, 0, 3.5)")
        assert conn.execute("SELECT count(*) FROM kgrag.chunk").fetchone() != (0,)
        logged = "SELECT (SELECT count(*) FROM kgrag.query_log), (SELECT count(*) FROM kgrag.answer_log)"
        assert conn.execute(logged).fetchone() == (logged_before[0] + 3, 1)  # type: ignore[index]


def test_tenants_of_two_dimensions_share_the_cluster_and_one_moves(cluster: str, tmp_path: Path, e5: Embedder) -> None:
    """On two workers, a tenant embedded with a 512-dimensional model beside one embedded with e5
    (384, stored zero-padded), each searched with its own model's vectors; then the first moves to
    e5 with pgkgrag reembed. Every statement on one shard."""
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute("SELECT count(*) FROM kgrag.distribute()")
        names = [f"dims{i}" for i in range(40)]
        ports = {n: placement(admin, n) for n in names}
        a = names[0]
        b = next(n for n in names if ports[n] != ports[a])
        login(admin, "citus_t_dims", "kgrag_writer", [a, b])
        admin.execute("ALTER ROLE citus_t_dims SET citus.multi_task_query_log_level = error")
    question = "What does the Payment Module call?"
    with connect(as_role(cluster, "citus_t_dims")) as conn:
        for tenant, embedder in ((a, EMBEDDER), (b, e5)):
            assert ingest(conn, tmp_path, OPS, tenant=tenant, embedder=embedder).ok
            build(conn, tenant, embedder)
        assert first_chunk(conn, b, e5.embed_queries([question])[0]) == "d2#0"
        assert first_chunk(conn, a, EMBEDDER.embed_queries([question])[0]).startswith("d")
        with pytest.raises(psycopg.errors.DataException, match="embeds with hash \\(512"):
            first_chunk(conn, a, e5.embed_queries([question])[0])
        moved = reembed(conn, a, e5, batch=8)
        assert (moved["embedder"], moved["dimension"]) == ("e5", 384)
        assert first_chunk(conn, a, e5.embed_queries([question])[0]) == "d2#0"


def test_limits_the_log_rate_and_the_purge_hold_on_the_cluster(cluster: str) -> None:
    """Revision 0039 on the real cluster: a writer's setting above the owner's ceiling is refused,
    a reader's flood of the log is counted beyond the tenant's rate (kgrag.log_overflow, with the
    logs), and the owner's `pgkgrag purge` deletes what the retention says, on the workers."""
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute("SELECT count(*) FROM kgrag.distribute()")
        login(admin, "citus_t_ops_writer", "kgrag_writer", ["ops1"])
        login(admin, "citus_t_ops_reader", "kgrag_reader", ["ops1"])
    with connect(as_role(cluster, "citus_t_ops_writer")) as conn:
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="above the ceiling"),
            tenant_transaction(conn, "ops1"),
        ):
            conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('ops1', 'max_hops', '50')")
        with tenant_transaction(conn, "ops1"):
            conn.execute(
                "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('ops1', 'log_rate_per_minute', '3')"
            )
    with connect(as_role(cluster, "citus_t_ops_reader")) as conn:
        with tenant_transaction(conn, "ops1"):
            for _ in range(10):
                conn.execute(
                    "SELECT kgrag_private.log_search('local', 'x', NULL, 1, 1, 1, false, NULL, NULL, NULL, NULL, NULL)"
                )
        with tenant_transaction(conn, "ops1"):
            logged = conn.execute("SELECT count(*) FROM kgrag.query_log WHERE tenant_id = 'ops1'").fetchone()
            counted = conn.execute("SELECT sum(searches)::int FROM kgrag.log_overflow WHERE tenant_id = 'ops1'")
            assert (logged, counted.fetchone()) == ((3,), (7,))
    with psycopg.connect(cluster, autocommit=True) as admin:  # a month-old row, past a 7-day retention
        admin.execute("UPDATE kgrag.query_log SET searched_at = now() - interval '30 days' WHERE tenant_id = 'ops1'")
        admin.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('ops1', 'query_log_days', '7')"
            " ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value"
        )
    out = commands.run("purge", "--json", dsn=cluster)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ops1"]["query_log"] == 3
    with psycopg.connect(cluster) as admin:
        assert admin.execute("SELECT count(*) FROM kgrag.query_log WHERE tenant_id = 'ops1'").fetchone() == (0,)


def test_the_ingestion_queue_works_by_tenant_on_the_cluster(cluster: str) -> None:
    """Revision 0048 on the real cluster: a writer submits documents (each statement on its tenant's
    shard), two workers drain the queue at once, a killed worker's claims return, and a reader finds
    the documents; another tenant's writer sees and takes nothing of it."""
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute("SELECT count(*) FROM kgrag.distribute()")
        login(admin, "citus_t_queue_writer", "kgrag_writer", ["queue1"])
        login(admin, "citus_t_queue_other", "kgrag_writer", ["queue2"])
    writer = as_role(cluster, "citus_t_queue_writer")
    spread: list[str] = []
    with watched(writer, spread) as conn, tenant_transaction(conn, "queue1"):
        conn.execute("SET LOCAL citus.multi_task_query_log_level = warning")
        tickets = [
            conn.execute(
                "SELECT kgrag.submit_document(%s::jsonb)",
                [json.dumps({"doc_id": f"q{i:02d}", "text": f"Queue note {i}: shipment {i} left Porto on time."})],
            ).fetchone()[0]  # type: ignore[index]
            for i in range(30)
        ]
    assert spread == []
    # a session that claims and goes away: its claims return to the queue
    with connect(writer) as gone, tenant_transaction(gone, "queue1"):
        assert gone.execute("SELECT count(*) FROM kgrag_private.claim_tickets(5)").fetchone() == (5,)
    with connect(as_role(cluster, "citus_t_queue_other")) as other, tenant_transaction(other, "queue2"):
        assert other.execute("SELECT count(*) FROM kgrag_private.claim_tickets(100)").fetchone() == (0,)
        assert other.execute("SELECT kgrag.retry_documents(%s)", [tickets]).fetchone() == (0,)
    workers = [
        commands.start("worker", "--tenant", "queue1", "--embedder", "hash", "--drain", "--page", "4", dsn=writer)
        for _ in range(2)
    ]
    for process in workers:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, out + err
    with connect(writer) as conn:
        with tenant_transaction(conn, "queue1"):
            states = conn.execute("SELECT state, count(*) FROM kgrag.ingest_queue GROUP BY 1").fetchall()
            documents = conn.execute("SELECT count(*) FROM kgrag.document").fetchone()
        found = first_chunk(conn, "queue1", EMBEDDER.embed(["Queue note 7: shipment 7 left Porto on time."])[0])
    assert dict(states) == {"stored": 30} and documents == (30,)
    assert found == "q07#0"


def test_a_curator_reads_the_review_queue_on_the_cluster(cluster: str, tmp_path: Path) -> None:
    """kgrag.review_queue (a union of every kind of item, joins on tenant_id, the decisions read once)
    read by a curator login on the cluster: a CPF typed two ways under one name is a near_identifiers
    item (kgrag_private.near_identifiers: one statement on the tenant's shard); a staff list's numbers
    under their own names are not. The view's other items read
    every shard, each worker's row security keeping the tenant's rows (not one shard: known)."""
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute("SELECT count(*) FROM kgrag.distribute()")
        login(admin, "citus_t_review_writer", "kgrag_writer", ["review1"])
        login(admin, "citus_t_review_curator", "kgrag_curator", ["review1"])

    def person(doc_id: str, name: str, identifier: str) -> dict[str, object]:
        return {
            "doc_id": doc_id,
            "text": f"{name} signed the form.",
            "entities": [{"name": name, "type": "Person", "identifier": identifier}],
        }

    people = [person(f"s{n}", f"Employee {n}", f"EMP-{n:04d}") for n in range(10, 30)]
    people += [person("c1", "Carla Mendes", "CPF 123.456.789-00"), person("c2", "Carla Mendes", "CPF 123.456.789-01")]
    path = write_jsonl(tmp_path / "people.jsonl", people)
    done = commands.run(
        "ingest", str(path), "--tenant", "review1", "--embedder", "hash", dsn=as_role(cluster, "citus_t_review_writer")
    )
    assert done.returncode == 0, done.stdout + done.stderr
    spread: list[str] = []
    with watched(as_role(cluster, "citus_t_review_curator"), spread) as conn, tenant_transaction(conn, "review1"):
        conn.execute("SET LOCAL citus.multi_task_query_log_level = warning")
        assert conn.execute("SELECT count(*) FROM kgrag_private.near_identifiers()").fetchone() == (1,)
        assert spread == []
        items = conn.execute("SELECT item, target FROM kgrag.review_queue ORDER BY item, target").fetchall()
    assert [i for i in items if i[0] == "near_identifiers"] == [
        ("near_identifiers", "identifiers:person:#cpf12345678900+person:#cpf12345678901")
    ]
    assert all(not target.startswith("identifiers:") or "cpf" in target for _, target in items)

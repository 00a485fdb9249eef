"""The analyst's views, as plain SQL from a kgrag_reader session: the demo corpus's graph browsed
without knowing the tables, and what is stale after an ingest without a build."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from commands import run
from conftest import DEMO_TENANT, REPO, as_role
from ingesting import OPS, ingest

from pgkgrag.db.connections import READER, connect, tenant_transaction
from pgkgrag.db.server import _BIN
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build


def sql(dsn: str, query: str, tenant: str = DEMO_TENANT) -> list[tuple]:
    with connect(dsn, role=READER) as conn, tenant_transaction(conn, tenant):
        return conn.execute(query).fetchall()  # type: ignore[arg-type]


def test_an_analyst_browses_an_entity_and_its_edges(demo: str) -> None:
    (gateway,) = sql(
        demo,
        "SELECT name, type, aliases, degree, answer_chunk_id, community, no_community"
        " FROM kgrag.entities WHERE name ILIKE 'payment gateway'",
    )
    name, kind, aliases, degree, _, community, no_community = gateway
    assert name == "Payment Gateway" and kind and degree > 0 and community and no_community is False
    assert name not in aliases
    edges = sql(
        demo,
        "SELECT src_name, rel, dst_name, weight FROM kgrag.edges WHERE src_name = 'Payment Gateway'"
        " ORDER BY weight DESC, rel, dst_name",
    )
    assert edges
    assert all(src == "Payment Gateway" and weight > 0 for src, _, _, weight in edges)
    assert any(rel != "CO_OCCURS" for _, rel, _, _ in edges)


def test_who_signed_the_payflow_contract(demo: str) -> None:
    signed = sql(
        demo,
        "SELECT src_name, evidence_chunk_id FROM kgrag.edges"
        " WHERE rel = 'SIGNED' AND dst_name ILIKE 'payflow processing%'",
    )
    assert signed == [("Maria Silva", "contract-payflow#0")]


def test_communities_list_their_members_and_report(demo: str) -> None:
    rows = sql(demo, "SELECT level, members, report, report_stale FROM kgrag.communities ORDER BY level, weight DESC")
    assert rows and all(members for _, members, _, _ in rows)
    assert all(report for _, _, report, _ in rows) and not any(stale for *_, stale in rows)


@pytest.mark.slow
def test_what_is_stale_after_an_ingest_without_a_build(dsn: str, conn: psycopg.Connection, tmp_path: Path) -> None:
    embedder = HashEmbedder(512)
    ingest(conn, tmp_path, OPS, embedder=embedder)
    build(conn, "t1", embedder)
    assert [count for _, count, _ in sql(dsn, "SELECT * FROM kgrag.staleness", "t1")] == [0] * 7
    ingest(
        conn,
        tmp_path,
        [
            {
                "doc_id": "d9",
                "text": "The Fraud Scanner watches the Payment Module.",
                "entities": [
                    {"name": "Fraud Scanner", "type": "Service"},
                    {"name": "Payment Module", "type": "Service"},
                ],
            },
            {  # an entity linked to none: no community will ever hold it, and that is not staleness
                "doc_id": "d10",
                "text": "The Sandbox Runner was retired.",
                "entities": [{"name": "Sandbox Runner", "type": "Service"}],
            },
        ],
        embedder=embedder,
    )
    stale = {what: (count, fix) for what, count, fix in sql(dsn, "SELECT * FROM kgrag.staleness", "t1")}
    assert stale["connected entities in no community"] == (1, "pgkgrag build")
    assert stale["stale communities"][0] >= 1
    (scanner,) = sql(dsn, "SELECT no_community, community FROM kgrag.entities WHERE name = 'Fraud Scanner'", "t1")
    assert scanner == (True, None)
    reasons = sql(
        dsn,
        "SELECT DISTINCT reason FROM kgrag.kgrag_search(question => 'What does the Fraud Scanner watch?',"
        """ options => '{"seed_entities": ["Fraud Scanner"]}')""",
        "t1",
    )
    assert len(reasons) == 1 and "the graph is stale around these results" in reasons[0][0]
    told = run("status", "--tenant", "t1", dsn=dsn)
    assert told.returncode == 0, told.stderr
    assert "connected entities in no community" in told.stdout and "pgkgrag build --tenant t1" in told.stdout
    build(conn, "t1", embedder)
    fresh = sql(
        dsn,
        "SELECT DISTINCT reason FROM kgrag.kgrag_search(question => 'What does the Fraud Scanner watch?',"
        """ options => '{"seed_entities": ["Fraud Scanner"]}')""",
        "t1",
    )
    assert "stale" not in fresh[0][0]
    isolated = sql(
        dsn,
        "SELECT DISTINCT kind, reason FROM kgrag.kgrag_search(question => 'Is the Sandbox Runner retired?',"
        """ options => '{"seed_entities": ["Sandbox Runner"]}')""",
        "t1",
    )
    assert "entity" in {kind for kind, _ in isolated} and not any("stale" in reason for _, reason in isolated)
    # nor does the analyst's view or `pgkgrag show` call it stale
    assert sql(dsn, "SELECT no_community, community FROM kgrag.entities WHERE name = 'Sandbox Runner'", "t1") == [
        (False, None)
    ]
    shown = run("show", "Sandbox Runner", "--tenant", "t1", dsn=dsn)
    assert shown.returncode == 0 and "Sandbox Runner" in shown.stdout, shown.stderr
    assert "no community yet" not in shown.stdout
    assert "nothing is stale" in run("status", "--tenant", "t1", dsn=dsn).stdout
    assert [count for _, count, _ in sql(dsn, "SELECT * FROM kgrag.staleness", "t1")] == [0] * 7


def test_who_signed_it_walking_typed_edges_backwards(demo: str) -> None:
    forward = sql(
        demo,
        "SELECT entity_id FROM kgrag.k_hop(ARRAY['PayFlow Processing Agreement'], 1, relations => ARRAY['signed'])",
    )
    assert forward == [("contract:payflow processing agreement",)]  # the edge runs person -> contract
    signers = sql(
        demo,
        "SELECT e.name, k.directions FROM kgrag.k_hop(ARRAY['payflow processing agreement'], 1,"
        " relations => ARRAY['signed'], direction => 'in') AS k JOIN kgrag.entities AS e USING (entity_id)"
        " WHERE k.hop = 1",
    )
    assert signers == [("Maria Silva", ["in"])]
    step = sql(
        demo,
        "SELECT p.src, p.rel, p.dst FROM kgrag.k_hop(ARRAY['PayFlow Processing Agreement'], 1,"
        " relations => ARRAY['SIGNED'], direction => 'both') AS k, kgrag.path_relations(k.path) AS p",
    )
    assert step == [("person:maria silva", "SIGNED", "contract:payflow processing agreement")]


def test_names_wherever_an_id_is_asked(demo: str) -> None:
    by_name = sql(demo, "SELECT entity_id, hop FROM kgrag.k_hop(ARRAY['Payment Gateway'], 2)")
    by_id = sql(demo, "SELECT entity_id, hop FROM kgrag.k_hop(ARRAY['service:payment gateway'], 2)")
    assert by_name == by_id and len(by_name) > 1
    accents = sql(demo, "SELECT entity_id FROM kgrag.k_hop(ARRAY['PAYMENT GÁTEWAY'], 0)")
    assert accents == [("service:payment gateway",)]
    near = sql(demo, "SELECT name, hop FROM kgrag.neighbourhood(ARRAY['PayFlow'], 2) ORDER BY hop, name")
    assert near[0][1] == 0 and len(near) > 2 and all(name for name, _ in near)
    fanned = sql(demo, "SELECT hop, nodes FROM kgrag.fanout('Payment Gateway', 2)")
    assert [hop for hop, _ in fanned] == [0, 1, 2]
    lowered = sql(demo, "SELECT count(*) FROM kgrag.k_hop(ARRAY['Auth Service'], 1, relations => ARRAY['depends_on'])")
    assert lowered[0][0] > 1  # relation types match whatever their case
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="no entity is named 'Payment Gatway'"):
        sql(demo, "SELECT * FROM kgrag.k_hop(ARRAY['Payment Gatway'], 1)")


def test_an_ambiguous_name_lists_the_candidates(conn: psycopg.Connection, tmp_path: Path, dsn: str) -> None:
    ingest(conn, tmp_path, OPS, embedder=HashEmbedder(512))  # a team and a service are both "Billing"
    with pytest.raises(psycopg.errors.InvalidParameterValue) as caught:
        sql(dsn, "SELECT * FROM kgrag.k_hop(ARRAY['billing'], 1)", "t1")
    message = caught.value.diag.message_primary or ""
    assert "ambiguous" in message and "service:billing" in message and "team:billing" in message


def test_search_around_a_chosen_entity(demo: str) -> None:
    rows = sql(
        demo,
        "SELECT kind, ref_id, route, reason FROM kgrag.kgrag_search(question => 'What is going on lately?',"
        """ options => '{"seed_entities": ["ana costa"], "hops": 1}')""",
    )
    assert rows and all(route == "local" and "seeds chosen by the caller: Ana Costa" in why for *_, route, why in rows)
    entities = [ref for kind, ref, _, _ in rows if kind == "entity"]
    assert entities[0] == "person:ana costa" and len(entities) > 1


def test_the_last_search_is_a_function(demo: str) -> None:
    """What a search leaves for the transaction: its route and reason (what an empty search says),
    and the community reports it chose (what a map step over them reads without searching again)."""
    with connect(demo, role=READER) as conn, tenant_transaction(conn, DEMO_TENANT):
        assert conn.execute("SELECT * FROM kgrag.last_search()").fetchall() == [(None, None, None)]
        conn.execute("SELECT * FROM kgrag.kgrag_search(question => 'How do I bake a carrot cake?')").fetchall()
        route, reason, reports = conn.execute("SELECT * FROM kgrag.last_search()").fetchone()  # type: ignore[misc]
        assert route == "vector" and reason.startswith("nothing cleared the floors") and reports == []
        rows = conn.execute(
            "SELECT kind, ref_id FROM kgrag.kgrag_search(question => 'What are the main themes?', route => 'global')"
        ).fetchall()
        route, _, reports = conn.execute("SELECT * FROM kgrag.last_search()").fetchone()  # type: ignore[misc]
    assert route == "global" and reports and reports == [ref for kind, ref in rows if kind == "community"]


def test_which_questions_came_back_empty_per_route(
    dsn: str, conn: psycopg.Connection, admin: psycopg.Connection, tmp_path: Path
) -> None:
    ingest(conn, tmp_path, OPS, embedder=HashEmbedder(512))
    asked = ["What does the Auth Service depend on?", "How do I bake a carrot cake?"]
    for question in asked:
        sql(dsn, f"SELECT count(*) FROM kgrag.kgrag_search(question => '{question}')", "t1")
    assert sql(dsn, "SELECT count(*) FROM kgrag.query_log WHERE question IS NOT NULL", "t1") == [(0,)]  # off
    with tenant_transaction(admin, "*"):  # the owner lets tenants keep question text (revision 0039)
        admin.execute(
            "UPDATE kgrag.settings SET value = jsonb_set(value, '{log_question_text,allowed}', '[true, false]')"
            " WHERE tenant_id = '*' AND key = 'setting_limits'"
        )
    with tenant_transaction(conn, "t1"):
        conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'log_question_text', 'true')")
    for question in asked:
        sql(dsn, f"SELECT kgrag.context(question => '{question}', max_chars => 1500)", "t1")
    empty = sql(
        dsn,
        "SELECT route, question FROM kgrag.query_log"
        " WHERE rows_returned = 0 AND question IS NOT NULL AND searched_at > now() - interval '7 days'",
        "t1",
    )
    assert empty == [("vector", "How do I bake a carrot cake?")]
    packed = sql(dsn, "SELECT question, context_chars FROM kgrag.query_log WHERE question IS NOT NULL ORDER BY 1", "t1")
    assert packed[0] == ("How do I bake a carrot cake?", 0) and 0 < packed[1][1] <= 1500
    by_route = sql(
        dsn, "SELECT route, questions, empty, mean_context_chars FROM kgrag.search_by_route ORDER BY 1", "t1"
    )
    assert [(route, n, e) for route, n, e, _ in by_route] == [("local", 2, 0), ("vector", 2, 2)]
    assert by_route[0][3] == packed[1][1] and by_route[1][3] == 0


def test_the_analysts_psql_block_runs_as_a_reader(demo: str, login_roles: Callable[[str], str]) -> None:
    """docs/analyst.md's statements, through psql, as a kgrag_reader login."""
    role = login_roles(READER)
    with psycopg.connect(demo, autocommit=True) as owner:
        owner.execute("SELECT kgrag.grant_tenant(%s, %s)", [role, DEMO_TENANT])
    section = (REPO / "docs" / "analyst.md").read_text()
    block = section[section.index("```sql") + len("```sql") : section.index("```", section.index("```sql") + 6)]
    script = f"BEGIN;\nSELECT kgrag.use_tenant('{DEMO_TENANT}');\n{block}\nCOMMIT;\n"
    out = subprocess.run(
        [str(_BIN / "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", as_role(demo, role)],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "Maria Silva" in out.stdout and "seeds chosen by the caller: Ana Costa" in out.stdout
    assert "stale communities|0|pgkgrag build" in out.stdout

"""kgrag_search on the bundled sample corpus: every route's rows, their evidence, the options, bad
calls and the query log (the router: test_router.py; the context: context/test_context.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from commands import command_env, run
from conftest import DEMO_TENANT as TENANT
from searching import ask, sql

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder

QUESTIONS = [
    "What does the Auth Service depend on?",
    "Who approves changes to the PayFlow contract?",
    "What are the main themes across the documents?",
    "Tell me about the Payment Gateway in general",
    "What happens when a deploy fails?",
    "Quem aprova mudanças no contrato PayFlow?",
]


@pytest.mark.parametrize("route", ["auto", "local", "global", "mixed", "vector"])
def test_every_evidence_ref_resolves_to_a_chunk(dconn: psycopg.Connection, use: Embedder, route: str) -> None:
    communities = {c for (c,) in sql(dconn, "SELECT community_id FROM kgrag.community")}
    for question in QUESTIONS:
        result = ask(dconn, use, question, route)
        refs = result.evidence()
        assert sql(dconn, "SELECT kgrag.citations_resolvable(%s)", refs) == [(True,)], (question, refs)
        assert not communities & set(refs), "a report id was cited as evidence"
        assert result.route in {"local", "global", "mixed", "vector"} and (route == "auto" or result.route == route)
        for row in result.rows:
            assert row.payload["evidence_refs"], (question, row)
            assert row.kind in {"entity", "chunk", "community"}, row


def test_local_route_rows(dconn: psycopg.Connection, use: Embedder) -> None:
    result = ask(dconn, use, "Who approves changes to the PayFlow contract?", "local")
    entities = [r for r in result.rows if r.kind == "entity"]
    chunks = [r for r in result.rows if r.kind == "chunk"]
    assert entities and chunks and result.rows.index(entities[-1]) < result.rows.index(chunks[0])
    seed = entities[0]
    assert seed.payload["hop"] == 0 and seed.payload["path"] == [seed.ref_id] and seed.source == "graph"
    ana = next(r for r in entities if r.ref_id == "person:ana costa")  # the answer is one hop away
    assert ana.payload["hop"] == 1 and ana.payload["path"][0] == ana.payload["seed"]
    assert "approve" in ana.payload["answer"] and ana.payload["evidence_refs"][0] == "contract-payflow#0"
    assert ana.payload["relations"] and ana.payload["relations"][0]["dst"] == "person:ana costa"
    # every entity's relations are its own path's, one a step (they are read for all paths at once)
    assert len({tuple(r.payload["path"]) for r in entities}) > 2
    for row in entities:
        path, steps = row.payload["path"], row.payload["relations"]
        assert len(steps) == row.payload["hop"] == len(path) - 1, row
        assert all({s["src"], s["dst"]} == {path[i], path[i + 1]} for i, s in enumerate(steps)), row
    assert {r.source for r in chunks} <= {"graph", "vector", "lexical"}
    assert all(set(r.payload["ranks"]) <= {"graph", "vector", "lexical", "own_page", "bridge_page"} for r in chunks)
    # the seed, the PayFlow Processing Agreement, has a page of its own: its answer chunk comes first
    assert chunks[0].ref_id == seed.payload["evidence_refs"][0] and chunks[0].payload["ranks"]["own_page"] == 1
    assert "first the seeds' own pages" in result.reason
    assert [r.rank for r in result.rows] == list(range(1, len(result.rows) + 1))


DECIMALS = {
    "khop_timeout_ms": "2000.0",
    "vector_overfetch": "4.0",
    "hnsw_ef_search": "40.0",
    "ppr_max_iterations": "50.0",
}


def test_settings_written_with_decimals_are_whole_numbers_to_a_search(dconn: psycopg.Connection, use: Embedder) -> None:
    """A tenant's setting written 2000.0 is 2000 where a search reads it, alone or with others in one statement."""
    insert = "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (kgrag.current_tenant(), %s, %s::jsonb)"
    try:
        with tenant_transaction(dconn, TENANT):
            for key, value in DECIMALS.items():
                dconn.execute(insert, [key, value])
        for ranking in ("paths", "pagerank"):
            assert ask(dconn, use, "What does the Auth Service depend on?", "local", graph_ranking=ranking).rows
    finally:
        with tenant_transaction(dconn, TENANT):
            dconn.execute(
                "DELETE FROM kgrag.settings WHERE tenant_id = %s AND key = ANY (%s)", [TENANT, list(DECIMALS)]
            )


def test_multi_hop_question_reaches_the_answer_chunk(dconn: psycopg.Connection, use: Embedder) -> None:
    vector = ask(dconn, use, "Who leads the team that owns the Payment Gateway?", "vector", k=5)
    local = ask(dconn, use, "Who leads the team that owns the Payment Gateway?", "local", k=5)
    assert "team-payments#0" in local.chunks()  # "Maria Silva leads the Payments Team."
    assert local.route == "local" and vector.route == "vector"


def test_global_route_is_a_map_with_cited_chunks(dconn: psycopg.Connection, use: Embedder) -> None:
    result = ask(dconn, use, "What are the main themes across the documents?", k=6)
    maps = [r for r in result.rows if r.kind == "community"]
    chunks = [r for r in result.rows if r.kind == "chunk"]
    assert len(maps) >= 3 and len(chunks) == 6
    weights = [m.payload["weight"] for m in maps]
    assert weights == sorted(weights, reverse=True)  # the shape of the corpus: by weight
    for chunk in chunks:
        assert chunk.source == "community" and chunk.payload["via"] in {m.ref_id for m in maps}
        assert chunk.payload["evidence_refs"] == [chunk.ref_id]
    ranked = ask(dconn, use, "Which themes involve card payments and the PayFlow vendor?", "global")
    assert ranked.rows and ranked.rows[0].kind == "community" and "Payment" in ranked.rows[0].payload["title"]


def test_mixed_route_is_one_map_and_local_evidence(dconn: psycopg.Connection, use: Embedder) -> None:
    result = ask(dconn, use, "Tell me about the Payment Gateway in general")
    assert [r.kind for r in result.rows][:2] == ["community", "entity"]
    assert sum(1 for r in result.rows if r.kind == "community") == 1
    assert any(r.ref_id == "service:payment gateway" for r in result.rows)


def test_vector_route_fuses_vector_and_lexical(dconn: psycopg.Connection, use: Embedder) -> None:
    result = ask(dconn, use, "What happens when a deploy fails?", "vector")
    assert result.rows and all(r.kind == "chunk" and r.source in {"vector", "lexical"} for r in result.rows)
    assert result.rows[0].ref_id == "policy-deploy#0"


def test_options_change_the_traversal(dconn: psycopg.Connection, use: Embedder) -> None:
    one = ask(dconn, use, "What does the Auth Service depend on?", "local", entities=100, hops=1)
    two = ask(dconn, use, "What does the Auth Service depend on?", "local", entities=100, hops=2, degree_cap=None)
    assert max(r.payload["hop"] for r in one.rows if r.kind == "entity") == 1
    assert len([r for r in two.rows if r.kind == "entity"]) > len([r for r in one.rows if r.kind == "entity"])
    # the degree cap counts a node's edges of every relation, so filter relations without it
    typed = ask(
        dconn,
        use,
        "What does the Auth Service depend on?",
        "local",
        entities=100,
        relations=["DEPENDS_ON"],
        degree_cap=None,
    )
    assert {r.ref_id for r in typed.rows if r.kind == "entity"} == {
        "service:auth service",
        "service:session store",
        "infrastructure:object store",
    }


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("SELECT * FROM kgrag.kgrag_search(%(v)s, 'sideways')", "unknown route 'sideways'"),
        ("SELECT * FROM kgrag.kgrag_search(%(v)s, 'auto', 'x', 0)", "k must be between 1 and 1000"),
        ("SELECT * FROM kgrag.kgrag_search(%(v)s, 'auto', '   ')", "question text is empty"),
        ("SELECT * FROM kgrag.kgrag_search(%(v)s, 'auto', 'x', 10, '{\"hopz\": 1}')", "unknown search option"),
        ("SELECT * FROM kgrag.kgrag_search(%(v)s, 'auto', 'x', 10, '{\"hops\": 7}')", "outside 0..4"),
        ("SELECT * FROM kgrag.kgrag_search('[1,2,3]'::vector)", "has 3 dimensions"),
    ],
)
def test_bad_calls_are_named(dconn: psycopg.Connection, use: Embedder, call: str, message: str) -> None:
    with pytest.raises(psycopg.DataError, match=message), tenant_transaction(dconn, TENANT):
        dconn.execute(call, {"v": use.embed(["anything"])[0]})


def test_the_query_log_can_be_switched_off(dconn: psycopg.Connection, use: Embedder) -> None:
    before = sql(dconn, "SELECT count(*) FROM kgrag.query_log")[0][0]
    ask(dconn, use, "What does the Auth Service depend on?")
    logged = sql(
        dconn, "SELECT route, seeds, paths_walked, rows_returned FROM kgrag.query_log ORDER BY searched_at DESC LIMIT 1"
    )[0]
    assert logged[0] == "local" and logged[1] == ["service:auth service"] and logged[2] > 0 and logged[3] > 0
    with tenant_transaction(dconn, TENANT):
        dconn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'query_log', 'false')", [TENANT])
    ask(dconn, use, "What does the Auth Service depend on?")  # not the tenant's to switch off (revision 0039)
    assert sql(dconn, "SELECT count(*) FROM kgrag.query_log")[0][0] == before + 2
    with tenant_transaction(dconn, "*"):  # unless the schema owner allows it
        dconn.execute(
            "UPDATE kgrag.settings SET value = jsonb_set(value, '{query_log,allowed}', '[true, false]')"
            " WHERE tenant_id = '*' AND key = 'setting_limits'"
        )
    ask(dconn, use, "What does the Auth Service depend on?")
    assert sql(dconn, "SELECT count(*) FROM kgrag.query_log")[0][0] == before + 2
    with tenant_transaction(dconn, TENANT):  # the demo database is shared: as it was
        dconn.execute("DELETE FROM kgrag.settings WHERE tenant_id = %s AND key = 'query_log'", [TENANT])
    with tenant_transaction(dconn, "*"):
        dconn.execute(
            "UPDATE kgrag.settings SET value = jsonb_set(value, '{query_log,allowed}', '[true]')"
            " WHERE tenant_id = '*' AND key = 'setting_limits'"
        )


@pytest.mark.slow
def test_python_api_and_command_line(demo: str, tmp_path: Path) -> None:
    env = command_env(demo, KGRAG_TENANT=TENANT)
    code = (
        "import pgkgrag, json; r = pgkgrag.search('Who approves changes to the PayFlow contract?', k=3);"
        "print(json.dumps([r.route, r.evidence()[:2]]))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    route, evidence = json.loads(out.stdout)
    assert route == "local" and evidence[0] == "contract-payflow#0"
    rows = run("search", "What does the Auth Service depend on?", "--json", "--k", "3", dsn=demo, KGRAG_TENANT=TENANT)
    assert rows.returncode == 0, rows.stderr
    parsed = json.loads(rows.stdout)
    assert parsed[0]["route"] == "local" and {"rank", "ref_id", "kind", "source", "score", "reason", "payload"} <= set(
        parsed[0]
    )
    table = run("search", "How do I bake a carrot cake?", dsn=demo, KGRAG_TENANT=TENANT)
    assert table.returncode == 0, table.stderr
    assert "no rows (the reason above says why)" in table.stdout and "nothing cleared the floors" in table.stdout

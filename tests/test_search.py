"""kgrag_search on the bundled sample corpus: the router, every route, negatives, citations,
context packing and the query log."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from commands import command_env, run
from conftest import DEMO_TENANT as TENANT

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.retrieval.results import SearchResult
from pgkgrag.retrieval.search import run_search


@pytest.fixture
def dconn(demo: str) -> Iterator[psycopg.Connection]:
    with connect(demo) as conn:
        yield conn


def ask(
    conn: psycopg.Connection, use: Embedder, question: str, route: str = "auto", k: int = 10, **options: object
) -> SearchResult:
    return run_search(conn, TENANT, use, question, route, k, options)


def sql(conn: psycopg.Connection, query: str, *params: object) -> list[tuple]:
    with tenant_transaction(conn, TENANT):
        return conn.execute(query, list(params)).fetchall()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("question", "route", "reason"),
    [
        ("What does the Auth Service depend on?", "local", "names Auth Service"),
        ("O que o Auth Service precisa para funcionar?", "local", "names Auth Service"),
        ("Who approves changes to the PayFlow contract?", "local", "names PayFlow Processing Agreement"),
        ("What are the main themes across the documents?", "global", "rule en-themes"),
        ("Give me an overview of the collection", "global", "rule en-overview"),
        ("Quais são os principais temas do acervo?", "global", "rule pt-temas"),
        ("Qual é o panorama do acervo como um todo?", "global", "rule pt-panorama"),
        ("Tell me about the Payment Gateway in general", "mixed", "rule en-general"),
        ("Payment Gateway, no contexto geral", "mixed", "rule pt-geral"),
        ("What happens when a deploy fails?", "vector", "no entity of the graph is named"),
        ("How do I bake a carrot cake?", "vector", "no entity of the graph is named"),
    ],
)
def test_the_router_picks_and_says_why(
    dconn: psycopg.Connection, use: Embedder, question: str, route: str, reason: str
) -> None:
    result = ask(dconn, use, question)
    assert result.route == route, result.reason
    assert reason in result.reason
    # a question the sample answers gets rows, each with its evidence; one it does not, none, and says so
    answered = question != "How do I bake a carrot cake?"
    assert bool(result.rows) == answered, result.reason
    assert all(row.payload["evidence_refs"] for row in result.rows)
    assert answered or result.reason.startswith("nothing cleared the floors")


@pytest.mark.parametrize(
    "question", ["How do I bake a carrot cake?", "Who won the 1998 football world cup?", "Como faço pão de queijo?"]
)
def test_negative_questions_return_nothing_and_the_log_says_why(
    dconn: psycopg.Connection, use: Embedder, question: str
) -> None:
    result = ask(dconn, use, question)
    assert result.rows == []
    assert result.reason.startswith("nothing cleared the floors")
    logged = sql(dconn, "SELECT route, reason, rows_returned FROM kgrag.query_log ORDER BY searched_at DESC LIMIT 1")
    assert logged == [(result.route, result.reason, 0)]


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
    assert {r.source for r in chunks} <= {"graph", "vector", "lexical"}
    assert all(set(r.payload["ranks"]) <= {"graph", "vector", "lexical", "own_page", "bridge_page"} for r in chunks)
    # the seed, the PayFlow Processing Agreement, has a page of its own: its answer chunk comes first
    assert chunks[0].ref_id == seed.payload["evidence_refs"][0] and chunks[0].payload["ranks"]["own_page"] == 1
    assert "first the seeds' own pages" in result.reason
    assert [r.rank for r in result.rows] == list(range(1, len(result.rows) + 1))


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


def test_forced_route_keeps_the_routers_opinion_in_the_reason(dconn: psycopg.Connection, use: Embedder) -> None:
    result = ask(dconn, use, "What does the Auth Service depend on?", "vector")
    assert result.route == "vector" and "chosen by the caller" in result.reason and "would pick local" in result.reason


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


def test_citations_resolvable_and_cited_chunks(dconn: psycopg.Connection) -> None:
    community = sql(dconn, "SELECT community_id FROM kgrag.community LIMIT 1")[0][0]
    assert sql(dconn, "SELECT kgrag.citations_resolvable(ARRAY['svc-auth#0', 'inc-101#0'])") == [(True,)]
    assert sql(dconn, "SELECT kgrag.citations_resolvable(%s)", [community]) == [(False,)]
    assert sql(dconn, "SELECT kgrag.citations_resolvable(ARRAY['svc-auth#9'])") == [(False,)]
    assert sql(dconn, "SELECT kgrag.citations_resolvable('{}')") == [(True,)]
    refs = ["inc-101#0", "nope#0", "svc-auth#0", "inc-101#0"]
    rows = sql(dconn, "SELECT chunk_id, doc_id, title FROM kgrag.cited_chunks(%s)", refs)
    assert rows == [("inc-101#0", "inc-101", "INC-101 login outage"), ("svc-auth#0", "svc-auth", "Auth Service")]
    with tenant_transaction(dconn, "other"):
        assert dconn.execute("SELECT kgrag.citations_resolvable(ARRAY['svc-auth#0'])").fetchone() == (False,)


@pytest.mark.parametrize("budget", [120, 400, 900, 3000])
def test_the_context_budget_holds_with_relations_counted(dconn: psycopg.Connection, use: Embedder, budget: int) -> None:
    vector = use.embed(["Who approves changes to the PayFlow contract?"])[0]
    with tenant_transaction(dconn, TENANT):
        text = dconn.execute(
            "SELECT kgrag.context(%s, 'local', %s, %s)",
            [vector, "Who approves changes to the PayFlow contract?", budget],
        ).fetchone()[0]
        blocks = dconn.execute(
            "SELECT kind, ref_id, body, chars FROM kgrag.context_blocks(%s, 'local', %s, %s)",
            [vector, "Who approves changes to the PayFlow contract?", budget],
        ).fetchall()
    assert len(text) <= budget
    assert text == "\n\n".join(b[2] for b in blocks)
    assert sum(b[3] for b in blocks) + 2 * max(len(blocks) - 1, 0) == len(text)
    chunk_refs = [b[1] for b in blocks if b[0] == "chunk"]
    assert len(chunk_refs) == len(set(chunk_refs))
    if budget >= 900:
        assert "-[SIGNED]->" in text or "-[CO_OCCURS]->" in text or "-[DEPENDS_ON]->" in text  # relations are in
        assert "[contract-payflow | contract-payflow#0]" in text or "(contract-payflow#0)" in text


def test_the_query_log_can_be_switched_off(dconn: psycopg.Connection, use: Embedder) -> None:
    before = sql(dconn, "SELECT count(*) FROM kgrag.query_log")[0][0]
    ask(dconn, use, "What does the Auth Service depend on?")
    logged = sql(
        dconn, "SELECT route, seeds, paths_walked, rows_returned FROM kgrag.query_log ORDER BY searched_at DESC LIMIT 1"
    )[0]
    assert logged[0] == "local" and logged[1] == ["service:auth service"] and logged[2] > 0 and logged[3] > 0
    with tenant_transaction(dconn, TENANT):
        dconn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'query_log', 'false')", [TENANT])
    ask(dconn, use, "What does the Auth Service depend on?")
    assert sql(dconn, "SELECT count(*) FROM kgrag.query_log")[0][0] == before + 1
    with tenant_transaction(dconn, TENANT):
        dconn.execute("DELETE FROM kgrag.settings WHERE tenant_id = %s AND key = 'query_log'", [TENANT])


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
    assert "no result" in table.stdout and "nothing cleared the floors" in table.stdout

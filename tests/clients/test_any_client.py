"""Any client: psql with the question text alone, Node.js through `pgkgrag serve`, a read-only
transaction and a real hot standby, degenerate vectors refused, and a tenant that is not there said so.

Every client logs in as a role granted kgrag_reader only, as an application or an analyst would.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
import psycopg
import pytest
from commands import psql, run, serving
from conftest import DEMO_TENANT, REPO, as_role
from psycopg.conninfo import conninfo_to_dict
from standby import hot_standby

import pgkgrag
from pgkgrag.db.connections import READER, WRITER, connect, tenant_transaction
from pgkgrag.embed.embedders import Embedder

QUESTION = "Who approves changes to the PayFlow contract?"
ROUTE_QUESTIONS = {
    "local": QUESTION,
    "global": "What are the main themes across the documents?",
    "mixed": "Tell me about the Payment Gateway in general",
    "vector": "What happens when a deploy fails?",
}


@pytest.fixture(scope="module")
def reader(demo: str, login_roles: Callable[[str], str]) -> str:
    """The demo database as a login role granted kgrag_reader and the tenant demo only."""
    role = login_roles(READER)
    with psycopg.connect(demo, autocommit=True) as owner:
        owner.execute("SELECT kgrag.grant_tenant(%s, %s)", [role, DEMO_TENANT])
    return as_role(demo, role)


def test_psql_searches_with_the_question_text_alone(reader: str) -> None:
    out = psql(reader, "-v", f"tenant={DEMO_TENANT}", "-f", str(REPO / "examples" / "search.psql"))
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # no NOTICE, no WARNING: a normal search is quiet
    rows = [line.split("|") for line in out.stdout.splitlines() if line.count("|") == 5]
    refs = {(kind, ref) for _, kind, _, ref, _, _ in rows}
    assert ("chunk", "contract-payflow#0") in refs and ("entity", "person:ana costa") in refs
    assert {route for *_, route in rows} == {"local"}
    assert "no question vector: vector search skipped" in out.stdout


def test_psql_every_route_twice_in_one_transaction_is_quiet(reader: str) -> None:
    calls = "".join(
        f"SELECT route, count(*) FROM kgrag.kgrag_search(NULL, 'auto', question => '{q}') GROUP BY route;\n" * 2
        for q in ROUTE_QUESTIONS.values()
    )
    script = f"BEGIN;\nSELECT kgrag.use_tenant('{DEMO_TENANT}');\n{calls}COMMIT;\n"
    out = psql(reader, "-v", "ON_ERROR_STOP=1", "-c", script)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    answered = [line.split("|") for line in out.stdout.splitlines() if "|" in line]
    assert [route for route, _ in answered] == [r for r in ROUTE_QUESTIONS for _ in range(2)], out.stdout
    assert all(int(n) > 0 for _, n in answered), out.stdout


def test_a_question_needs_a_vector_or_a_text(reader: str) -> None:
    expected = "give the question vector, the question text"
    with (
        psycopg.connect(reader) as conn,
        tenant_transaction(conn, DEMO_TENANT),
        pytest.raises(psycopg.errors.InvalidParameterValue, match=expected),
    ):
        conn.execute("SELECT * FROM kgrag.kgrag_search()")


def test_degenerate_vectors_are_refused_wherever_they_enter(demo: str, use: Embedder) -> None:
    zero = np.zeros(512, dtype=np.float32)
    with connect(demo, role=WRITER) as conn:
        for call, params in [
            ("SELECT * FROM kgrag.kgrag_search(%s, 'auto', 'x')", [zero]),
            ("SELECT * FROM kgrag.search_entities_vector(%s)", [zero]),
            ("SELECT kgrag.context(%s)", [zero]),
            (
                "SELECT kgrag.store_embeddings('entity', ARRAY['service:auth service'], ARRAY[%s::vector], ARRAY['h'])",
                [zero],
            ),
            (
                "UPDATE kgrag.chunk SET embedding = %s WHERE tenant_id = %s AND chunk_id = 'svc-auth#0'",
                [zero, DEMO_TENANT],
            ),
        ]:
            with (
                pytest.raises(psycopg.errors.InvalidParameterValue, match="zero length"),
                tenant_transaction(conn, DEMO_TENANT),
            ):
                conn.execute(call, params)  # type: ignore[arg-type]
        for bad in (np.nan, np.inf):
            vector = use.embed(["anything"])[0].copy()
            vector[3] = bad
            with pytest.raises(psycopg.DataError, match="not allowed in vector"), tenant_transaction(conn, DEMO_TENANT):
                conn.execute("SELECT * FROM kgrag.kgrag_search(%s, 'auto', 'x')", [vector])
        # nothing was stored: the entity keeps its embedding
        with tenant_transaction(conn, DEMO_TENANT):
            norm = conn.execute(
                "SELECT vector_norm(embedding) FROM kgrag.entity WHERE entity_id = 'service:auth service'"
            ).fetchone()
        assert norm is not None and norm[0] > 0.99


def _routes_answer(dsn: str) -> dict[str, tuple[int, str]]:
    """Every route, as the router picks it, with the question's vector (the Python client) and with
    its text only (SQL); the contexts too."""
    found: dict[str, tuple[int, str]] = {}
    with pgkgrag.connect(dsn, tenant=DEMO_TENANT) as client:
        for route, question in ROUTE_QUESTIONS.items():
            result = client.search(question)
            assert result.route == route, result.reason
            found[route] = (len(result.rows), result.reason)
            assert client.context(question, max_chars=2000)
    with psycopg.connect(dsn) as conn, tenant_transaction(conn, DEMO_TENANT):
        for route, question in ROUTE_QUESTIONS.items():
            rows = conn.execute("SELECT route, reason FROM kgrag.kgrag_search(question => %s)", [question]).fetchall()
            assert {r for r, _ in rows} == {route}, rows[:1]
            found[f"{route} by text"] = (len(rows), rows[0][1])
            assert conn.execute("SELECT kgrag.context(question => %s)", [question]).fetchone() != ("",)
    return found


def test_every_route_runs_in_a_read_only_transaction(reader: str) -> None:
    with psycopg.connect(reader) as conn:
        conn.read_only = True
        with tenant_transaction(conn, DEMO_TENANT):
            before = conn.execute("SELECT count(*) FROM kgrag.query_log").fetchone()
            rows = conn.execute("SELECT reason FROM kgrag.kgrag_search(NULL, 'local', %s)", [QUESTION]).fetchall()
            assert rows and "not logged in kgrag.query_log: the transaction is read-only" in rows[0][0]
            assert conn.execute("SELECT count(*) FROM kgrag.query_log").fetchone() == before


@pytest.mark.slow
def test_every_route_runs_on_a_hot_standby(
    server: object, demo: str, reader: str, record_property: Callable[[str, object], None]
) -> None:
    if getattr(server, "name", "") != "pg18":
        pytest.skip("the standby is made with the embedded server's own binaries (KGRAG_TEST_DSN is set)")
    with hot_standby(demo) as standby:
        replica = as_role(standby, conninfo_to_dict(reader)["user"])
        with psycopg.connect(replica) as conn:
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
            # a curator (or an analyst) reads the review queue and what is stale on the standby too
            with tenant_transaction(conn, DEMO_TENANT):
                queue = conn.execute("SELECT item, count(*) FROM kgrag.review_queue GROUP BY 1").fetchall()
                stale = conn.execute("SELECT count(*) FROM kgrag.staleness").fetchone()
            assert dict(queue).get("namesakes", 0) > 0 and stale == (7,)
        found = _routes_answer(replica)
    for route, (n, reason) in found.items():
        assert n > 0, (route, reason)
        assert "not logged in kgrag.query_log: the transaction is read-only" in reason, (route, reason)
    assert "first the seeds' own pages" in found["local"][1]  # the pinned pages read only, as the rest
    record_property("routes answered on the standby", ", ".join(sorted(found)))


@pytest.mark.slow
def test_a_tenant_without_documents_is_said_to_be_one(demo: str, reader: str, use: Embedder) -> None:
    notices: list[str] = []
    with psycopg.connect(demo) as conn, tenant_transaction(conn, "nobody"):
        conn.add_notice_handler(lambda notice: notices.append(f"{notice.message_primary} / {notice.message_hint}"))
        reason = conn.execute("SELECT reason FROM kgrag.kgrag_search(question => %s)", [QUESTION]).fetchall()
        assert reason == []
        # said to any SQL client (psql prints a NOTICE), not only in kgrag.last_search()
        assert notices == [
            "tenant 'nobody' has no documents: the search found nothing to search / Check the name"
            " (SELECT * FROM kgrag.tenants() lists the tenants with documents), or ingest first."
        ]
        assert (
            "tenant 'nobody' has no documents" in conn.execute("SELECT reason FROM kgrag.last_search()").fetchone()[0]
        )  # type: ignore[index]
    for command in (["search", QUESTION], ["build"], ["delete", "svc-auth"], ["context", QUESTION]):
        out = run(*command, "--tenant", "nobody", dsn=demo)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert "tenant 'nobody' has no documents" in out.stderr and "demo (41 documents)" in out.stderr, out.stderr
    listed = run("tenants", dsn=demo)
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if " demo " in line)
    assert [int(c) for c in line.replace("│", " ").split()[1:3]] == [41, 41]  # documents, chunks


def test_global_before_build_says_to_build(demo: str, tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(
        json.dumps(
            {"doc_id": "x", "text": "The Ledger feeds the Vault.", "entities": [{"name": "Ledger"}, {"name": "Vault"}]}
        )
        + "\n"
    )
    out = run("ingest", str(path), "--tenant", "unbuilt", "--no-build", "--embedder", "hash", dsn=demo)
    assert out.returncode == 0, out.stderr
    searched = run("search", "What are the main themes?", "--tenant", "unbuilt", "--route", "global", dsn=demo)
    assert searched.returncode == 0, searched.stderr
    assert "run `pgkgrag build`" in searched.stdout


API_KEY: dict[str, str] = {}  # the key embeddings_server made for tenant demo


@pytest.fixture(scope="module")
def embeddings_server(demo: str) -> Iterator[str]:
    """`pgkgrag serve` as a user starts it, with an API key of tenant demo; yields its base URL."""
    made = run("keys", "create", "embeddings-test", "--tenant", DEMO_TENANT, dsn=demo)
    assert made.returncode == 0, made.stderr
    API_KEY["key"] = made.stdout.splitlines()[-1]
    AUTH["Authorization"] = f"Bearer {API_KEY['key']}"
    try:
        with serving(demo) as base:
            yield base
    finally:
        run("keys", "revoke", "embeddings-test", dsn=demo)


AUTH: dict[str, str] = {}  # filled by embeddings_server: the parameters below share the dict


def test_the_embeddings_endpoint_answers_like_openai(embeddings_server: str, use: Embedder) -> None:
    url = f"{embeddings_server}/v1/embeddings"
    body = httpx.post(url, json={"model": "use", "input": [QUESTION, "second"]}, headers=AUTH, timeout=60).json()
    assert body["object"] == "list" and body["model"] == "use" and [d["index"] for d in body["data"]] == [0, 1]
    assert body["usage"]["prompt_tokens"] > 0
    expected = use.embed([QUESTION])[0]
    assert np.allclose(body["data"][0]["embedding"], expected, atol=1e-6)
    packed = httpx.post(
        url, json={"model": "use", "input": QUESTION, "encoding_format": "base64"}, headers=AUTH, timeout=60
    ).json()["data"][0]["embedding"]
    assert np.allclose(np.frombuffer(base64.b64decode(packed), dtype="<f4"), expected, atol=1e-6)


def test_the_embeddings_endpoint_serves_e5_questions_and_passages(embeddings_server: str, e5: Embedder) -> None:
    """A tenant of e5 (the default) embeds its questions with the server: as queries unless the
    request says passage, in the model's own 384 dimensions, which kgrag_search takes."""
    url = f"{embeddings_server}/v1/embeddings"
    for extra, expected in (
        ({}, e5.embed_queries([QUESTION])[0]),
        ({"input_type": "passage"}, e5.embed([QUESTION])[0]),
    ):
        body = httpx.post(url, json={"model": "e5", "input": QUESTION, **extra}, headers=AUTH, timeout=60).json()
        assert len(body["data"][0]["embedding"]) == 384
        assert np.allclose(body["data"][0]["embedding"], expected, atol=1e-6)


@pytest.mark.parametrize(
    ("payload", "headers", "status", "message"),
    [
        ({"model": "use", "input": "x"}, {}, 401, "API key is required"),
        ({"model": "use", "input": "x"}, {"Authorization": "Bearer wrong"}, 401, "kgk_ and 64 hex digits"),
        ({"model": "use", "input": "x"}, {"Authorization": f"Bearer kgk_{'0' * 64}"}, 401, "unknown or revoked"),
        ({"model": "ada-002", "input": "x"}, AUTH, 404, "does not exist here"),
        ({"model": "openai", "input": "x"}, AUTH, 404, "does not exist here"),
        ({"model": "use", "input": []}, AUTH, 400, "input is empty"),
        ({"model": "use", "input": ["ok", "  "]}, AUTH, 400, "input[1] is empty"),
        ({"model": "use", "input": "x" * 40_000}, AUTH, 400, "more than 8192"),
        ({"model": "use", "input": [[1, 2, 3]]}, AUTH, 400, "token arrays"),
        ({"model": "use", "input": "x", "dimensions": 8}, AUTH, 400, "512-dimensional"),
        ({"input": "x"}, AUTH, 400, "model"),
    ],
)
def test_bad_embedding_requests_get_clear_errors(
    embeddings_server: str, payload: dict[str, object], headers: dict[str, str], status: int, message: str
) -> None:
    response = httpx.post(f"{embeddings_server}/v1/embeddings", json=payload, headers=headers, timeout=60)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert message in error["message"] and error["type"] == "invalid_request_error"


def test_node_embeds_through_serve_and_gets_the_python_clients_rows(
    node_pg: Path, embeddings_server: str, reader: str
) -> None:
    script = node_pg / "search.mjs"
    shutil.copy(REPO / "examples" / "search.mjs", script)
    info = conninfo_to_dict(reader)
    env = {
        "PATH": "/usr/bin:/bin",
        "PGHOST": str(info["host"]),
        "PGDATABASE": str(info["dbname"]),
        "PGUSER": str(info["user"]),
        "KGRAG_TENANT": DEMO_TENANT,
        "KGRAG_EMBEDDINGS_URL": f"{embeddings_server}/v1/embeddings",
        "KGRAG_API_KEY": API_KEY["key"],
    }
    out = subprocess.run(
        ["node", str(script), QUESTION], cwd=node_pg, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    from_node = [(r["rank"], r["kind"], r["ref_id"], r["route"]) for r in json.loads(out.stdout)]
    with pgkgrag.connect(reader, tenant=DEMO_TENANT) as client:
        result = client.search(QUESTION)
    from_python = [(r.rank, r.kind, r.ref_id, result.route) for r in result.rows]
    assert from_node == from_python and len(from_node) > 5
    # options go through as they are: a count question at a date, above a confidence
    counting, options = "How many contracts are there?", {"as_of": "2025-01-01", "min_confidence": 0.5}
    out = subprocess.run(
        ["node", str(script), counting, json.dumps(options)],
        cwd=node_pg,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    node_rows = json.loads(out.stdout)
    with pgkgrag.connect(reader, tenant=DEMO_TENANT) as client:
        result = client.search(counting, options=options)
    assert [(r["ref_id"], r["reason"]) for r in node_rows] == [(r.ref_id, result.reason) for r in result.rows]
    assert node_rows and all("matching" in r["payload"] for r in node_rows)
    assert (
        "holds 3 entities of type Contract" in node_rows[0]["reason"] and "may be incomplete" in node_rows[0]["reason"]
    )
    # without a tenant it says so, not `[]`; a question with nothing relevant says why
    untold = subprocess.run(
        ["node", str(script), QUESTION],
        cwd=node_pg,
        env={k: v for k, v in env.items() if k != "KGRAG_TENANT"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert untold.returncode == 2 and "KGRAG_TENANT is not set" in untold.stderr and untold.stdout == ""
    # an end user's groups narrow the search (none: the same rows here, every document is for
    # everyone); a group this login does not hold is refused, said in one line
    for groups, code in (("", 0), ("hr", 1)):
        narrowed = subprocess.run(
            ["node", str(script), QUESTION],
            cwd=node_pg,
            env={**env, "KGRAG_GROUPS": groups},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert narrowed.returncode == code, narrowed.stderr
        if code == 0:
            assert [(r["rank"], r["kind"], r["ref_id"], r["route"]) for r in json.loads(narrowed.stdout)] == from_node
        else:
            assert narrowed.stderr.strip() == "error: this transaction does not hold group 'hr'", narrowed.stderr
    empty = subprocess.run(
        ["node", str(script), "How do I bake a carrot cake?"], cwd=node_pg, env=env, capture_output=True, text=True
    )
    assert empty.returncode == 0 and json.loads(empty.stdout) == []
    assert "no result: nothing cleared the floors" in empty.stderr, empty.stderr


def test_the_client_keeps_its_connection_and_comes_back_after_losing_it(demo: str, reader: str) -> None:
    with pgkgrag.connect(reader, tenant=DEMO_TENANT) as client:
        first = client.search(QUESTION)
        embedder = client.embedder()
        with psycopg.connect(demo, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                [conninfo_to_dict(reader)["user"]],
            )
        with pytest.raises(psycopg.OperationalError):
            client.search(QUESTION)  # the call that meets the dropped connection says so
        again = client.search(QUESTION)  # and the next one connects again
        assert client.embedder() is embedder
    assert [r.ref_id for r in again.rows] == [r.ref_id for r in first.rows]

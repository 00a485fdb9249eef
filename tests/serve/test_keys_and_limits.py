"""`pgkgrag serve` as a team exposes it: API keys made by the schema owner, the tenant decided by
the key and checked by the database, an attacker holding tenant a's key, limits, metrics.

The server runs as a real process (`pgkgrag serve`) logged in as a login role granted kgrag_reader
alone, with no tenant grant of its own, as the README says to run it: only a key opens a tenant.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from commands import bearer, make_key, psql, run, serving
from conftest import Server, as_role

from pgkgrag.db.connections import READER, WRITER, connect
from pgkgrag.serve.errors import CODES

A_TEXT = "# Acme contract\n\nThe Acme contract is approved by Maria Silva, head of procurement. It renews in March.\n"
B_TEXT = "# Zeta project\n\nWombatfrost is the secret project of Zeta, run by Ivo Petrov since 2019.\n"
# tenant a's document for its HR group alone
HR_TEXT = "# Review\n\nThe Acme contract review by Quillon Marsh found a grievance about Maria Silva.\n"


@dataclass(frozen=True)
class Setup:
    owner_dsn: str
    service_dsn: str
    service_role: str
    key_a: str
    key_b: str
    key_ab: str
    key_hr: str  # tenant a's, holding group hr


@pytest.fixture(scope="module")
def setup(
    server: Server, template: str, login_roles: Callable[[str], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Setup]:
    """Tenants a and b (one document each, hash embedder), keys for a, for b and for both, and a
    service login role granted kgrag_reader alone."""
    name = server.create_database(template=template)
    dsn = server.dsn(name)
    folder = tmp_path_factory.mktemp("tenants")
    for tenant, text in (("a", A_TEXT), ("b", B_TEXT)):
        path = folder / f"{tenant}.md"
        path.write_text(text)
        done = run("ingest", str(path), "--tenant", tenant, "--embedder", "hash", dsn=dsn)
        assert done.returncode == 0, done.stderr
    (folder / "hr").mkdir()
    (folder / "hr" / "review.md").write_text(HR_TEXT)
    done = run("ingest", str(folder / "hr"), "--tenant", "a", "--embedder", "hash", "--access", "hr", dsn=dsn)
    assert done.returncode == 0, done.stderr
    role = login_roles(READER)
    try:
        yield Setup(
            dsn,
            as_role(dsn, role),
            role,
            make_key(dsn, "app-a", "--tenant", "a"),
            make_key(dsn, "app-b", "--tenant", "b"),
            make_key(dsn, "both", "--tenant", "a", "--tenant", "b"),
            make_key(dsn, "hr-a", "--tenant", "a", "--group", "hr"),
        )
    finally:
        server.drop_database(name)


@pytest.fixture(scope="module")
def base(setup: Setup) -> Iterator[str]:
    with serving(setup.service_dsn, "--key-rate", "1000/minute") as url:
        yield url


def test_keys_are_shown_once_and_kept_hashed(setup: Setup) -> None:
    listed = run("keys", "list", "--json", dsn=setup.owner_dsn)
    assert listed.returncode == 0, listed.stderr
    assert setup.key_a not in listed.stdout and '"app-a"' in listed.stdout
    assert setup.key_a.startswith("kgk_") and len(setup.key_a) == 68
    with connect(setup.owner_dsn) as conn:
        rows = conn.execute("SELECT k::text FROM kgrag_private.api_key AS k").fetchall()
        hashed = conn.execute(
            "SELECT count(*) FROM kgrag_private.api_key WHERE key_hash = encode(sha256(convert_to(%s, 'UTF8')), 'hex')",
            [setup.key_a],
        ).fetchone()
    assert hashed == (1,)
    assert not any(setup.key_a in r[0] or setup.key_a[4:] in r[0] for r in rows)
    again = run("keys", "create", "app-a", "--tenant", "a", dsn=setup.owner_dsn)
    assert again.returncode == 1 and "exists" in again.stderr and "Traceback" not in again.stderr
    bad = run("keys", "create", "Bad Name", "--tenant", "a", dsn=setup.owner_dsn)
    assert bad.returncode == 1 and "key name" in bad.stderr
    star = run("keys", "create", "star", "--tenant", "*", dsn=setup.owner_dsn)
    assert star.returncode == 1 and "not '*'" in star.stderr


def test_the_database_binds_a_key_to_its_tenants(setup: Setup) -> None:
    """In SQL, as the service's login role (kgrag_reader, no tenant grant): only a key opens a
    tenant, only its own, in its transaction only; a forged seal opens nothing."""
    with connect(setup.service_dsn, role=READER) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT kgrag.use_tenant('a')")
        conn.rollback()
        assert conn.execute("SELECT kgrag.use_key(%s)", [setup.key_a]).fetchone() == ("a",)
        assert conn.execute("SELECT DISTINCT tenant_id FROM kgrag.document").fetchall() == [("a",)]
        stolen = conn.execute("SELECT current_setting('kgrag.key_seal'), current_setting('kgrag.key_role')").fetchone()
        conn.commit()
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="may not act for tenant 'b'"):
            conn.execute("SELECT kgrag.use_key(%s, 'b')", [setup.key_a])
        conn.rollback()
        # the seal of one transaction, replayed in another or for another tenant, opens nothing
        assert stolen is not None
        conn.execute("SELECT set_config('kgrag.key_seal', %s, true), set_config('kgrag.key_role', %s, true)", stolen)
        conn.execute("SELECT set_config('kgrag.tenant', 'b', true)")
        with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification):
            conn.execute("SELECT count(*) FROM kgrag.document")
        conn.rollback()
        conn.execute("SELECT set_config('kgrag.key_seal', %s, true), set_config('kgrag.key_role', %s, true)", stolen)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT kgrag.use_tenant('a')")
        conn.rollback()
        # a key of two tenants names one; an unknown key is refused
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="name one"):
            conn.execute("SELECT kgrag.use_key(%s)", [setup.key_ab])
        conn.rollback()
        assert conn.execute("SELECT kgrag.use_key(%s, 'b')", [setup.key_ab]).fetchone() == ("b",)
        conn.rollback()
        with pytest.raises(psycopg.errors.InvalidPassword):
            conn.execute("SELECT kgrag.use_key('kgk_' || repeat('0', 64))")
        conn.rollback()
        # the key table and its secret are the owner's
        for table in ("kgrag_private.api_key", "kgrag_private.key_secret"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"SELECT * FROM {table}")
            conn.rollback()


def test_a_reader_key_does_not_write(setup: Setup, login_roles: Callable[[str], str]) -> None:
    writer = login_roles(WRITER)
    with connect(as_role(setup.owner_dsn, writer), role=WRITER) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="reader"):
            conn.execute("SELECT kgrag.use_key(%s)", [setup.key_a])
        conn.rollback()
    key = make_key(setup.owner_dsn, "writer-a", "--tenant", "a", "--role", "writer")
    with connect(as_role(setup.owner_dsn, writer), role=WRITER) as conn:
        assert conn.execute("SELECT kgrag.use_key(%s)", [key]).fetchone() == ("a",)
        conn.execute("UPDATE kgrag.document SET title = title")  # a writer key writes for its tenant
        conn.rollback()


ROUTES = [
    ("/v1/search", {"question": "Who approves the contract?"}),
    ("/v1/context", {"question": "Who approves the contract?"}),
    ("/v1/ask", {"question": "Who approves the contract?"}),
    ("/v1/entity", {"name": "Wombatfrost"}),
    ("/v1/neighbourhood", {"name": "Wombatfrost"}),
]


def query_log_rows(dsn: str, tenant: str) -> int:
    with connect(dsn) as conn, conn.transaction():  # the owner (a superuser here) reads past the policy
        conn.execute("SELECT kgrag.use_tenant(%s)", [tenant])
        row = conn.execute("SELECT count(*) FROM kgrag.query_log WHERE tenant_id = %s", [tenant]).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize(("path", "body"), ROUTES)
def test_tenant_a_s_key_never_acts_for_b(setup: Setup, base: str, path: str, body: dict[str, str]) -> None:
    logged = query_log_rows(setup.owner_dsn, "b")
    response = httpx.post(f"{base}{path}", json={**body, "tenant": "b"}, headers=bearer(setup.key_a), timeout=60)
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == "tenant_not_allowed" and "may not act for tenant 'b'" in error["message"]
    assert "Ivo Petrov" not in response.text and "b.md" not in response.text  # nothing of b's documents
    for headers, code in (({}, 401), (bearer("kgk_" + "0" * 64), 401), ({"Authorization": "Basic eDp5"}, 401)):
        response = httpx.post(f"{base}{path}", json=body, headers=headers, timeout=60)
        assert response.status_code == code, response.text
        assert response.json()["error"]["code"] == "invalid_api_key"
    assert query_log_rows(setup.owner_dsn, "b") == logged  # nothing of b was touched


def test_search_and_context_answer_from_the_key_s_tenant(setup: Setup, base: str) -> None:
    found = httpx.post(
        f"{base}/v1/search",
        json={"question": "Who approves the Acme contract?", "route": "vector"},
        headers=bearer(setup.key_a),
        timeout=60,
    )
    assert found.status_code == 200, found.text
    payload = found.json()
    assert payload["tenant"] == "a" and payload["route"] == "vector" and payload["reason"]
    assert payload["rows"] and all(r["ref_id"].startswith("a.md#") for r in payload["rows"] if r["kind"] == "chunk")
    theirs = httpx.post(
        f"{base}/v1/search",
        json={"question": "Wombatfrost secret project", "route": "vector"},
        headers=bearer(setup.key_b),
        timeout=60,
    ).json()
    assert theirs["tenant"] == "b" and any(r["ref_id"].startswith("b.md#") for r in theirs["rows"])
    both = httpx.post(
        f"{base}/v1/context",
        json={"question": "Who approves the Acme contract?", "tenant": "a"},
        headers=bearer(setup.key_ab),
        timeout=60,
    )
    assert both.status_code == 200 and "Maria Silva" in both.json()["context"], both.text
    unnamed = httpx.post(f"{base}/v1/context", json={"question": "x y z"}, headers=bearer(setup.key_ab), timeout=60)
    assert unnamed.status_code == 400 and "name one" in unnamed.json()["error"]["message"]
    card = httpx.post(f"{base}/v1/entity", json={"name": "Maria Silva"}, headers=bearer(setup.key_a), timeout=60)
    assert card.status_code == 200 and card.json()["name"] == "Maria Silva", card.text
    hood = httpx.post(f"{base}/v1/neighbourhood", json={"name": "Acme"}, headers=bearer(setup.key_a), timeout=60)
    assert hood.status_code == 200 and hood.json()["nodes"], hood.text
    # the query log explains the answer: the chunks returned, the embedder, the schema revision
    with connect(setup.owner_dsn) as conn, conn.transaction():
        conn.execute("SELECT kgrag.use_tenant('a')")
        logged = conn.execute(
            "SELECT chunk_ids, embedder, schema_revision FROM kgrag.query_log"
            " WHERE tenant_id = 'a' AND route = 'vector' ORDER BY searched_at DESC LIMIT 1"
        ).fetchone()
        revision = conn.execute("SELECT kgrag.version()").fetchone()
    assert logged is not None and revision is not None
    assert logged[0] == [r["ref_id"] for r in payload["rows"] if r["kind"] == "chunk"]
    assert logged[1] == "hash" and logged[2] == revision[0]


def test_a_key_sees_the_documents_of_its_groups_and_an_end_user_narrows_them(setup: Setup, base: str) -> None:
    """Tenant a holds a document for its HR group: a key without groups never shows it (search,
    context, entity), the HR key does, and a request naming its end user's groups narrows what the
    key holds and is refused a group the key lacks."""

    def search(key: str, **more: object) -> httpx.Response:
        body = {"question": "Quillon Marsh grievance review", "route": "auto", **more}
        return httpx.post(f"{base}/v1/search", json=body, headers=bearer(key), timeout=60)

    def context(key: str, **more: object) -> httpx.Response:
        body = {"question": "Quillon Marsh grievance review", **more}
        return httpx.post(f"{base}/v1/context", json=body, headers=bearer(key), timeout=60)

    plain, held = search(setup.key_a), search(setup.key_hr)
    assert plain.status_code == held.status_code == 200, (plain.text, held.text)
    assert "review.md" not in plain.text and "Quillon" not in context(setup.key_a).text
    assert any(r["ref_id"].startswith("review.md#") for r in held.json()["rows"]), held.text
    assert "Quillon Marsh" in context(setup.key_hr).json()["context"]
    narrowed = search(setup.key_hr, groups=[])
    assert narrowed.status_code == 200 and "review.md" not in narrowed.text
    assert "Quillon" not in context(setup.key_hr, groups=[]).text
    assert "review.md" in search(setup.key_hr, groups=["hr"]).text
    refused = search(setup.key_a, groups=["hr"])
    assert refused.status_code == 403 and "does not hold group 'hr'" in refused.json()["error"]["message"]
    bad = search(setup.key_hr, groups=["HR!"])
    assert bad.status_code == 400, bad.text
    # what the HR document says is hr's graph: an entity for the hr key, no entity for the other
    card = httpx.post(f"{base}/v1/entity", json={"name": "Quillon Marsh"}, headers=bearer(setup.key_a), timeout=60)
    assert card.status_code == 400 and "no entity is named" in card.text, card.text
    card = httpx.post(f"{base}/v1/entity", json={"name": "Quillon Marsh"}, headers=bearer(setup.key_hr), timeout=60)
    assert card.status_code == 200 and card.json()["entity_id"].endswith("~hr"), card.text
    assert "grievance" in card.json()["answer"], card.text
    listed = run("keys", "list", "--json", dsn=setup.owner_dsn)
    assert {"name": "hr-a", "groups": ["hr"]}.items() <= next(
        k for k in json.loads(listed.stdout) if k["name"] == "hr-a"
    ).items(), listed.stdout


def test_a_key_s_groups_bind_its_answers_graph_and_agent_tools(setup: Setup, base: str) -> None:
    """The HR document through every other door: /v1/ask puts it in the prompt of the LLM (a real
    local HTTP server answering as the chat endpoint) for the HR key alone, and not once the request
    narrows to no group; /v1/neighbourhood shows nothing of it to anyone (the graph is shared); an
    agent's MCP tools (search, context, ask) with the HR key find it and with tenant a's key do not."""
    import asyncio

    from fake_openai import FakeOpenAI

    fake = FakeOpenAI()

    def cite_first(messages: list[dict[str, str]]) -> str:
        cited = re.search(r"\[([^\]|]+) \| ([^\]]+)\]", messages[-1]["content"])
        return f"Found. [{cited.group(1)} | {cited.group(2)}]" if cited else "Not found."

    fake.responder = cite_first  # type: ignore[assignment]
    question = "What did the review of the Acme contract find about Maria Silva?"  # (no word of HR alone)
    try:
        with serving(setup.service_dsn, "--key-rate", "1000/minute", KGRAG_LLM_URL=fake.url) as url:

            def prompt(key: str, **more: object) -> str:
                before = len(fake.requests)
                asked = httpx.post(
                    f"{url}/v1/ask", json={"question": question, **more}, headers=bearer(key), timeout=120
                )
                assert asked.status_code == 200, asked.text
                return json.dumps([r["body"]["messages"] for r in fake.requests[before:]]) + asked.text

            assert "Quillon" in prompt(setup.key_hr)
            assert "Quillon" not in prompt(setup.key_a)
            assert "Quillon" not in prompt(setup.key_hr, groups=[])
            calls: list[tuple[str, dict[str, object]]] = [
                ("search", {"question": question, "route": "auto"}),
                ("context", {"question": question}),
                ("ask", {"question": question}),
            ]
            for key, sees in ((setup.key_hr, True), (setup.key_a, False)):
                before = len(fake.requests)
                _, *results = asyncio.run(_mcp_http(url, key, calls))
                asked = json.dumps([r["body"]["messages"] for r in fake.requests[before:]])
                assert all(not r.is_error for r in results), results  # type: ignore[attr-defined]
                shown = [str(r.content) for r in results[:2]] + [asked]  # type: ignore[attr-defined]
                assert [("Quillon" in text or "review.md" in text) for text in shown] == [sees] * 3, (sees, shown)
    finally:
        fake.close()
    # Maria Silva's neighbourhood holds what hr's document says of her for the hr key alone
    for key, sees in ((setup.key_a, False), (setup.key_hr, True)):
        hood = httpx.post(f"{base}/v1/neighbourhood", json={"name": "Maria Silva"}, headers=bearer(key), timeout=60)
        assert hood.status_code == 200 and "Maria Silva" in hood.text, hood.text
        assert ("Quillon" in hood.text) is sees, hood.text


def test_a_revoked_key_is_refused_at_its_next_request(setup: Setup, base: str) -> None:
    key = make_key(setup.owner_dsn, "short-lived", "--tenant", "a")
    asked = {"question": "Acme", "route": "vector"}
    assert httpx.post(f"{base}/v1/search", json=asked, headers=bearer(key), timeout=60).status_code == 200
    revoked = run("keys", "revoke", "short-lived", dsn=setup.owner_dsn)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    after = httpx.post(f"{base}/v1/search", json=asked, headers=bearer(key), timeout=60)
    assert after.status_code == 401 and "unknown or revoked" in after.json()["error"]["message"]
    listed = run("keys", "list", dsn=setup.owner_dsn).stdout
    assert "short-lived" in listed and "revoked" in listed


def test_rates_and_body_size_are_limited(setup: Setup) -> None:
    with serving(setup.service_dsn, "--key-rate", "5/minute", "--max-body", "4096") as url:
        asked = {"question": "Acme", "route": "vector"}
        codes = [
            httpx.post(f"{url}/v1/search", json=asked, headers=bearer(setup.key_a), timeout=60).status_code
            for _ in range(7)
        ]
        assert codes[:5] == [200] * 5 and codes[5:] == [429, 429], codes
        limited = httpx.post(f"{url}/v1/search", json=asked, headers=bearer(setup.key_a), timeout=60)
        error = limited.json()["error"]
        assert error["code"] == "rate_limit_exceeded" and "5/minute" in error["message"]
        assert 1 <= int(limited.headers["Retry-After"]) <= 60  # when the window lets the key in again
        # the limit is the key's: another key still gets answers
        other = httpx.post(f"{url}/v1/search", json=asked, headers=bearer(setup.key_b), timeout=60)
        assert other.status_code == 200, other.text
        big = {"question": "x" * 10_000}
        too_big = httpx.post(f"{url}/v1/search", json=big, headers=bearer(setup.key_b), timeout=60)
        assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "too_large"

        def streamed() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"question": "'
            for _ in range(10):
                yield b"x" * 1000
            yield b'"}'

        chunked = httpx.post(
            f"{url}/v1/search",
            content=streamed(),
            headers=bearer(setup.key_b) | {"Content-Type": "application/json"},
            timeout=60,
        )
        assert chunked.status_code == 413, chunked.text
        huge = httpx.post(
            f"{url}/v1/embeddings",
            json={"model": "hash", "input": ["y" * 30_000] * 3},
            headers=bearer(setup.key_b),
            timeout=60,
        )
        assert huge.status_code == 413


def _waiting_queries(owner_dsn: str, role: str) -> int:
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE usename = %s AND state = 'active' AND wait_event_type = 'Lock'",
            [role],
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_slow_call_times_out_and_a_gone_client_is_cancelled(setup: Setup) -> None:
    """A search blocked on a lock (the owner holds kgrag.chunk) gets 408 at the server's deadline,
    and its query is cancelled in PostgreSQL; so is the query of a client that hangs up."""
    with serving(setup.service_dsn, "--timeout", "1.5") as url, psycopg.connect(setup.owner_dsn) as holder:
        holder.execute("LOCK TABLE kgrag.chunk IN ACCESS EXCLUSIVE MODE")
        asked = {"question": "Acme", "route": "vector"}
        started = time.monotonic()
        late = httpx.post(f"{url}/v1/search", json=asked, headers=bearer(setup.key_a), timeout=60)
        assert late.status_code == 408 and late.json()["error"]["code"] == "timeout", late.text
        assert time.monotonic() - started < 10
        time.sleep(0.5)
        assert _waiting_queries(setup.owner_dsn, setup.service_role) == 0
        holder.rollback()
    with serving(setup.service_dsn, "--timeout", "60") as url, psycopg.connect(setup.owner_dsn) as holder:
        holder.execute("LOCK TABLE kgrag.chunk IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/v1/search", json=asked, headers=bearer(setup.key_a), timeout=1.0)
        deadline = time.monotonic() + 10
        while _waiting_queries(setup.owner_dsn, setup.service_role) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _waiting_queries(setup.owner_dsn, setup.service_role) == 0
        holder.rollback()


def test_metrics_count_requests_routes_and_errors(setup: Setup, base: str) -> None:
    httpx.post(
        f"{base}/v1/search", json={"question": "Acme", "route": "vector"}, headers=bearer(setup.key_a), timeout=60
    )
    httpx.post(f"{base}/v1/search", json={"question": "Acme"}, timeout=60)
    text = httpx.get(f"{base}/metrics", timeout=10).text
    assert 'kgrag_requests_total{endpoint="/v1/search",status="200"}' in text
    assert 'kgrag_requests_total{endpoint="/v1/search",status="401"}' in text
    assert 'kgrag_searches_total{endpoint="/v1/search",route="vector"}' in text
    assert 'kgrag_errors_total{code="invalid_api_key"}' in text
    assert 'kgrag_request_seconds_bucket{endpoint="/v1/search",le="0.5"}' in text


def test_many_callers_at_once_each_get_their_own_tenant(setup: Setup, base: str) -> None:
    """Concurrent requests of two tenants on the server's shared connections never mix (a client
    told that its tenant has as many requests in progress as it may waits as told, and asks again)."""
    seen: list[tuple[str, str]] = []
    answered: list[str] = []

    def ask(key: str) -> None:
        for _ in range(5):
            asked = {"question": "project contract", "route": "vector"}
            while (
                response := httpx.post(f"{base}/v1/search", json=asked, headers=bearer(key), timeout=60)
            ).status_code == 429:
                time.sleep(float(response.headers["Retry-After"]))
            got = response.json()
            answered.append(got["tenant"])
            seen.extend((got["tenant"], r["ref_id"].split("#")[0]) for r in got["rows"] if r["kind"] == "chunk")

    threads = [threading.Thread(target=ask, args=(k,)) for k in (setup.key_a, setup.key_b) * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answered) == ["a"] * 15 + ["b"] * 15
    assert seen and all(f"{tenant}.md" == doc for tenant, doc in seen), seen


def test_the_readme_says_how_to_run_the_service() -> None:
    repo = Path(__file__).resolve().parents[2]
    readme = (repo / "README.md").read_text()
    section = readme.split("## Running the service", 1)[1].split("\n## ", 1)[0]
    for needed in ("pgkgrag keys create", "--key-rate", "/metrics", "--traces", "kgrag_reader", "docs/service.md"):
        assert needed in section, needed
    reference = (repo / "docs" / "service.md").read_text()
    assert "mcpServers" in reference
    for code in CODES:  # every error code the service gives, documented
        assert f"`{code}`" in reference, code


async def _mcp_http(base: str, key: str | None, calls: list[tuple[str, dict[str, object]]]) -> list[object]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = bearer(key) if key else {}
    results: list[object] = []
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
        streamable_http_client(f"{base}/mcp/", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        results.append((await session.list_tools()).tools)
        for name, arguments in calls:
            results.append(await session.call_tool(name, arguments))
    return results


def test_an_agent_searches_through_mcp_with_its_key(setup: Setup, base: str) -> None:
    """The official SDK's client: tools an agent can choose by, answers from the key's tenant only,
    and b refused to a's key; no key, no session."""
    import asyncio

    tools, searched, other, card, hood = asyncio.run(
        _mcp_http(
            base,
            setup.key_a,
            [
                ("search", {"question": "Who approves the Acme contract?", "route": "vector"}),
                ("search", {"question": "Wombatfrost", "tenant": "b"}),
                ("entity", {"name": "Maria Silva"}),
                ("neighbourhood", {"name": "Acme", "hops": 1}),
            ],
        )
    )
    described = {t.name: t for t in tools}  # type: ignore[attr-defined]
    assert set(described) == {"search", "context", "ask", "entity", "neighbourhood", "remember"}
    assert all(t.description and t.input_schema["properties"] for t in described.values())
    assert described["search"].input_schema["required"] == ["question"]
    assert not searched.is_error and searched.structured_content["tenant"] == "a"  # type: ignore[attr-defined]
    rows = searched.structured_content["rows"]  # type: ignore[attr-defined]
    assert rows and all(r["ref_id"].startswith("a.md#") for r in rows if r["kind"] == "chunk")
    assert other.is_error and "may not act for tenant 'b'" in other.content[0].text  # type: ignore[attr-defined]
    assert "Wombatfrost" not in str(other.content[0].text).split("tenant")[0]  # type: ignore[attr-defined]
    assert not card.is_error and card.structured_content["name"] == "Maria Silva"  # type: ignore[attr-defined]
    assert not hood.is_error and hood.structured_content["nodes"]  # type: ignore[attr-defined]
    for key in (None, "kgk_" + "1" * 64):
        with pytest.raises(BaseException) as refused:
            asyncio.run(_mcp_http(base, key, []))
        assert "API key" in repr(refused.value) or "unknown or revoked" in repr(refused.value), repr(refused.value)


def test_an_mcp_request_counts_once_against_the_key_s_rate(setup: Setup) -> None:
    """A session is a few HTTP requests (initialize, its notification, the tool list) and one per
    tool call; the guard counts each once, the tool does not count it again."""
    import asyncio

    calls: list[tuple[str, dict[str, object]]] = [("search", {"question": "Acme", "route": "vector"})] * 3
    with serving(setup.service_dsn, "--key-rate", "6/minute") as url:
        _, *found = asyncio.run(_mcp_http(url, setup.key_a, calls))  # 3 + 3 requests: within 6
        assert found and not any(r.is_error for r in found)  # type: ignore[attr-defined]
        with pytest.raises(BaseException) as refused:
            asyncio.run(_mcp_http(url, setup.key_a, []))
        assert "6/minute" in repr(refused.value), repr(refused.value)


def test_psql_acts_for_the_key_s_tenant_alone(setup: Setup, tmp_path: Path) -> None:
    """The README's SQL form: psql as the service's role, kgrag.use_key in a transaction."""
    script = tmp_path / "key.sql"
    script.write_text(
        "SET ROLE kgrag_reader;\n"
        "BEGIN;\nSELECT kgrag.use_key(:'key');\n"
        "SELECT string_agg(DISTINCT tenant_id, ',') FROM kgrag.document;\nCOMMIT;\n"
        "BEGIN;\nSELECT kgrag.use_key(:'key', 'b');\n"
    )
    out = psql(setup.service_dsn, "-q", "-v", f"key={setup.key_a}", "-v", "ON_ERROR_STOP=1", "-f", str(script))
    assert out.stdout.split() == ["a", "a"], out.stdout
    assert out.returncode == 3 and "may not act for tenant 'b'" in out.stderr, out.stderr


def test_a_desktop_agent_uses_the_tools_over_stdio(setup: Setup, login_roles: Callable[[str], str]) -> None:
    """`pgkgrag mcp --tenant a` as a desktop client starts it, as a login role granted tenant a."""
    import asyncio

    from commands import PGKGRAG, command_env
    from mcp import ClientSession, StdioServerParameters, stdio_client

    role = login_roles(READER)
    with connect(setup.owner_dsn) as conn:
        conn.execute("SELECT kgrag.grant_tenant(%s, 'a')", [role])
        conn.commit()

    async def session() -> tuple[object, object]:
        params = StdioServerParameters(
            command=PGKGRAG, args=["mcp", "--tenant", "a"], env=command_env(as_role(setup.owner_dsn, role))
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            mine = await client.call_tool("context", {"question": "Who approves the Acme contract?"})
            theirs = await client.call_tool("search", {"question": "Wombatfrost", "tenant": "b"})
            return mine, theirs

    mine, theirs = asyncio.run(session())
    assert not mine.is_error and "Maria Silva" in mine.structured_content["context"]  # type: ignore[attr-defined]
    assert theirs.is_error and "may not act for tenant 'b'" in theirs.content[0].text  # type: ignore[attr-defined]


def test_traces_reach_a_local_otlp_collector(setup: Setup) -> None:
    """`--traces otlp` sends the spans of a search (request, search, embedding) to an OTLP/HTTP
    collector: a local HTTP server that decodes what it receives as the protocol defines it."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    spans: dict[str, dict[str, object]] = {}

    class Collector(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            exported = ExportTraceServiceRequest()
            exported.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
            for resource in exported.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        attributes = {a.key: a.value for a in span.attributes}
                        spans[span.name] = {k: str(v).strip() for k, v in attributes.items()}
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

    collector = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
    try:
        with serving(
            setup.service_dsn, "--traces", "otlp", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_BSP_SCHEDULE_DELAY="100"
        ) as url:
            asked = {"question": "Who approves the Acme contract?", "route": "vector"}
            assert (
                httpx.post(f"{url}/v1/search", json=asked, headers=bearer(setup.key_a), timeout=60).status_code == 200
            )
            deadline = time.monotonic() + 20
            while not {"kgrag.request", "kgrag.search", "kgrag.embed"} <= set(spans) and time.monotonic() < deadline:
                time.sleep(0.2)
    finally:
        collector.shutdown()
    assert {"kgrag.request", "kgrag.search", "kgrag.embed"} <= set(spans), spans
    assert "vector" in str(spans["kgrag.search"]["kgrag.route"])
    assert "a.md#0" in str(spans["kgrag.search"]["kgrag.chunks"])
    assert "hash" in str(spans["kgrag.embed"]["kgrag.embedder"])
    assert spans["kgrag.search"]["kgrag.tenant"] == 'string_value: "a"', spans
    assert setup.key_a not in str(spans)  # the key's id is traced, never the key

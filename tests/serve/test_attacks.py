"""`pgkgrag serve` and `pgkgrag mcp` attacked by the holder of one tenant's key and by an agent:
questions and inputs too big to embed, requests past their time or abandoned, one tenant's flood,
a server told to stop mid-request, malformed keys and bodies, and `pgkgrag mcp --tenant a` run by
the schema owner, who may act for every tenant.

Tenants a and b embed with `hash` (instant); slow and long with `e5`, whose time grows with the
text (about 0.3 ms a character on 2 cores: 20,000 characters take seconds). The owner raised
long's max_question_chars to 20,000, so long may ask what takes seconds to embed; slow keeps the
default (2,000).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import psycopg
import pytest
from commands import PGKGRAG, bearer, command_env, make_key, run, serving, serving_process
from conftest import Server, as_role
from fake_openai import FakeOpenAI

from pgkgrag.db.connections import READER, connect, tenant_transaction

TEXTS = {
    "a": ("hash", "# Acme contract\n\nThe Acme contract is approved by Maria Silva, head of procurement.\n"),
    "b": ("hash", "# Zeta project\n\nWombatfrost is the secret project of Zeta, run by Ivo Petrov since 2019.\n"),
    "slow": ("e5", "# Harbour log\n\nThe harbour crane was repaired by Lena Ortiz in May.\n"),
    "long": ("e5", "# Harbour log\n\nThe harbour crane was repaired by Lena Ortiz in May.\n"),
}
LONG = 20_000  # characters tenant long may ask: seconds of e5
SET_SETTING = (
    "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, %s, %s::jsonb)"
    " ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value"
)


def question(chars: int) -> str:
    return ("Who repaired the harbour crane, and when was it done? " * (chars // 50 + 1))[:chars]


@dataclass(frozen=True)
class Tenants:
    owner_dsn: str
    service_dsn: str
    service_role: str
    keys: dict[str, str]  # tenant -> its key


@pytest.fixture(scope="module")
def tenants(
    server: Server, template: str, login_roles: Callable[[str], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tenants]:
    name = server.create_database(template=template)
    dsn = server.dsn(name)
    folder = tmp_path_factory.mktemp("attacks")
    for tenant, (embedder, text) in TEXTS.items():
        path = folder / f"{tenant}.md"
        path.write_text(text)
        done = run("ingest", str(path), "--tenant", tenant, "--embedder", embedder, dsn=dsn)
        assert done.returncode == 0, done.stderr
    with connect(dsn) as conn, tenant_transaction(conn, "long"):
        conn.execute(SET_SETTING, ["long", "max_question_chars", str(LONG)])
    try:
        role = login_roles(READER)
        keys = {tenant: make_key(dsn, f"key-{tenant}", "--tenant", tenant) for tenant in TEXTS}
        yield Tenants(dsn, as_role(dsn, role), role, keys)
    finally:
        server.drop_database(name)


@pytest.fixture(scope="module")
def base(tenants: Tenants) -> Iterator[str]:
    """The service as the README runs it (no LLM configured), limits at their defaults but the key rate."""
    with serving(tenants.service_dsn, "--key-rate", "1000/minute") as url:
        yield url


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def short(tenants: Tenants, llm: FakeOpenAI) -> Iterator[str]:
    """A service with a short deadline (2 s), one request of a tenant at a time, and an LLM."""
    options = ("--key-rate", "1000/minute", "--timeout", "2", "--concurrent-per-tenant", "1")
    with serving(tenants.service_dsn, *options, KGRAG_LLM_URL=llm.url, KGRAG_LLM_RETRIES="1") as url:
        yield url


def logged(dsn: str, tenant: str, table: str = "query_log") -> int:
    """Rows of the tenant's query log (or answer log), read by the owner."""
    with connect(dsn) as conn, tenant_transaction(conn, tenant):
        row = conn.execute(f"SELECT count(*) FROM kgrag.{table} WHERE tenant_id = %s", [tenant]).fetchone()
    assert row is not None
    return int(row[0])


def post(url: str, key: str, body: dict[str, object], timeout: float = 60) -> httpx.Response:
    return httpx.post(url, json=body, headers=bearer(key), timeout=timeout)


def once_its_work_ended(url: str, key: str, body: dict[str, object]) -> httpx.Response:
    """The tenant's next request, sent again while the server says the tenant is busy (429,
    `--concurrent-per-tenant 1`): the answer comes once the work of the request before it ended."""
    deadline = time.monotonic() + 120
    while True:
        response = post(url, key, body)
        if response.status_code != 429 or time.monotonic() > deadline:
            return response
        time.sleep(float(response.headers["Retry-After"]) / 4)


def error_of(response: httpx.Response) -> dict[str, object]:
    assert set(response.json()) == {"error"}, response.text
    error: dict[str, object] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    return error


def test_sizes_and_options_are_refused_before_the_question_is_embedded(tenants: Tenants, short: str) -> None:
    """Each of these would embed for seconds (or, 1 MB, for minutes) before its refusal; the
    deadline is 2 s, so a refusal after the embedding would be a 408."""
    search = f"{short}/v1/search"
    started = time.monotonic()
    huge = post(search, tenants.keys["long"], {"question": question(1_000_000)})
    assert huge.status_code == 400, huge.text
    assert time.monotonic() - started < 30  # a generous bound: before the fix, minutes
    assert error_of(huge)["code"] == "question_too_long" and error_of(huge)["param"] == "question"
    over_tenant = post(search, tenants.keys["slow"], {"question": question(LONG)})  # its limit is 2,000
    assert over_tenant.status_code == 400, over_tenant.text
    assert error_of(over_tenant)["code"] == "question_too_long"
    assert "max_question_chars" in str(error_of(over_tenant)["message"])
    bad_option = post(search, tenants.keys["long"], {"question": question(LONG), "options": {"bogus": 1}})
    assert bad_option.status_code == 400 and error_of(bad_option)["code"] == "invalid_value", bad_option.text
    bad_route = post(search, tenants.keys["long"], {"question": question(LONG), "route": "sideways"})
    assert bad_route.status_code == 400 and error_of(bad_route)["param"] == "route", bad_route.text
    over_k = post(f"{short}/v1/context", tenants.keys["long"], {"question": question(LONG), "k": 5000})
    assert over_k.status_code == 400 and error_of(over_k)["param"] == "k", over_k.text


def test_embeddings_are_bounded_in_count_and_characters(tenants: Tenants, base: str, short: str) -> None:
    """Two texts of 30,800 characters embedded for 47 s; now the count, each text and the whole
    request are bounded before the model runs, and the deadline bounds what is allowed."""
    url, key = f"{base}/v1/embeddings", tenants.keys["slow"]
    for inputs, code in (
        (["y" * 30_800] * 2, "input_too_long"),  # each above --max-input-chars (8,192)
        (["y" * 8_000] * 5, "input_too_long"),  # 40,000 in all, above --max-embedding-chars (32,768)
        (["y"] * 129, "too_many_inputs"),  # above --max-inputs (128)
    ):
        refused = post(url, key, {"model": "e5", "input": inputs})
        assert refused.status_code == 400, refused.text
        assert error_of(refused)["code"] == code and error_of(refused)["param"] == "input"
    allowed = post(f"{short}/v1/embeddings", key, {"model": "e5", "input": ["y" * 8_000] * 4})  # seconds of e5
    assert allowed.status_code == 408 and error_of(allowed)["code"] == "timeout", allowed.text


def test_a_search_past_its_time_is_cancelled_and_logs_nothing(tenants: Tenants, short: str) -> None:
    """long's 20,000 characters embed for longer than the 2 s deadline: 408, then the search that
    would have followed never runs. The next request of the tenant is logged, alone."""
    key, before = tenants.keys["long"], logged(tenants.owner_dsn, "long")
    late = post(f"{short}/v1/search", key, {"question": question(LONG), "route": "vector"})
    assert late.status_code == 408 and error_of(late)["code"] == "timeout", late.text
    after = once_its_work_ended(f"{short}/v1/search", key, {"question": "crane", "route": "vector"})
    assert after.status_code == 200, after.text
    assert logged(tenants.owner_dsn, "long") == before + 1


def test_a_search_whose_client_hung_up_is_cancelled_and_logs_nothing(tenants: Tenants, short: str) -> None:
    key, before = tenants.keys["long"], logged(tenants.owner_dsn, "long")
    with pytest.raises(httpx.ReadTimeout):
        post(f"{short}/v1/context", key, {"question": question(LONG)}, timeout=0.5)
    after = once_its_work_ended(f"{short}/v1/search", key, {"question": "crane", "route": "vector"})
    assert after.status_code == 200, after.text
    assert logged(tenants.owner_dsn, "long") == before + 1


def test_an_answer_past_its_time_logs_neither_its_search_nor_its_answer(
    tenants: Tenants, short: str, llm: FakeOpenAI
) -> None:
    """The LLM answers after 4 s, past the 2 s deadline: 408, and the answer's transaction, its
    search's query log row and its answer log row with it, is rolled back."""
    key = tenants.keys["a"]
    searched, answered = logged(tenants.owner_dsn, "a"), logged(tenants.owner_dsn, "a", "answer_log")
    llm.chat_delay = 4.0
    try:
        late = post(f"{short}/v1/ask", key, {"question": "Who approves the Acme contract?"})
        assert late.status_code == 408 and error_of(late)["code"] == "timeout", late.text
        after = once_its_work_ended(f"{short}/v1/search", key, {"question": "Acme", "route": "vector"})
    finally:
        llm.chat_delay = 0.0
    assert after.status_code == 200, after.text
    assert llm.chat_requests() >= 1  # the answer was asked for: the rollback is what left no trace
    assert logged(tenants.owner_dsn, "a", "answer_log") == answered
    assert logged(tenants.owner_dsn, "a") == searched + 1


def test_one_tenant_s_flood_leaves_the_others_served(tenants: Tenants, base: str) -> None:
    """long sends 6 searches of 10,000 characters at once (seconds of e5 each): the tenant's
    requests beyond --concurrent-per-tenant (2) get 429 with Retry-After at once, and b's search
    is answered while long's are still running."""
    ended: list[tuple[str, int, str | None]] = []

    def send(tenant: str, chars: int) -> None:
        response = post(f"{base}/v1/search", tenants.keys[tenant], {"question": question(chars), "route": "vector"})
        ended.append((tenant, response.status_code, response.headers.get("Retry-After")))

    flood = [threading.Thread(target=send, args=("long", 10_000)) for _ in range(6)]
    for thread in flood:
        thread.start()
    time.sleep(0.5)
    send("b", 20)
    for thread in flood:
        thread.join()
    statuses = [status for tenant, status, _ in ended if tenant == "long"]
    assert sorted(statuses) == [200, 200, 429, 429, 429, 429], ended
    assert all(after and int(after) >= 1 for _, status, after in ended if status == 429), ended
    order = [(tenant, status) for tenant, status, _ in ended]
    assert order.index(("b", 200)) < len(order) - 1 - order[::-1].index(("long", 200)), ended


def test_one_tenant_s_embeddings_leave_the_others_their_turn(tenants: Tenants, base: str) -> None:
    """long's key sends two texts of 8,000 characters at once (seconds of e5 each), then slow's key
    a short question for the same model: slow's turn comes after long's first text, not after both
    (a tenant, or a key, has one embedding waiting for a model at a time)."""
    ended: list[tuple[str, int]] = []

    def embed(tenant: str, texts: list[str]) -> None:
        response = post(f"{base}/v1/embeddings", tenants.keys[tenant], {"model": "e5", "input": texts})
        ended.append((tenant, response.status_code))

    flood = [threading.Thread(target=embed, args=("long", ["y" * 8_000])) for _ in range(2)]
    for thread in flood:
        thread.start()
    time.sleep(0.3)
    embed("slow", ["Who repaired the crane?"])
    for thread in flood:
        thread.join()
    assert ended == [("long", 200), ("slow", 200), ("long", 200)], ended


def _waiting_queries(owner_dsn: str, role: str) -> int:
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND wait_event_type = 'Lock'", [role]
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_sigterm_stops_the_server_mid_request(tenants: Tenants) -> None:
    """A search blocked on a lock the owner holds, a --timeout of 10 minutes, and SIGTERM: the
    server drains for --shutdown-timeout (2 s), cancels the query in PostgreSQL and exits."""
    options = ("--timeout", "600", "--shutdown-timeout", "2")
    with (
        serving_process(tenants.service_dsn, *options) as (url, proc),
        psycopg.connect(tenants.owner_dsn) as holder,
    ):
        holder.execute("LOCK TABLE kgrag.chunk IN ACCESS EXCLUSIVE MODE")

        def blocked() -> None:
            with contextlib.suppress(httpx.HTTPError):  # whatever it gets as the server stops
                post(f"{url}/v1/search", tenants.keys["a"], {"question": "Acme", "route": "vector"})

        threading.Thread(target=blocked, daemon=True).start()
        deadline = time.monotonic() + 30
        while not _waiting_queries(tenants.owner_dsn, tenants.service_role) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _waiting_queries(tenants.owner_dsn, tenants.service_role) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) is not None  # a generous bound: before the fix, never while the lock held
        assert _waiting_queries(tenants.owner_dsn, tenants.service_role) == 0  # cancelled, not left waiting
        holder.rollback()


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("GET", "/nowhere", None, 404, "not_found"),
        ("GET", "/v1/search", None, 405, "method_not_allowed"),
        ("POST", "/v1/search", b'{"question": "x",', 400, "invalid_json"),
        ("POST", "/v1/search", b'{"question": 5}', 400, "invalid_request"),
        ("POST", "/v1/search", b'{"question": "x", "k": 0}', 400, "invalid_request"),
        ("POST", "/v1/search", b'{"question": "x", "options": {"bogus": 1}}', 400, "invalid_value"),
        ("POST", "/v1/entity", b'{"name": "nobody at all"}', 400, "invalid_value"),
        ("POST", "/v1/ask", b'{"question": "Who approves the Acme contract?"}', 503, "llm_not_configured"),
    ],
)
def test_every_error_has_openai_s_shape_and_a_stable_code(
    tenants: Tenants, base: str, method: str, path: str, body: bytes | None, status: int, code: str
) -> None:
    headers = bearer(tenants.keys["a"]) | {"Content-Type": "application/json"}
    response = httpx.request(method, f"{base}{path}", content=body, headers=headers, timeout=60)
    assert response.status_code == status, response.text
    error = error_of(response)
    assert error["code"] == code and error["message"], error
    assert error["type"] == ("invalid_request_error" if status < 500 else "server_error")


def test_an_ask_without_an_llm_is_refused_before_it_searches(tenants: Tenants, base: str) -> None:
    before = logged(tenants.owner_dsn, "a")
    refused = post(f"{base}/v1/ask", tenants.keys["a"], {"question": "Who approves the Acme contract?"})
    assert refused.status_code == 503 and "KGRAG_LLM_URL" in str(error_of(refused)["message"])
    assert logged(tenants.owner_dsn, "a") == before


@pytest.mark.parametrize(
    "key",
    [
        "kgk_" + "a" * 300,  # longer than any key (SQL said: record "k" is not assigned yet, a 500)
        "kgk_" + "g" * 64,  # not hex
        "kgk_" + "A" * 64,  # hex, but not as keys are made
        "sk-" + "0" * 64,  # another service's key
        "kgk_" + "é" * 64,
    ],
)
def test_a_malformed_key_is_a_401(tenants: Tenants, base: str, key: str) -> None:
    response = httpx.post(
        f"{base}/v1/search",
        json={"question": "Acme"},
        headers={"Authorization": f"Bearer {key}".encode()},  # type: ignore[dict-item]
        timeout=60,
    )
    assert response.status_code == 401, response.text
    assert error_of(response)["code"] == "invalid_api_key"
    assert response.headers["WWW-Authenticate"] == "Bearer"


async def _mcp_http(base: str, key: str, calls: list[tuple[str, dict[str, object]]]) -> list[object]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=bearer(key), timeout=httpx2.Timeout(60, read=120)) as http,
        streamable_http_client(f"{base}/mcp/", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return [await session.call_tool(name, arguments) for name, arguments in calls]


def test_metrics_count_every_request_and_every_tool_call(tenants: Tenants, base: str) -> None:
    key = tenants.keys["a"]
    httpx.post(f"{base}/v1/search", content=b"x" * (5 * 1024 * 1024), headers=bearer(key), timeout=60)  # 413
    httpx.get(f"{base}/nowhere", timeout=60)
    httpx.post(f"{base}/mcp/", json={}, timeout=60)  # no key: 401
    found, refused, huge = asyncio.run(
        _mcp_http(
            base,
            key,
            [
                ("search", {"question": "Acme", "route": "vector"}),
                ("search", {"question": "Acme", "tenant": "b"}),
                ("search", {"question": question(1_000_000)}),
            ],
        )
    )
    assert not found.is_error and refused.is_error and huge.is_error  # type: ignore[attr-defined]
    assert "question_too_long" in huge.content[0].text  # type: ignore[attr-defined]
    text = httpx.get(f"{base}/metrics", timeout=10).text
    for line in (
        'kgrag_requests_total{endpoint="/v1/search",status="413"}',
        'kgrag_requests_total{endpoint="other",status="404"}',
        'kgrag_requests_total{endpoint="/mcp",status="401"}',
        'kgrag_errors_total{code="too_large"}',
        'kgrag_errors_total{code="not_found"}',
        'kgrag_errors_total{code="invalid_api_key"}',
        'kgrag_mcp_tool_calls_total{outcome="ok",tool="search"}',
        'kgrag_mcp_tool_calls_total{outcome="tenant_not_allowed",tool="search"}',
        'kgrag_mcp_tool_calls_total{outcome="question_too_long",tool="search"}',
    ):
        assert line in text, line


def test_mcp_tenant_binds_the_schema_owner_to_its_tenant(tenants: Tenants) -> None:
    """`pgkgrag mcp --tenant a` run by the schema owner, who may act for every tenant ('*'
    included): the agent names b or '*' and gets a refusal, never b's text."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def session() -> tuple[dict[str, object], list[object]]:
        params = StdioServerParameters(
            command=PGKGRAG, args=["mcp", "--tenant", "a"], env=command_env(tenants.owner_dsn)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            schema = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            calls = [
                ("search", {"question": "Wombatfrost Ivo Petrov", "tenant": "b"}),
                ("search", {"question": "Wombatfrost Ivo Petrov", "tenant": "*"}),
                ("context", {"question": "Wombatfrost Ivo Petrov", "tenant": "b"}),
                ("entity", {"name": "Ivo Petrov", "tenant": "b"}),
                ("search", {"question": "Wombatfrost Ivo Petrov"}),
            ]
            return schema, [await client.call_tool(name, arguments) for name, arguments in calls]

    schema, (*theirs, mine) = asyncio.run(session())
    for refused in theirs:
        assert refused.is_error, refused  # type: ignore[attr-defined]
        told = refused.content[0].text  # type: ignore[attr-defined]
        assert "acts for tenant 'a' only" in told and "Ivo Petrov" not in told and "Wombatfrost" not in told
    assert not mine.is_error and mine.structured_content["tenant"] == "a"  # type: ignore[attr-defined]
    assert "b.md" not in str(mine.structured_content)  # type: ignore[attr-defined]
    k = schema["search"]["properties"]["k"]["description"]
    assert "chunk" in k and "entit" in k, k  # what k bounds, and what it does not

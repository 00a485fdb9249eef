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
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from commands import PGKGRAG, command_env, make_key, run
from conftest import Server, as_role

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

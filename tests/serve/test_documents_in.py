"""Documents in over HTTP and MCP: `pgkgrag serve` as a team runs it (a login role granted
kgrag_reader and kgrag_writer, no tenant grant of its own), a writer key submitting JSON documents,
a real file as a multipart upload and a note through the MCP SDK's client; a reader key refused;
a refused document refusing its whole request; a full queue answered 429 with Retry-After; the
documents searchable once `pgkgrag worker` ran."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from commands import bearer, make_key, run, serving
from conftest import Server, as_role

from pgkgrag.db.connections import READER, WRITER

SHARED = Path("/usr/share/doc")


@dataclass(frozen=True)
class Setup:
    owner_dsn: str
    service_dsn: str
    writer_key: str
    reader_key: str
    writer_dsn: str


@pytest.fixture(scope="module")
def setup(
    server: Server, template: str, login_roles: Callable[[str], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Setup]:
    name = server.create_database(template=template)
    dsn = server.dsn(name)
    first = tmp_path_factory.mktemp("docs") / "welcome.md"
    first.write_text("# Welcome\n\nThe support desk opens at nine.\n")
    assert run("ingest", str(first), "--tenant", "a", "--embedder", "hash", dsn=dsn).returncode == 0
    service = login_roles(READER)
    worker = login_roles(WRITER)
    with psycopg.connect(dsn, autocommit=True) as owner:
        owner.execute(f'GRANT kgrag_writer TO "{service}"')
        owner.execute("SELECT kgrag.grant_tenant(%s, 'a')", [worker])
    try:
        yield Setup(
            dsn,
            as_role(dsn, service),
            make_key(dsn, "app-writer", "--tenant", "a", "--role", "writer"),
            make_key(dsn, "app-reader", "--tenant", "a"),
            as_role(dsn, worker),
        )
    finally:
        server.drop_database(name)


@pytest.fixture(scope="module")
def base(setup: Setup) -> Iterator[str]:
    with serving(setup.service_dsn, "--key-rate", "1000/minute") as url:
        yield url


def drain(setup: Setup) -> str:
    done = run("worker", "--tenant", "a", "--embedder", "hash", "--drain", dsn=setup.writer_dsn)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_writer_key_submits_documents_and_a_reader_key_may_not(setup: Setup, base: str) -> None:
    docs = [
        {"doc_id": "t-100", "title": "Ticket 100", "text": "The invoice export to Contoso fails since Tuesday."},
        {"doc_id": "t-101", "text": "Refunds above 500 euros need Maria's approval."},
    ]
    given = httpx.post(f"{base}/v1/documents", json={"documents": docs}, headers=bearer(setup.writer_key), timeout=30)
    assert given.status_code == 202, given.text
    tickets = given.json()["tickets"]
    assert len(tickets) == 2 and given.json()["tenant"] == "a"
    state = httpx.get(f"{base}/v1/documents/{tickets[0]}", headers=bearer(setup.writer_key), timeout=30)
    assert state.status_code == 200 and state.json()["state"] == "queued" and state.json()["doc_id"] == "t-100"
    # a reader's key: refused, nothing queued
    refused = httpx.post(
        f"{base}/v1/documents", json={"documents": [{"doc_id": "x", "text": "y"}]}, headers=bearer(setup.reader_key)
    )
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "tenant_not_allowed", refused.text
    # a writer key of tenant a naming tenant b, in a JSON body and in a form: refused
    elsewhere = {"documents": [{"doc_id": "x", "text": "y"}], "tenant": "b"}
    crossed = httpx.post(f"{base}/v1/documents", json=elsewhere, headers=bearer(setup.writer_key))
    assert crossed.status_code == 403 and crossed.json()["error"]["code"] == "tenant_not_allowed", crossed.text
    form = httpx.post(
        f"{base}/v1/documents",
        data={"tenant": "b"},
        files={"files": ("x.txt", b"y")},
        headers=bearer(setup.writer_key),
    )
    assert form.status_code == 403 and form.json()["error"]["code"] == "tenant_not_allowed", form.text
    # one bad document refuses its request, naming it; the good one before it is not queued either
    bad = httpx.post(
        f"{base}/v1/documents",
        json={"documents": [{"doc_id": "t-102", "text": "fine"}, {"doc_id": "t#103", "text": "bad id"}]},
        headers=bearer(setup.writer_key),
    )
    assert bad.status_code == 400 and bad.json()["error"]["message"].startswith("documents[1]: document 't#103'")
    unknown = httpx.get(f"{base}/v1/documents/{tickets[1] + 1000}", headers=bearer(setup.writer_key))
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    assert "stored 2" in drain(setup)
    done = httpx.get(f"{base}/v1/documents/{tickets[1]}", headers=bearer(setup.reader_key)).json()
    assert done["state"] == "stored" and done["finished_at"]
    found = httpx.post(
        f"{base}/v1/search",
        json={"question": "Who approves refunds above 500 euros?", "route": "vector"},
        headers=bearer(setup.reader_key),
        timeout=60,
    ).json()
    assert any(r["ref_id"] == "t-101#0" for r in found["rows"]), found
    metrics = httpx.get(f"{base}/metrics").text
    assert "kgrag_documents_submitted_total 2.0" in metrics


def test_a_file_uploaded_is_read_as_ingest_reads_it(setup: Setup, base: str, tmp_path: Path) -> None:
    page = next(iter(sorted(p for p in SHARED.rglob("*.html") if 2_000 < p.stat().st_size < 60_000)), None)
    if page is None:
        pytest.skip("no HTML page under /usr/share/doc on this machine")
    empty = tmp_path / "empty.txt"
    empty.write_text("   \n")
    with page.open("rb") as handle:
        sent = httpx.post(
            f"{base}/v1/documents",
            files=[("files", (page.name, handle, "text/html"))],
            headers=bearer(setup.writer_key),
            timeout=60,
        )
    assert sent.status_code == 202, sent.text
    (ticket,) = sent.json()["tickets"]
    with empty.open("rb") as handle:
        nothing = httpx.post(
            f"{base}/v1/documents",
            files=[("files", ("empty.txt", handle, "text/plain"))],
            headers=bearer(setup.writer_key),
        )
    assert nothing.status_code == 400 and nothing.json()["error"]["message"].startswith("files: empty.txt:"), (
        nothing.text
    )
    drain(setup)
    state = httpx.get(f"{base}/v1/documents/{ticket}", headers=bearer(setup.writer_key)).json()
    assert state["state"] == "stored" and state["doc_id"] == page.name, state
    with psycopg.connect(setup.writer_dsn) as conn, conn.transaction():
        conn.execute("SELECT kgrag.use_tenant('a')")
        meta = conn.execute(
            "SELECT metadata ->> 'format', source_uri FROM kgrag.document WHERE doc_id = %s", [page.name]
        )
        assert meta.fetchone() == ("html", page.name)


def test_the_queue_ceiling_answers_429_with_retry_after(setup: Setup, base: str) -> None:
    with psycopg.connect(setup.owner_dsn, autocommit=True) as owner:
        owner.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('a', 'queue_max_documents', '1')")
    try:
        docs = [{"doc_id": "c-1", "text": "one"}, {"doc_id": "c-2", "text": "two"}]
        full = httpx.post(f"{base}/v1/documents", json={"documents": docs}, headers=bearer(setup.writer_key))
        assert full.status_code == 429 and full.headers["Retry-After"] == "30", full.text
        assert full.json()["error"]["code"] == "queue_full" and "documents[1]" in full.json()["error"]["message"]
    finally:
        with psycopg.connect(setup.owner_dsn, autocommit=True) as owner:
            owner.execute("DELETE FROM kgrag.settings WHERE tenant_id = 'a' AND key = 'queue_max_documents'")


async def _remember(base: str, key: str, text: str, **more: str) -> object:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=bearer(key), timeout=httpx2.Timeout(60, read=120)) as http,
        streamable_http_client(f"{base}/mcp/", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "every user of the tenant will find it" in " ".join((tools["remember"].description or "").split())
        return await session.call_tool("remember", {"text": text, "title": "Agent note", **more})


def test_an_agent_remembers_a_note_with_a_writer_key(setup: Setup, base: str) -> None:
    text = "The on-call phone for the warehouse in Porto is 555-0142."
    kept = asyncio.run(_remember(base, setup.writer_key, text))
    assert not kept.is_error, kept  # type: ignore[attr-defined]
    ticket = kept.structured_content["ticket"]  # type: ignore[attr-defined]
    # a note named like a document of the tenant is a note: the document stays as it is
    named = asyncio.run(_remember(base, setup.writer_key, "Refunds need nobody's approval.", doc_id="t-101"))
    assert named.structured_content["doc_id"] == "note-t-101"  # type: ignore[attr-defined]
    denied = asyncio.run(_remember(base, setup.reader_key, "a reader's note"))
    assert denied.is_error and "403 tenant_not_allowed" in denied.content[0].text  # type: ignore[attr-defined]
    drain(setup)
    assert httpx.get(f"{base}/v1/documents/{ticket}", headers=bearer(setup.reader_key)).json()["state"] == "stored"
    found = httpx.post(
        f"{base}/v1/search",
        json={"question": "What is the on-call phone of the Porto warehouse?", "route": "vector"},
        headers=bearer(setup.reader_key),
        timeout=60,
    ).json()
    assert any(r["ref_id"].startswith("note-") for r in found["rows"]), found

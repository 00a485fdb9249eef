"""Documents in from any client: submitted with one SQL call (psql as a writer, Node.js through
`pg`), ingested by `pgkgrag worker` from the queue, searchable by a reader afterwards. The bad ones
are refused when submitted or failed with their reason and retryable; two workers and a killed one
lose and duplicate nothing; the owner's ceiling holds; a failing embedding endpoint makes the
tenant's work wait, longer each time, and it goes on when the endpoint is back (a real local HTTP
server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from commands import command_env, psql, run
from fake_openai import FakeOpenAI
from psycopg.conninfo import conninfo_to_dict

from pgkgrag.db.connections import tenant_transaction


def tsql(dsn: str, *statements: str) -> subprocess.CompletedProcess[str]:
    """psql in one transaction for tenant t1; its output without use_tenant's line."""
    args = [arg for statement in ("SELECT kgrag.use_tenant('t1')", *statements) for arg in ("-c", statement)]
    done = psql(dsn, "-1", *args)
    done.stdout = "\n".join(done.stdout.splitlines()[1:])
    return done


def note(doc_id: str, text: str, **more: object) -> str:
    return json.dumps({"doc_id": doc_id, "text": text, **more}).replace("'", "''")


def queue(dsn: str) -> dict[int, tuple[str, str, int, str]]:
    with psycopg.connect(dsn) as conn, tenant_transaction(conn, "t1"):
        rows = conn.execute("SELECT ticket, doc_id, state, attempts, reason FROM kgrag.ingest_queue").fetchall()
    return {r[0]: (r[1], r[2], r[3], r[4] or "") for r in rows}


def worker(dsn: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run("worker", "--tenant", "t1", "--embedder", "hash", "--drain", *args, dsn=dsn, **env)


def test_a_writer_submits_in_psql_and_a_reader_finds_it_after_the_worker(
    dsn: str, login: Callable[..., str], admin: psycopg.Connection
) -> None:
    writer, reader = login("kgrag_writer", "t1"), login("kgrag_reader", "t1")
    submitted = tsql(
        writer,
        f"SELECT kgrag.submit_document('{note('ticket-7', 'Ana Lima approved the refund for Contoso on Monday.')}')",
        f"SELECT kgrag.submit_document('{note('ticket-8', 'Bruno Dias closed the Northwind incident.')}')",
        # the same document again: the ticket it has
        f"SELECT kgrag.submit_document('{note('ticket-8', 'Bruno Dias closed the Northwind incident.')}')",
    )
    assert submitted.returncode == 0, submitted.stderr
    first, second, again = (int(x) for x in submitted.stdout.split())
    assert second == again and first < second
    # a bad document is refused with why, nothing queued
    bad = tsql(writer, 'SELECT kgrag.submit_document(\'{"doc_id": "x#1", "text": "hello"}\')')
    assert "doc_id must be a text of 1 to 256 characters, without '#'" in bad.stderr, bad.stderr
    unknown = tsql(writer, 'SELECT kgrag.submit_document(\'{"doc_id": "x", "body": "hello"}\')')
    assert "'body' is no field of a document" in unknown.stderr, unknown.stderr
    # a reader may look at the queue, not add to it
    denied = tsql(reader, f"SELECT kgrag.submit_document('{note('x', 'hello')}')")
    assert "permission denied for function submit_document" in denied.stderr, denied.stderr
    assert {doc for doc, *_ in queue(reader).values()} == {"ticket-7", "ticket-8"}
    # a document only the worker can tell is bad: its relation ends before it starts
    later = tsql(
        writer,
        "SELECT kgrag.submit_document('"
        + note(
            "ticket-9",
            "Carla Dias led Globex.",
            entities=[{"name": "Carla Dias", "type": "Person"}, {"name": "Globex", "type": "Organization"}],
            relations=[
                {
                    "source": "Carla Dias",
                    "target": "Globex",
                    "type": "LED",
                    "valid_from": "2020-01-01",
                    "valid_to": "2019-01-01",
                }
            ],
        )
        + "')",
    )
    bad_ticket = int(later.stdout)
    done = worker(writer)
    assert done.returncode == 1, done.stdout + done.stderr  # one failed
    assert "stored 2" in done.stdout and "failed 1" in done.stdout, done.stdout
    states = queue(reader)
    assert states[first][1] == states[second][1] == "stored"
    assert states[bad_ticket][1] == "failed" and "valid_to is before valid_from" in states[bad_ticket][3]
    with psycopg.connect(reader) as conn, tenant_transaction(conn, "t1"):
        found = conn.execute(
            "SELECT ref_id FROM kgrag.kgrag_search(question => 'Who approved the refund for Contoso?', route => 'auto')"
            " WHERE kind = 'chunk'"
        ).fetchall()
        failure = conn.execute("SELECT reason FROM kgrag.ingest_failure WHERE doc_id = 'ticket-9'").fetchone()
    assert ("ticket-7#0",) in found
    assert failure is not None and "valid_to is before valid_from" in failure[0]
    # submitted again unchanged: settled unchanged, nothing written; a failed one is tried again
    tsql(
        writer,
        f"SELECT kgrag.submit_document('{note('ticket-7', 'Ana Lima approved the refund for Contoso on Monday.')}')",
    )
    retried = tsql(writer, f"SELECT kgrag.retry_documents(ARRAY[{bad_ticket}, {first}])")
    assert retried.stdout == "1", retried.stdout + retried.stderr  # only the failed one
    again_done = worker(writer)
    assert "unchanged 1" in again_done.stdout and "failed 1" in again_done.stdout, again_done.stdout
    assert queue(reader)[bad_ticket][1:3] == ("failed", 1)


def test_the_owner_sets_the_ceiling_and_a_tenant_cannot_lift_it(
    dsn: str, login: Callable[..., str], admin: psycopg.Connection
) -> None:
    writer = login("kgrag_writer", "t1")
    lifted = tsql(
        writer, "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'queue_max_documents', '100000')"
    )
    assert "setting queue_max_documents is the schema owner's alone: a tenant may not set it" in lifted.stderr, (
        lifted.stderr
    )
    admin.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'queue_max_documents', '2')")
    admin.commit()
    for i in range(2):
        assert tsql(writer, f"SELECT kgrag.submit_document('{note(f'n{i}', f'Note number {i}.')}')").returncode == 0
    full = tsql(writer, f"SELECT kgrag.submit_document('{note('n2', 'Note number 2.')}')")
    assert "holds 2 documents, and 1 more would pass its ceiling of 2 (setting queue_max_documents)" in full.stderr
    assert (
        "53400"
        in psql(
            writer,
            "-1",
            "-v",
            "VERBOSITY=verbose",
            "-c",
            "SELECT kgrag.use_tenant('t1')",
            "-c",
            f"SELECT kgrag.submit_document('{note('n2', 'Note number 2.')}')",
        ).stderr
    )
    assert worker(writer).returncode == 0
    assert tsql(writer, f"SELECT kgrag.submit_document('{note('n2', 'Note number 2.')}')").returncode == 0


def test_two_workers_and_a_killed_one_lose_and_duplicate_nothing(
    dsn: str, login: Callable[..., str], tmp_path: Path
) -> None:
    writer = login("kgrag_writer", "t1")
    texts = {f"doc-{i:03d}": f"Report {i}: team {i % 7} shipped feature {i} to customer {i % 11}." for i in range(120)}
    with psycopg.connect(writer) as conn, tenant_transaction(conn, "t1"):
        for doc_id, text in texts.items():
            conn.execute("SELECT kgrag.submit_document(%s::jsonb)", [json.dumps({"doc_id": doc_id, "text": text})])
    # a worker claims a page, and is killed while it ingests
    env = command_env(writer)

    def worker_process(*more: str, **kwargs: Any) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "pgkgrag", "worker", "--tenant", "t1", "--embedder", "hash"]
        return subprocess.Popen([*command, "--extractor", "keyphrases", *more], env=env, text=True, **kwargs)

    slow = worker_process(
        "--page",
        "40",
        "--batch-size",
        "10",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = [state for _, state, _, _ in queue(writer).values()]
            if "working" in states and states.count("stored") < 100:
                break
            time.sleep(0.05)
        os.killpg(slow.pid, signal.SIGKILL)
    finally:
        slow.wait(30)
    assert "working" in [state for _, state, _, _ in queue(writer).values()]  # its claims, left behind
    # two workers at once take what is left, the killed one's claims included
    both = [
        worker_process("--drain", "--page", "15", "--batch-size", "5", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in both]
    assert all(p.returncode == 0 for p in both), outs
    # (which of the two took which pages depends on when each started: what counts is below)
    states = queue(writer)
    assert sorted(doc for doc, *_ in states.values()) == sorted(texts)
    assert {state for _, state, _, _ in states.values()} <= {"stored", "unchanged"}, states
    with psycopg.connect(writer) as conn, tenant_transaction(conn, "t1"):
        docs = conn.execute("SELECT count(*), count(DISTINCT doc_id) FROM kgrag.document").fetchone()
        chunks = conn.execute("SELECT count(*), count(DISTINCT chunk_id) FROM kgrag.chunk").fetchone()
    assert docs == (120, 120) and chunks == (120, 120)


def test_a_failing_embedding_endpoint_makes_the_tenant_wait_and_it_goes_on_when_back(
    dsn: str, login: Callable[..., str], admin: psycopg.Connection
) -> None:
    llm = FakeOpenAI()
    llm.embedding_dim = 512
    llm.embed_failure = (503, '{"error": {"message": "overloaded"}}')
    writer = login("kgrag_writer", "t1")
    endpoint = {"KGRAG_EMBED_URL": llm.url, "KGRAG_LLM_RETRIES": "1", "KGRAG_LLM_BACKOFF": "0"}
    for i in range(3):
        tsql(writer, f"SELECT kgrag.submit_document('{note(f'w{i}', f'Warehouse {i} moved to Lisbon.')}')")
    args = ("--embedder", "openai", "--wait-seconds", "3")
    first = run("worker", "--tenant", "t1", "--drain", *args, dsn=writer, **endpoint)
    assert "pages that waited for a failing endpoint: 1" in first.stdout, first.stdout + first.stderr
    states = queue(writer)
    assert {s[1:3] for s in states.values()} == {("queued", 0)}  # no attempt of the documents counted
    assert all("waiting 3.0 s (the endpoint failed 1 times in a row): the page failed" in s[3] for s in states.values())
    time.sleep(3.1)
    second = run("worker", "--tenant", "t1", "--drain", *args, dsn=writer, **endpoint)
    assert "waiting 6.0 s (the endpoint failed 2 times" in next(iter(queue(writer).values()))[3], second.stdout
    # within the wait: every worker leaves the tenant's documents alone, and status says why
    status = run("status", "--tenant", "t1", dsn=writer)
    waited = run("worker", "--tenant", "t1", "--drain", *args, dsn=writer, **endpoint)
    assert "ingestion queue: waiting 3 (waiting: an endpoint failed them" in status.stdout, status.stdout
    assert "pages claimed: 0" in waited.stdout or "stored 3" not in waited.stdout, waited.stdout
    llm.embed_failure = None  # the endpoint is back
    time.sleep(6.1)
    back = run("worker", "--tenant", "t1", "--drain", *args, dsn=writer, **endpoint)
    assert back.returncode == 0 and "stored 3" in back.stdout, back.stdout + back.stderr


def test_node_submits_through_pg_and_finds_them_after_the_worker(
    node_pg: Path, dsn: str, login: Callable[..., str], tmp_path: Path
) -> None:
    import shutil

    from conftest import REPO

    writer, reader = login("kgrag_writer", "t1"), login("kgrag_reader", "t1")
    script = node_pg / "submit.mjs"
    shutil.copy(REPO / "examples" / "submit.mjs", script)
    documents = tmp_path / "tickets.jsonl"
    documents.write_text(
        note("sup-1", "The PayFlow outage on Friday was caused by an expired certificate.").replace("''", "'")
        + "\n"
        + '{"doc_id": "sup-2", "text": ""}\n'
        + note("sup-3", "Diana renewed the certificate and PayFlow recovered.").replace("''", "'")
        + "\n"
    )
    info = conninfo_to_dict(writer)
    env = {
        "PATH": "/usr/bin:/bin",
        "PGHOST": str(info["host"]),
        "PGDATABASE": str(info["dbname"]),
        "PGUSER": str(info["user"]),
        "KGRAG_TENANT": "t1",
    }
    out = subprocess.run(
        ["node", str(script), str(documents)], cwd=node_pg, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1, out.stderr  # one line refused
    assert f"{documents}:2: document 'sup-2': text must be a non-empty text" in out.stderr
    assert [t["line"] for t in json.loads(out.stdout)] == [1, 3]
    assert worker(writer).returncode == 0
    with psycopg.connect(reader) as conn, tenant_transaction(conn, "t1"):
        found = conn.execute(
            "SELECT DISTINCT split_part(ref_id, '#', 1) FROM kgrag.kgrag_search(question => 'Why did PayFlow fail?',"
            " route => 'auto') WHERE kind = 'chunk'"
        ).fetchall()
    assert {("sup-1",), ("sup-3",)} <= set(found)


@pytest.mark.parametrize("payload", ["[1, 2]", '{"doc_id": "a", "text": "x", "access": ["Not A Group"]}'])
def test_a_submission_that_is_no_document_is_refused(dsn: str, login: Callable[..., str], payload: str) -> None:
    refused = tsql(login("kgrag_writer", "t1"), f"SELECT kgrag.submit_document('{payload}')")
    assert refused.returncode != 0 and (
        "a document is a JSON object" in refused.stderr or "access must name" in refused.stderr
    )


def test_another_tenant_or_session_cannot_claim_settle_or_retry_the_tickets(
    dsn: str, login: Callable[..., str]
) -> None:
    writer, other = login("kgrag_writer", "t1"), login("kgrag_writer", "t2")
    tickets = [
        int(tsql(writer, f"SELECT kgrag.submit_document('{note(f'p{i}', f'Payroll note {i}.')}')").stdout)
        for i in range(3)
    ]
    listed = ", ".join(map(str, tickets))
    # a tenant's roles read what kgrag.ingest_queue shows, not payloads nor whose groups submitted
    for column in ("document", "submitted_groups", "claimed_key"):
        denied = tsql(writer, f"SELECT {column} FROM kgrag.ingest_ticket")
        assert "permission denied for table ingest_ticket" in denied.stderr, (column, denied.stderr)
    settle = (
        "SELECT kgrag_private.settle_tickets(jsonb_agg(jsonb_build_object('ticket', t, 'state', 'stored')))"
        f" FROM unnest(ARRAY[{listed}]) t"
    )
    for statement, nothing in (
        ("SELECT count(*) FROM kgrag_private.claim_tickets(100)", "0"),
        (settle, "{}"),
        (f"SELECT kgrag.retry_documents(ARRAY[{listed}]::bigint[])", "0"),
        ("SELECT count(*) FROM kgrag.ingest_queue", "0"),
    ):
        done = psql(other, "-1", "-c", "SELECT kgrag.use_tenant('t2')", "-c", statement)
        assert done.returncode == 0 and done.stdout.splitlines()[1:] == [nothing], (statement, done.stdout, done.stderr)
    # t1's own claims are this session's: another session of the same writer cannot settle them
    with psycopg.connect(writer) as first, psycopg.connect(writer) as second:
        with tenant_transaction(first, "t1"):
            claimed = [r[0] for r in first.execute("SELECT ticket FROM kgrag_private.claim_tickets(100)")]
        assert sorted(claimed) == tickets
        with tenant_transaction(second, "t1"):
            assert second.execute(settle.replace("stored", "failed")).fetchone() == ({},)
            # nor claim them again while the first session lives
            assert second.execute("SELECT count(*) FROM kgrag_private.claim_tickets(100)").fetchone() == (0,)
        # unless it held them past ingest_claim_minutes (60): a hung worker's are taken back
        with psycopg.connect(dsn, autocommit=True) as owner:
            owner.execute("UPDATE kgrag.ingest_ticket SET started_at = now() - interval '61 minutes'")
        with tenant_transaction(second, "t1"):
            assert second.execute("SELECT count(*) FROM kgrag_private.claim_tickets(100)").fetchone() == (3,)
    assert {s[1] for s in queue(writer).values()} == {"working"}


def test_audiences_versions_and_broken_documents_hold_in_the_queue(
    dsn: str, login: Callable[..., str], admin: psycopg.Connection
) -> None:
    """What an adversarial review found: a writer without HR's group neither replaces nor claims,
    settles or retries HR's documents, and its count of what waits includes them; a document no
    JSON reader takes is refused when submitted; an older version is never applied over a newer
    one; a document whose worker dies every time ends failed."""
    hr, plain = login("kgrag_writer", "t1"), login("kgrag_writer", "t1")
    admin.execute("SELECT kgrag.grant_groups(%s, 't1', ARRAY['hr'])", [hr.split("user=")[1].split()[0]])
    admin.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'queue_max_documents', '3')")
    admin.commit()
    salaries = note("salaries", "Salaries rise 3% in May.", access=["hr"])
    assert tsql(hr, f"SELECT kgrag.submit_document('{salaries}')").returncode == 0
    assert worker(hr).returncode == 0
    hidden = tsql(hr, f"SELECT kgrag.submit_document('{note('review', 'Review due.', access=['hr'])}')")
    assert hidden.returncode == 0, hidden.stderr
    # replacing HR's document without HR's group: refused, as pgkgrag ingest is
    forged = tsql(plain, f"SELECT kgrag.submit_document('{note('salaries', 'Salaries are frozen.')}')")
    assert "a document of that id is for groups this transaction does not hold" in forged.stderr, forged.stderr
    for statement, nothing in (
        ("SELECT count(*) FROM kgrag_private.claim_tickets(100)", "0"),
        (f"SELECT kgrag.retry_documents(ARRAY[{int(hidden.stdout)}])", "0"),
        ("SELECT count(*) FROM kgrag.ingest_queue WHERE doc_id = 'review'", "0"),
    ):
        assert tsql(plain, statement).stdout == nothing, statement
    # the queue holds 1 (HR's, unseen) of 3: two more fit, a third does not
    for i in range(2):
        assert tsql(plain, f"SELECT kgrag.submit_document('{note(f'v{i}', f'Version {i}.')}')").returncode == 0
    full = tsql(plain, f"SELECT kgrag.submit_document('{note('v2', 'Version 2.')}')")
    assert "holds 3 documents, and 1 more would pass its ceiling of 3" in full.stderr, full.stderr
    assert worker(hr).returncode == 0  # (empties the queue)
    # a document whose JSON nests past 32 levels, or a number of 101 digits: refused when submitted
    deep = '{"doc_id": "deep", "text": "x", "metadata": ' + '{"a": ' * 40 + "1" + "}" * 40 + "}"
    assert "nests deeper than 32 levels" in tsql(plain, f"SELECT kgrag.submit_document('{deep}')").stderr
    huge = '{"doc_id": "huge", "text": "x", "metadata": {"n": 1' + "0" * 100 + "}}"
    assert "more than 100 digits" in tsql(plain, f"SELECT kgrag.submit_document('{huge}')").stderr
    # v1, v2, then v1 again: a new ticket after v2's, so v1 is the version stored
    tickets = [
        int(tsql(plain, f"SELECT kgrag.submit_document('{note('policy', text)}')").stdout)
        for text in ("Policy one.", "Policy two.", "Policy one.")
    ]
    assert tickets[0] < tickets[1] < tickets[2]
    assert worker(plain).returncode == 0
    with psycopg.connect(plain) as conn, tenant_transaction(conn, "t1"):
        stored = conn.execute("SELECT text FROM kgrag.chunk WHERE doc_id = 'policy'").fetchone()
    assert stored == ("Policy one.",)
    # a document whose worker dies each time: taken back, then failed at ingest_max_attempts (1)
    admin.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'ingest_max_attempts', '1')")
    admin.commit()
    doomed = int(tsql(plain, f"SELECT kgrag.submit_document('{note('doomed', 'It always crashes.')}')").stdout)
    with psycopg.connect(plain) as gone, tenant_transaction(gone, "t1"):
        assert gone.execute("SELECT count(*) FROM kgrag_private.claim_tickets(10)").fetchone() == (1,)
    assert tsql(plain, "SELECT count(*) FROM kgrag_private.claim_tickets(10)").stdout == "0"
    assert queue(plain)[doomed][1:] == ("failed", 1, "its worker stopped while ingesting it, 1 times")


def test_a_document_the_endpoint_refuses_alone_fails_and_the_others_go_through(
    dsn: str, login: Callable[..., str], admin: psycopg.Connection
) -> None:
    llm = FakeOpenAI()
    llm.embedding_dim = 512
    llm.embed_failure, llm.embed_refused = (400, '{"error": {"message": "bad input"}}'), "POISON"
    writer = login("kgrag_writer", "t1")
    admin.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'ingest_max_attempts', '1')")
    admin.commit()
    texts = ["Dock 1 opens at six.", "POISON pill text.", "Dock 3 opens at seven."]
    tickets = [
        int(tsql(writer, f"SELECT kgrag.submit_document('{note(f'd{i}', t)}')").stdout) for i, t in enumerate(texts)
    ]
    endpoint = {"KGRAG_EMBED_URL": llm.url, "KGRAG_LLM_RETRIES": "1", "KGRAG_LLM_BACKOFF": "0"}
    done = run("worker", "--tenant", "t1", "--drain", "--embedder", "openai", dsn=writer, **endpoint)
    assert "stored 2" in done.stdout and "failed 1" in done.stdout, done.stdout + done.stderr
    states = queue(writer)
    assert states[tickets[1]][1] == "failed" and "it failed alone while others went through" in states[tickets[1]][3]
    assert {states[t][1] for t in (tickets[0], tickets[2])} == {"stored"}


def test_a_waiting_worker_takes_a_submission_shows_it_in_its_metrics_and_stops_on_sigterm(
    dsn: str, login: Callable[..., str]
) -> None:
    import httpx
    from commands import _free_port

    writer = login("kgrag_writer", "t1")
    port = _free_port()
    waiting = subprocess.Popen(
        [sys.executable, "-m", "pgkgrag", "worker", "--tenant", "t1", "--embedder", "hash", "--metrics-port", str(port),
         "--quiet-seconds", "0.5"],
        env=command_env(writer), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        metrics = ""
        while time.monotonic() < deadline and "kgrag_worker_queue" not in metrics:
            time.sleep(0.2)
            try:
                metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            except httpx.HTTPError:
                continue
        for i in range(2):  # woken by each submission (LISTEN), no poll needed
            tsql(writer, f"SELECT kgrag.submit_document('{note(f'm{i}', f'Metric note {i} about Faro.')}')")
        while time.monotonic() < deadline and 'kgrag_worker_queue{state="stored",tenant="t1"} 2.0' not in metrics:
            time.sleep(0.2)
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        assert 'kgrag_worker_tickets_total{state="stored"} 2.0' in metrics, metrics
        assert 'kgrag_worker_queue{state="stored",tenant="t1"} 2.0' in metrics, metrics
        started = time.monotonic()
        waiting.send_signal(signal.SIGTERM)
        out, err = waiting.communicate(timeout=30)
        assert time.monotonic() - started < 10, "a waiting worker stops at once"
        assert "stored 2" in out, out + err
    finally:
        if waiting.poll() is None:
            waiting.kill()

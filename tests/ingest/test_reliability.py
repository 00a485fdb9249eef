"""Faults, concurrency and bad input: the data stays whole and every mistake is named.

Each test records the figures it measured (pytest's record_property); benchmarks/reliability.py
runs these tests and writes them to docs/reliability.md.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import psycopg
import pytest
from commands import run, start, summary
from conftest import Server
from ingesting import OPS, checksums, ingest, write_jsonl

from pgkgrag import migrations
from pgkgrag.db.connections import WRITER, connect, tenant_transaction
from pgkgrag.db.server import EmbeddedServer
from pgkgrag.embed.embedders import HashEmbedder

Record = Callable[[str, object], None]
T = TypeVar("T")
POOL = [
    f"{w} {k}"
    for w in ("Maple", "Cedar", "Birch", "Aspen", "Rowan", "Falcon")
    for k in ("Gateway", "Queue", "Ledger", "Cache")
]


def corpus(n: int) -> list[dict[str, Any]]:
    """n documents over 24 shared names, three per document: every batch touches the same entities."""
    docs = []
    for i in range(n):
        names = [POOL[(i * 7 + j * 5) % len(POOL)] for j in range(3)]
        text = f"The {names[0]} depends on the {names[1]}. The {names[1]} feeds the {names[2]}. Note {i} records this."
        docs.append(
            {
                "doc_id": f"doc{i:05d}",
                "text": text,
                "entities": [{"name": name, "type": "Service"} for name in names],
                "relations": [{"source": names[0], "target": names[1], "type": "DEPENDS_ON"}],
            }
        )
    return docs


def ingest_cli(dsn: str, path: Path, batch_size: int, *options: str) -> subprocess.Popen[str]:
    # PGAPPNAME tells the command's backends from the test's own (application_name 'pgkgrag')
    return start(
        "ingest",
        str(path),
        "--embedder",
        "hash",
        "--no-build",
        "--batch-size",
        str(batch_size),
        *options,
        dsn=dsn,
        KGRAG_TENANT="t1",
        PGAPPNAME="pgkgrag-under-test",
    )


def per_document(dsn: str) -> dict[str, str]:
    """doc_id -> md5 of its chunks and mentions: a document is whole when this equals a clean run's."""
    with connect(dsn) as conn, tenant_transaction(conn, "t1"):
        rows = conn.execute(
            "SELECT d.doc_id, md5(COALESCE((SELECT string_agg(c.chunk_id || c.content_hash || COALESCE(("
            "   SELECT string_agg(m.entity_id, ',' ORDER BY m.entity_id) FROM kgrag.mention m"
            "    WHERE m.tenant_id = c.tenant_id AND m.chunk_id = c.chunk_id), ''), ';' ORDER BY c.ordinal)"
            "   FROM kgrag.chunk c WHERE c.tenant_id = d.tenant_id AND c.doc_id = d.doc_id), ''))"
            " FROM kgrag.document d ORDER BY 1"
        ).fetchall()
    return dict(rows)


def wait_for(probe: Callable[[], T], timeout: float = 120, what: str = "") -> T:
    """Call probe until it returns something true, and return that."""
    deadline = time.monotonic() + timeout
    while not (value := probe()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return value


def count_documents(dsn: str) -> int:
    try:
        with connect(dsn) as conn, tenant_transaction(conn, "t1"):
            return conn.execute("SELECT count(*) FROM kgrag.document").fetchone()[0]  # type: ignore[index]
    except Exception:
        return -1


@pytest.fixture(scope="module")
def reference(
    server: Server, template: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, dict[str, str], dict[str, str]]]:
    """The crash corpus ingested cleanly once: its file, per-document fingerprints, table checksums."""
    path = write_jsonl(tmp_path_factory.mktemp("crash") / "corpus.jsonl", corpus(1200))
    name = server.create_database(template=template)
    try:
        proc = ingest_cli(server.dsn(name), path, 40)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        with connect(server.dsn(name)) as admin:
            yield path, per_document(server.dsn(name)), checksums(admin, "t1")
    finally:
        server.drop_database(name)


def check_whole_then_rerun(dsn: str, ref: tuple[Path, dict[str, str], dict[str, str]], record: Record) -> None:
    path, ref_docs, ref_sums = ref
    present = per_document(dsn)
    record("documents committed before the fault", len(present))
    partial = sorted(d for d, fingerprint in present.items() if ref_docs.get(d) != fingerprint)
    record("partial documents after restart", len(partial))
    assert 0 < len(present) < len(ref_docs), "the fault did not land in the middle of the run"
    assert partial == []
    start = time.perf_counter()
    proc = ingest_cli(dsn, path, 40)
    _, err = proc.communicate(timeout=600)
    record("rerun seconds", round(time.perf_counter() - start, 1))
    assert proc.returncode == 0, err
    assert per_document(dsn) == ref_docs
    with connect(dsn) as admin:
        assert checksums(admin, "t1") == ref_sums
    record("after the rerun", "every table equals a clean run")


@pytest.mark.slow
def test_the_server_stopped_immediately_mid_batch(
    tmp_path: Path, reference: tuple[Path, dict[str, str], dict[str, str]], record_property: Record
) -> None:
    home = EmbeddedServer(tmp_path / "pg")
    status, _ = home.start()
    try:
        dsn = status.uri()
        migrations.upgrade(dsn)
        proc = ingest_cli(dsn, reference[0], 40)
        wait_for(lambda: count_documents(dsn) >= 200, what="a few batches to commit")
        home.stop(mode="immediate")
        _, err = proc.communicate(timeout=120)
        record_property("ingest exit code after the crash", proc.returncode)
        assert proc.returncode != 0
        assert "Traceback" not in err, err
        record_property("ingest message", " / ".join(err.strip().splitlines()))
        assert "Run the same command again" in err
        start = time.perf_counter()
        status, _ = home.start()
        record_property("restart with recovery seconds", round(time.perf_counter() - start, 2))
        check_whole_then_rerun(status.uri(), reference, record_property)
    finally:
        home.stop()


@pytest.mark.slow
def test_the_ingesting_backend_terminated_mid_batch(
    server: Server, template: str, reference: tuple[Path, dict[str, str], dict[str, str]], record_property: Record
) -> None:
    name = server.create_database(template=template)
    dsn = server.dsn(name)
    try:
        proc = ingest_cli(dsn, reference[0], 40)
        with connect(dsn, autocommit=True) as watcher:

            def busy_backend() -> int | None:
                # the ingesting backend inside a transaction, once a few batches have committed
                if count_documents(dsn) < 200:
                    return None
                row = watcher.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                    " AND application_name = 'pgkgrag-under-test' AND xact_start IS NOT NULL"
                ).fetchone()
                return row[0] if row else None

            pid = wait_for(busy_backend, what="the ingesting backend mid-batch")
            assert watcher.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
            wait_for(
                lambda: (
                    watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone() == (0,)
                ),
                what="the backend to be gone",
            )
        _, err = proc.communicate(timeout=120)
        record_property("ingest exit code", proc.returncode)
        assert proc.returncode != 0 and "Traceback" not in err, err
        record_property("ingest message", " / ".join(err.strip().splitlines()))
        assert "Run the same command again" in err
        check_whole_then_rerun(dsn, reference, record_property)
    finally:
        server.drop_database(name)


@pytest.fixture(scope="module")
def serial_run(
    server: Server, template: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """400 documents over 24 shared names, ingested by one process writing one batch at a time."""
    docs = corpus(400)
    name = server.create_database(template=template)
    try:
        proc = ingest_cli(server.dsn(name), write_jsonl(tmp_path_factory.mktemp("serial") / "all.jsonl", docs), 10)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        with connect(server.dsn(name)) as conn:
            return docs, checksums(conn, "t1")
    finally:
        server.drop_database(name)


def retried(out: str) -> int:
    """The "retried transactions" figure of an ingest summary."""
    return int(summary(out)["retried transactions"])


@pytest.mark.slow
def test_four_ingesting_processes_equal_a_serial_run(
    server: Server,
    template: str,
    tmp_path: Path,
    serial_run: tuple[list[dict[str, Any]], dict[str, str]],
    record_property: Record,
) -> None:
    docs, sums_serial = serial_run
    parts = [write_jsonl(tmp_path / f"part{i}.jsonl", docs[i::4]) for i in range(4)]
    parallel = server.create_database(template=template)
    try:
        start = time.perf_counter()
        procs = [ingest_cli(server.dsn(parallel), part, 10) for part in parts]
        outputs = [p.communicate(timeout=600) for p in procs]
        record_property("4 processes, seconds", round(time.perf_counter() - start, 1))
        assert [p.returncode for p in procs] == [0, 0, 0, 0], [err for _, err in outputs]
        assert not any("deadlock" in out + err for out, err in outputs)
        record_property(
            "transactions retried after a deadlock or serialization failure", sum(retried(out) for out, _ in outputs)
        )
        with connect(server.dsn(parallel)) as a:
            sums_parallel = checksums(a, "t1")
            with tenant_transaction(a, "t1"):
                totals = a.execute(
                    "SELECT (SELECT count(*) FROM kgrag.edge), (SELECT count(*) FROM kgrag.mention),"
                    " (SELECT count(*) FROM kgrag.entity)"
                ).fetchone()
        record_property("edges, mentions, entities", totals)
        assert sums_parallel == sums_serial
        record_property("every table equals the serial run", True)
    finally:
        server.drop_database(parallel)


def test_one_process_writing_three_batches_at_once_equals_a_serial_run(
    server: Server,
    template: str,
    tmp_path: Path,
    serial_run: tuple[list[dict[str, Any]], dict[str, str]],
    record_property: Record,
) -> None:
    docs, sums_serial = serial_run
    name = server.create_database(template=template)
    try:
        proc = ingest_cli(server.dsn(name), write_jsonl(tmp_path / "all.jsonl", docs), 10, "--jobs", "3")
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert "summed over 3 writers" in out
        record_property("--jobs 3, transactions retried", retried(out))
        with connect(server.dsn(name)) as conn:
            assert checksums(conn, "t1") == sums_serial
        record_property("--jobs 3, every table equals the serial run", True)
    finally:
        server.drop_database(name)


def apply_one(conn: psycopg.Connection, doc_id: str, names: list[str]) -> None:
    """One single-chunk document citing `names`, through the SQL API (kgrag_private.stage_begin, the
    staging tables, kgrag_private.ingest_apply), in the caller's transaction."""
    text = f"{doc_id} cites " + " and ".join(names)
    conn.execute("SELECT kgrag_private.stage_begin()")
    conn.execute("INSERT INTO pg_temp.kgrag_stage_document (doc_id, content_hash) VALUES (%s, md5(%s))", [doc_id, text])
    conn.execute(
        "INSERT INTO pg_temp.kgrag_stage_chunk (doc_id, ordinal, char_start, char_end, text, content_hash)"
        " VALUES (%s, 0, 0, length(%s), %s, md5(%s))",
        [doc_id, text, text, text],
    )
    for name in names:
        conn.execute(
            "INSERT INTO pg_temp.kgrag_stage_entity (doc_id, name, type, ordinals) VALUES (%s, %s, 'Service', '{0}')",
            [doc_id, name],
        )
    conn.execute("SELECT kgrag_private.ingest_apply()")


def test_a_writer_waits_for_the_entities_a_changed_document_leaves(dsn: str, record_property: Record) -> None:
    """A changed document that stops citing E and F changes their co-occurrence weight without
    writing E or F themselves; a concurrent writer adding a citation of both must wait for it, or
    it counts the citation that is going away and the weight stays one too high."""
    with connect(dsn, role=WRITER) as setup:
        for doc_id in ("a", "b"):
            with tenant_transaction(setup, "t1"):
                apply_one(setup, doc_id, ["Egret", "Finch"])
    first, second = connect(dsn, role=WRITER), connect(dsn, role=WRITER)

    def write_c() -> None:
        with tenant_transaction(second, "t1"):
            apply_one(second, "c", ["Egret", "Finch"])

    pool = ThreadPoolExecutor(1)
    try:
        with tenant_transaction(first, "t1"), connect(dsn, autocommit=True) as watcher:
            apply_one(first, "a", ["Gull", "Heron"])  # document a changed: no Egret, no Finch any more
            done = pool.submit(write_c)
            waiting = wait_for(
                lambda: watcher.execute(
                    "SELECT wait_event FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
                    [second.info.backend_pid],
                ).fetchone(),
                timeout=30,
                what="the second writer to wait",
            )
            record_property("the second writer waited on", waiting[0])
            assert not done.done()
        done.result(timeout=60)  # the first writer committed; the second one went on
    finally:
        pool.shutdown()
        first.close()
        second.close()
    with connect(dsn) as conn, tenant_transaction(conn, "t1"):
        weights = conn.execute(
            "SELECT weight FROM kgrag.edge WHERE rel = 'CO_OCCURS'"
            " AND src IN ('service:egret', 'service:finch') AND dst IN ('service:egret', 'service:finch')"
        ).fetchall()
    record_property("Egret-Finch co-occurrence weight (documents b and c cite both)", weights)
    assert weights == [(2.0,), (2.0,)]


# --- bad input: each gets a clear error naming the problem, and nothing is written ---------------

NAN = np.full(512, np.nan, dtype=np.float32)
ONES = np.ones(512, dtype=np.float32)
SEARCH_CASES = {
    "wrong vector dimension": (
        "SELECT * FROM kgrag.kgrag_search('[1,2,3]', 'auto', 'q')",
        [],
        "has 3 dimensions, but tenant 't1' embeds with hash (512 dimensions)",
    ),
    "NaN in a vector": ("SELECT * FROM kgrag.kgrag_search(%s, 'auto', 'q')", [NAN], "NaN"),
    "empty question": ("SELECT * FROM kgrag.kgrag_search(%s, 'auto', '')", [ONES], "the question text is empty"),
    "unknown route": ("SELECT * FROM kgrag.kgrag_search(%s, 'sideways', 'q')", [ONES], "unknown route 'sideways'"),
    "negative k": ("SELECT * FROM kgrag.kgrag_search(%s, 'auto', 'q', -3)", [ONES], "k must be between 1 and"),
    "hops above the maximum": (
        "SELECT * FROM kgrag.kgrag_search(%s, 'local', 'q', 10, '{\"hops\": 9}')",
        [ONES],
        "option hops = 9 is outside 0..4",
    ),
    "unknown option": (
        "SELECT * FROM kgrag.kgrag_search(%s, 'auto', 'q', 10, '{\"hopz\": 2}')",
        [ONES],
        "unknown search option(s): hopz",
    ),
}
BIG = "word " * (2 * 1024 * 1024)  # 10 MB
INGEST_CASES = {
    "NUL bytes in a document": ('{"doc_id": "n", "text": "a\\u0000b"}', "NUL"),
    "10 MB document": (json.dumps({"doc_id": "big", "text": BIG}), "is 10.0 MB, above the limit of 5 MB"),
    "malformed JSONL line": ('{"doc_id": "m", "text": "unterminated', "invalid JSON"),
    "a line that is not an object": ('["doc", "text"]', "a JSON object"),
    "missing text": ('{"doc_id": "t"}', "text"),
    "empty doc_id": ('{"doc_id": "", "text": "x"}', "doc_id"),
}


@pytest.fixture
def populated(conn: psycopg.Connection, tmp_path: Path, dsn: str) -> Iterator[dict[str, str]]:
    ingest(conn, tmp_path, OPS, embedder=HashEmbedder(512))
    with connect(dsn) as admin:
        yield checksums(admin, "t1")


@pytest.mark.parametrize("case", sorted(SEARCH_CASES))
def test_bad_search_input_is_named_and_writes_nothing(
    dsn: str, populated: dict[str, str], case: str, record_property: Record
) -> None:
    query, params, message = SEARCH_CASES[case]
    with connect(dsn, role=WRITER) as conn:
        with pytest.raises(psycopg.Error) as caught, tenant_transaction(conn, "t1"):
            conn.execute(query, params)
        record_property("error", caught.value.diag.message_primary)
        assert message in str(caught.value.diag.message_primary)
        assert conn.execute("SELECT 1").fetchone() == (1,)  # the connection stays usable
    with connect(dsn) as admin:
        assert checksums(admin, "t1") == populated


@pytest.mark.parametrize("case", sorted(INGEST_CASES))
def test_bad_documents_are_named_and_nothing_of_them_is_written(
    dsn: str, populated: dict[str, str], tmp_path: Path, case: str, record_property: Record
) -> None:
    line, message = INGEST_CASES[case]
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    proc = run("ingest", str(path), "--embedder", "hash", "--no-build", dsn=dsn, KGRAG_TENANT="t1")
    err = proc.stderr
    assert proc.returncode == 1 and "Traceback" not in err, err
    rejected = [ln for ln in err.splitlines() if ln.startswith("rejected")]
    record_property("error", rejected[0].split(": ", 1)[1] if rejected else err.strip())
    assert len(rejected) == 1 and message in rejected[0], err
    with connect(dsn) as admin:
        after = checksums(admin, "t1")
        # nothing of it is written; the failure is recorded, with its file and line (revision 0039)
        assert {t: c for t, c in after.items() if t != "ingest_failure"} == {
            t: c for t, c in populated.items() if t != "ingest_failure"
        }
        with tenant_transaction(admin, "t1"):
            recorded = admin.execute(
                "SELECT line, reason FROM kgrag.ingest_failure WHERE source = %s", [str(path)]
            ).fetchall()
        assert recorded == [(1, rejected[0].split(": ", 1)[1])], recorded

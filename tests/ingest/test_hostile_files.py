"""Files made to hurt the machine that ingests them, through the real command line: a reader kept
busy while its ingest is killed or stopped (the reader's worker must not outlive it nor run past its
own time limit); text files past their limits, pipes named like text files, a heading that made a
pattern backtrack for hours, Markdown that keeps its parser busy, web pages nested past any page a
browser shows (each refused with its reason in kgrag.ingest_failure, or read, never a hang or a
traceback)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import psycopg
from commands import PGKGRAG, command_env, start
from documents import FIXTURES, slow_docx

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.ingest.readers.files import read_inputs
from pgkgrag.ingest.readers.html import TOO_DEEP

WORKER = "pgkgrag.ingest.readers.worker"
# a process of its own runs the command: the peak resident set of its children is the command's
# (the ingest, or its reader's worker)
PEAK = (
    "import json, resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
    "print(json.dumps([done.returncode, done.stderr, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))"
)


def ingest(dsn: str, *files: Path, timeout: float = 120) -> tuple[int, str, float]:
    """`pgkgrag ingest FILES` to its end (tenant t1): its status, its stderr, and its peak memory
    in MB (Linux counts kB)."""
    command = [PGKGRAG, "ingest", *map(str, files), "--embedder", "hash", "--no-build"]
    proc = subprocess.Popen(
        [sys.executable, "-c", PEAK, *command],
        env=command_env(dsn, KGRAG_TENANT="t1"),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the ingest too, not only the process that waits for it
        proc.communicate()
        raise
    status, stderr, peak_kb = json.loads(stdout)
    assert "Traceback" not in stderr, stderr
    return status, stderr, peak_kb / 1024


def failures(dsn: str) -> dict[str, str]:
    """The reasons kgrag.ingest_failure gives, by file (a JSONL line: file:line)."""
    with connect(dsn) as conn, tenant_transaction(conn, "t1"):
        rows = conn.execute("SELECT regexp_replace(source, '.*/', ''), line, reason FROM kgrag.ingest_failure")
        return {f"{source}:{line}" if line else source: reason for source, line, reason in rows}


def documents(dsn: str) -> dict[str, str]:
    with connect(dsn) as conn, tenant_transaction(conn, "t1"):
        return dict(conn.execute("SELECT doc_id, title FROM kgrag.document").fetchall())  # type: ignore[arg-type]


def set_limit(admin: psycopg.Connection, key: str, value: str) -> None:
    """A limit of tenant t1, as the owner sets it."""
    with tenant_transaction(admin, "t1"):
        admin.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', %s, %s)", [key, value])
    admin.commit()


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE  # dead, waiting for whoever adopted it
    except psutil.NoSuchProcess:
        return True


def wait_gone(process: psutil.Process, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not _gone(process):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@contextmanager
def ingest_reading(dsn: str, file: Path) -> Iterator[tuple[psutil.Process, psutil.Process]]:
    """`pgkgrag ingest FILE` started, once its reader's worker is busy on the file: (the ingest,
    the worker); both are killed after, whatever happened."""
    proc = start("ingest", str(file), "--embedder", "hash", "--no-build", dsn=dsn, KGRAG_TENANT="t1")
    ingest = psutil.Process(proc.pid)
    found: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        # a third of a second of reading done (a whole second, on a loaded machine, outlasted the
        # 3 s reader_timeout_s a test sets: the worker had ended before the ingest was stopped)
        while not found or found[0].cpu_times().user < 0.3:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            found = found or [c for c in ingest.children() if WORKER in " ".join(c.cmdline())]
            time.sleep(0.1)
        yield ingest, found[0]
    finally:
        for process in (ingest, *found):
            if not _gone(process):
                process.kill()
        proc.communicate()


def test_a_killed_ingest_takes_its_busy_reader_with_it(dsn: str, tmp_path: Path) -> None:
    """kill -9 of an ingest whose reader is a minute into a file: the worker goes with it (it ran on
    alone, 38 s and 4.5 minutes, when only the ingest watched its time)."""
    with ingest_reading(dsn, slow_docx(tmp_path / "minutes.docx")) as (ingest, worker):
        ingest.kill()
        assert wait_gone(worker, 10), "the reader's worker outlived its killed ingest"


def test_a_reader_stops_at_its_time_limit_when_its_ingest_cannot_stop_it(
    dsn: str, admin: psycopg.Connection, tmp_path: Path
) -> None:
    """The ingest is stopped (SIGSTOP, as ^Z or a debugger does) while its reader works: the worker
    ends at its own time limit, reader_timeout_s, not when the file is read."""
    set_limit(admin, "reader_timeout_s", "3")
    with ingest_reading(dsn, slow_docx(tmp_path / "minutes.docx")) as (ingest, worker):
        os.kill(ingest.pid, signal.SIGSTOP)
        try:
            assert wait_gone(worker, 3 + 15), "the reader's worker ran past its reader_timeout_s"
        finally:
            os.kill(ingest.pid, signal.SIGCONT)


def test_a_text_file_past_max_document_mb_is_refused_before_it_is_read(dsn: str, tmp_path: Path) -> None:
    """A 200 MB .txt (at max_file_mb, 40 times max_document_mb) was read whole in the ingest
    before its size was checked: 487 MB of memory. Its bytes are its document's text: refused at
    its size, unread."""
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:
        handle.truncate(200 * 2**20 - 1)  # sparse: nothing is written to disk
    (tmp_path / "small.txt").write_text("The Ledger Service records every payment.")
    status, _, peak_mb = ingest(dsn, tmp_path, timeout=300)
    assert status == 1 and set(documents(dsn)) == {"small.txt"}
    reason = failures(dsn)["big.txt"]
    assert "200 MB" in reason and "max_document_mb" in reason and "not read" in reason, reason
    assert peak_mb < 200, f"{peak_mb:.0f} MB: the file was read"


def test_pipes_named_like_text_files_are_refused_not_waited_on(dsn: str, tmp_path: Path) -> None:
    """A named pipe (or a link to a device: /dev/zero never ends) read as a .txt or a .jsonl: the
    ingest waited forever for a writer. Refused as not a regular file; the real file is read."""
    os.mkfifo(tmp_path / "notes.txt")
    os.mkfifo(tmp_path / "lines.jsonl")
    (tmp_path / "real.txt").write_text("The Ledger Service records every payment.")
    status, _, _ = ingest(dsn, tmp_path)
    assert status == 1 and set(documents(dsn)) == {"real.txt"}
    refused = failures(dsn)
    assert all("not a regular file" in refused[name] for name in ("notes.txt", "lines.jsonl")), refused


def test_a_jsonl_line_past_its_limit_is_refused_unread_and_the_others_written(
    dsn: str, admin: psycopg.Connection, tmp_path: Path
) -> None:
    """A line may take 8 times max_document_mb (its text JSON-escaped, its entities): one of 10 MB
    under max_document_mb 1 is refused at its length, unread, whatever it holds (here a short text
    and 10 MB of metadata, which was read and written)."""
    set_limit(admin, "max_document_mb", "1")
    lines = [
        {"doc_id": "before", "text": "The Ledger Service records every payment."},
        {"doc_id": "padded", "text": "The Vault.", "metadata": {"notes": "x" * 10 * 2**20}},
        {"doc_id": "after", "text": "The Checkout Gateway calls the Ledger Service."},
    ]
    path = tmp_path / "lines.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    status, _, _ = ingest(dsn, path)
    assert status == 1 and set(documents(dsn)) == {"before", "after"}
    assert "above 8 MB" in failures(dsn)["lines.jsonl:2"] and "not read" in failures(dsn)["lines.jsonl:2"]


def test_a_heading_with_a_long_run_of_spaces_is_read(dsn: str, tmp_path: Path) -> None:
    """`# a`, 20,000 spaces, `x`: the patterns that found a text's title and its chunks' headings
    backtracked in cubic time on it (2,000 spaces: 16 s; 20,000: hours). Read, titled `a x`."""
    (tmp_path / "spaced.txt").write_text("# a" + " " * 20_000 + "x\n\nThe Ledger Service records every payment.\n")
    status, stderr, _ = ingest(dsn, tmp_path)
    assert status == 0, stderr
    assert documents(dsn) == {"spaced.txt": "a x"}


def test_markdown_is_read_within_the_readers_time_limit(dsn: str, admin: psycopg.Connection, tmp_path: Path) -> None:
    """4 MB of `[a](`, each a link that never closes, keeps Markdown's parser busy for about 18 s
    on this machine; it ran in the ingest itself, past reader_timeout_s. Now in the readers'
    worker: stopped at its limit, and the next file read."""
    set_limit(admin, "reader_timeout_s", "3")
    (tmp_path / "links.md").write_text("[a](" * 2**20)
    (tmp_path / "notes.md").write_text("# Notes\n\nThe Ledger Service records every payment.\n")
    status, _, _ = ingest(dsn, tmp_path)
    assert status == 1 and documents(dsn) == {"notes.md": "Notes"}
    assert "reader_timeout_s" in failures(dsn)["links.md"]


def test_web_pages_nested_past_512_are_refused_before_they_are_parsed(dsn: str, tmp_path: Path) -> None:
    """`<div>` 100,000 deep kept the HTML parser 24 s (its time grows with the depth times the
    length), then the walk of the page failed with a RecursionError; `<span><div></span>`, which
    the parser nests too although it closes the span, likewise. Both are refused from their tags,
    unparsed; pages closed as sloppily as old sites are (unclosed links, fonts across paragraphs,
    cells without their end tags) nest no deeper than a browser makes them, and are read."""
    (tmp_path / "deep.html").write_text("<body>" + "<div>" * 100_000 + "x" + "</div>" * 100_000)
    (tmp_path / "misnested.html").write_text("<body>" + "<span><div></span>" * 50_000 + "x")
    cells = ("<tr>" + "<td><font>The Ledger" * 10) * 300
    sloppy = "<font><p>The Vault</font></p>" * 3000 + "<a href=v>The Vault" * 3000 + f"<table>{cells}</table>"
    (tmp_path / "sloppy.html").write_text(f"<html><title>Sloppy</title><body>{sloppy}")
    status, _, _ = ingest(dsn, tmp_path)
    assert status == 1 and documents(dsn) == {"sloppy.html": "Sloppy"}
    refused = failures(dsn)
    assert refused == {"deep.html": TOO_DEEP, "misnested.html": TOO_DEEP}, refused


def test_a_page_too_small_to_keep_the_parser_long_is_refused_by_its_walk(tmp_path: Path) -> None:
    """A page of fewer tags than the estimate is made for is parsed (in little time whatever its
    depth), and the walk of it checks the real depth (it failed with a RecursionError past about
    990, at 600 it read a page no browser shows)."""
    for depth in (600, 5000):
        (tmp_path / f"sections-{depth}.html").write_text("<body>" + "<section>" * depth + "The Ledger")
    items = read_inputs([tmp_path])
    assert [item.error for item in items] == [TOO_DEEP, TOO_DEEP]


def test_a_folder_holding_a_package_named_pgkgrag_runs_none_of_its_code(dsn: str, tmp_path: Path) -> None:
    """The readers' worker was started with `python -m`, which puts the current folder first on the
    module path: a folder of documents holding pgkgrag/ingest/readers/worker.py, ingested from
    inside it (`cd shared && pgkgrag ingest .`), had that file run as the user who ingests."""
    planted = tmp_path / "pgkgrag" / "ingest" / "readers"
    planted.mkdir(parents=True)
    for package in (planted, planted.parent, planted.parent.parent):
        (package / "__init__.py").write_text("")
    ran = tmp_path.parent / f"{tmp_path.name}-ran"
    (planted / "worker.py").write_text(f"open({str(ran)!r}, 'w').write('planted code ran')\n")
    shutil.copy(FIXTURES / "handbook.html", tmp_path)
    done = subprocess.run(
        [PGKGRAG, "ingest", ".", "--embedder", "hash", "--no-build"],
        env=command_env(dsn, KGRAG_TENANT="t1"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert not ran.exists(), "the worker ran the code of the folder it was started in"
    assert "handbook.html" in documents(dsn)

"""Files made to hurt the machine that ingests them, through the real command line: a reader kept
busy while its ingest is killed or stopped (the reader's worker must not outlive it nor run past its
own time limit)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import psycopg
from commands import start
from documents import slow_docx

from pgkgrag.db.connections import tenant_transaction

WORKER = "pgkgrag.ingest.readers.worker"


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
        while not found or found[0].cpu_times().user < 1:  # a second of reading done
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
    with tenant_transaction(admin, "t1"):
        admin.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'reader_timeout_s', '3')")
    admin.commit()
    with ingest_reading(dsn, slow_docx(tmp_path / "minutes.docx")) as (ingest, worker):
        os.kill(ingest.pid, signal.SIGSTOP)
        try:
            assert wait_gone(worker, 3 + 15), "the reader's worker ran past its reader_timeout_s"
        finally:
            os.kill(ingest.pid, signal.SIGCONT)

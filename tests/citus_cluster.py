"""The real Citus cluster of ../shared/citus/citus.sh (a coordinator and two workers on this machine),
for the Citus tests and benchmarks/citus.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

REPO = Path(__file__).resolve().parents[1]
CITUS_SH = REPO.parent / "shared" / "citus" / "citus.sh"
SETUP = REPO / "docker" / "citus" / "setup.sh"


def citus(command: str) -> str:
    """Run citus.sh; its last line of output (start and reset print the coordinator's DSN)."""
    args = [str(CITUS_SH), command] + ([sysconfig.get_paths()["purelib"]] if command == "start" else [])
    for attempt in range(5):
        done = subprocess.run(args, capture_output=True, text=True, timeout=1200, check=False)
        # reset drops the database on each node in turn while the other nodes' maintenance
        # daemons may connect to it again: try again
        if done.returncode == 0 or "being accessed by other users" not in done.stderr or attempt == 4:
            break
        time.sleep(1)
    if done.returncode != 0:
        raise RuntimeError(f"citus.sh {command} failed: {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def fresh_cluster() -> str:
    """Start the cluster (building Citus the first time) with a clean database, then install and
    distribute the schema with docker/citus/setup.sh, the compose's own steps; the coordinator's DSN."""
    citus("start")
    dsn = citus("reset")
    node = conninfo_to_dict(dsn)
    workers = [
        f"{host}:{port}"
        for host, port in psycopg.connect(dsn, autocommit=True)
        .execute("SELECT nodename, nodeport FROM pg_dist_node WHERE groupid > 0 ORDER BY nodeport")
        .fetchall()
    ]
    pginstall = Path(os.environ.get("CITUS_BASE", "/tmp/pgkgrag-citus"), "pginstall").read_text().strip()
    bin_dirs = [Path(sys.executable).parent, Path(pginstall, "bin")]
    env = {
        **os.environ,
        "PATH": os.pathsep.join([*map(str, bin_dirs), os.environ.get("PATH", "")]),
        "PGHOST": str(node["host"]),
        "PGPORT": str(node["port"]),
        "PGUSER": str(node["user"]),
        "PGDATABASE": str(node["dbname"]),
        "KGRAG_DSN": dsn,
        "KGRAG_COORDINATOR": f"{node['host']}:{node['port']}",
        "KGRAG_WORKERS": " ".join(workers),
    }
    done = subprocess.run(["bash", str(SETUP)], env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"docker/citus/setup.sh failed: {done.stderr.strip()}")
    return dsn


def placement(admin: psycopg.Connection, tenant: str) -> int:
    """The port of the worker holding the tenant's shard of kgrag.document."""
    row = admin.execute(
        "SELECT n.nodeport FROM pg_dist_placement AS p JOIN pg_dist_node AS n ON n.groupid = p.groupid"
        " WHERE p.shardid = get_shard_id_for_distribution_column('kgrag.document', %s::text)",
        [tenant],
    ).fetchone()
    assert row is not None
    return int(row[0])


def login(admin: psycopg.Connection, name: str, granted: str, tenants: list[str]) -> None:
    """A login role (no superuser, no BYPASSRLS) granted a kgrag role and tenants, made again."""
    admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
    admin.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS").format(sql.Identifier(name)))
    admin.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(granted), sql.Identifier(name)))
    for tenant in tenants:
        admin.execute("SELECT kgrag.grant_tenant(%s, %s)", [name, tenant])


def rss_anon_kb(pid: int) -> int:
    """The anonymous resident memory of a process of this machine, kB (/proc/PID/status: RssAnon), what a
    backend's own allocations (its plans, its caches) take; OSError when it is gone."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("RssAnon:")).split()[1])


# what carries a transaction and its settings to a node, whatever the statement: not a round trip of it
BOOKKEEPING = ("BEGIN", "COMMIT", "ROLLBACK", "PREPARE", "SAVEPOINT", "RELEASE", "SET ", "SELECT ASSIGN_DISTRIBUTED")


@dataclass(frozen=True)
class Remote:
    """A command Citus sent to another node (citus.log_remote_commands): its text and where it went."""

    command: str
    server: str  # user@host:port
    connection: str

    @property
    def port(self) -> int:
        return int(self.server.rsplit(":", 1)[-1])

    @property
    def bookkeeping(self) -> bool:
        return self.command.upper().startswith(BOOKKEEPING)


@contextmanager
def notices(conn: psycopg.Connection) -> Iterator[list[tuple[str, str]]]:
    """The (message, detail) of every notice the server sends meanwhile (a Diagnostic is only valid
    inside the handler); with citus.log_remote_commands and client_min_messages = log, what Citus
    sent to other nodes and ran locally."""
    heard: list[tuple[str, str]] = []

    def note(d: psycopg.errors.Diagnostic) -> None:
        heard.append((d.message_primary or "", d.message_detail or ""))

    conn.add_notice_handler(note)
    try:
        yield heard
    finally:
        conn.remove_notice_handler(note)


def remote(heard: list[tuple[str, str]]) -> list[Remote]:
    """The commands Citus issued to other nodes, from notices heard (detail: on server U@H:P connectionId: N)."""
    found = []
    for message, detail in heard:
        where = re.match(r"on server (\S+) connectionId: (\d+)", detail)
        if message.startswith("issuing ") and where:
            found.append(Remote(message.removeprefix("issuing "), where.group(1), where.group(2)))
    return found

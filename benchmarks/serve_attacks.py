"""What an attacker holding one tenant's key costs the other tenants of `pgkgrag serve`, measured once.

Two tenants embed with e5 (the default, whose time grows with the text): `victim` searches in a loop
while `attacker` sends, one attack at a time: a 1,000,000-character question, a 20,000-character one
(its tenant's limit is 2,000), two texts of 30,800 characters to /v1/embeddings, and a flood of 6
searches at once of 2,000 characters (its limit) for 10 s. For each: how long the attack took to be
answered, and the victim's search times meanwhile (median, slowest) against its time alone. Then a
server with --timeout 2 whose attacker may ask 20,000 characters (seconds of e5): when the 408 comes;
and SIGTERM to a server with --timeout 600 with a search blocked on a lock: how long it takes to exit
(uvicorn ends by raising the signal again, hence the exit status -15).

    python benchmarks/serve_attacks.py      # on KGRAG_DSN, or the embedded server; prints a table
"""

from __future__ import annotations

import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from commands import bearer, make_key, run, serving_process
from common import machine, markdown_table, scratch_database

from pgkgrag.db.connections import connect, tenant_transaction

TEXT = "# Harbour log\n\nThe harbour crane was repaired by Lena Ortiz in May, after the storm of April.\n"
ROLE = "kgrag_bench_service"


def question(chars: int) -> str:
    return ("Who repaired the harbour crane, and when was it done? " * (chars // 50 + 1))[:chars]


def prepare(dsn: str) -> dict[str, str]:
    """Tenants victim and attacker (e5), a service role granted kgrag_reader alone, a key each."""
    folder = Path(tempfile.mkdtemp())
    for tenant in ("victim", "attacker"):
        (folder / f"{tenant}.md").write_text(TEXT)
        done = run("ingest", str(folder / f"{tenant}.md"), "--tenant", tenant, "--embedder", "e5", dsn=dsn)
        assert done.returncode == 0, done.stderr
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(ROLE)))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN; GRANT kgrag_reader TO {}").format(*[sql.Identifier(ROLE)] * 2))
    return {tenant: make_key(dsn, tenant, "--tenant", tenant) for tenant in ("victim", "attacker")}


def searching(url: str, key: str) -> Callable[[], float]:
    def one() -> float:
        started = time.perf_counter()
        asked = {"question": "Who repaired the crane?"}
        answered = httpx.post(f"{url}/v1/search", json=asked, headers=bearer(key), timeout=60)
        assert answered.status_code == 200, answered.text
        return (time.perf_counter() - started) * 1000

    return one


def side_by_side(victim: Callable[[], float], attack: Callable[[], str]) -> tuple[str, float, list[float]]:
    """The attack once, the victim's searches in a loop from 1 s before it to 1 s after its answer:
    (what the attacker got, its ms, the victim's ms)."""
    times: list[float] = []
    done = threading.Event()

    def loop() -> None:
        while not done.is_set():
            times.append(victim())

    thread = threading.Thread(target=loop)
    thread.start()
    time.sleep(1)
    started = time.perf_counter()
    got = attack()
    took = (time.perf_counter() - started) * 1000
    time.sleep(1)
    done.set()
    thread.join()
    return got, took, times


def post(url: str, key: str, body: dict[str, object], path: str = "/v1/search") -> Callable[[], str]:
    def send() -> str:
        answered = httpx.post(f"{url}{path}", json=body, headers=bearer(key), timeout=600)
        code = answered.json().get("error", {}).get("code") if answered.status_code != 200 else ""
        return f"{answered.status_code} {code}".strip()

    return send


def flood(url: str, key: str, seconds: float) -> Callable[[], str]:
    def send() -> str:
        statuses: list[int] = []
        deadline = time.monotonic() + seconds

        def one() -> None:
            while time.monotonic() < deadline:
                asked = {"question": question(2000)}
                statuses.append(httpx.post(f"{url}/v1/search", json=asked, headers=bearer(key), timeout=60).status_code)

        threads = [threading.Thread(target=one) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return ", ".join(f"{statuses.count(s)} x {s}" for s in sorted(set(statuses)))

    return send


def blocked(dsn: str) -> bool:
    """Whether a query of the service waits for a lock."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND wait_event_type = 'Lock'", [ROLE]
        ).fetchone()
    return bool(found and found[0])


def main() -> None:
    rows: list[list[object]] = []
    with scratch_database("kgrag_bench_serve_attacks") as dsn:
        keys = prepare(dsn)
        service = make_conninfo(dsn, user=ROLE)
        with serving_process(service, "--key-rate", "100000/minute", "--tenant-rate", "100000/minute") as (url, _):
            victim = searching(url, keys["victim"])
            for _ in range(5):  # the model loaded, the connections opened
                victim()
            alone = [victim() for _ in range(20)]
            rows.append(["(none: the victim alone)", "", "", f"{statistics.median(alone):.0f}", f"{max(alone):.0f}"])
            attacks = [
                ("a 1,000,000-character question", post(url, keys["attacker"], {"question": question(1_000_000)})),
                (
                    "a 20,000-character question (limit 2,000)",
                    post(url, keys["attacker"], {"question": question(20_000)}),
                ),
                (
                    "/v1/embeddings, 2 texts of 30,800 characters",
                    post(url, keys["attacker"], {"model": "e5", "input": ["y" * 30_800] * 2}, "/v1/embeddings"),
                ),
                ("6 searches at once of 2,000 characters, for 10 s", flood(url, keys["attacker"], 10)),
            ]
            for name, attack in attacks:
                got, took, times = side_by_side(victim, attack)
                rows.append([name, got, f"{took:.0f}", f"{statistics.median(times):.0f}", f"{max(times):.0f}"])
        with connect(dsn) as conn, tenant_transaction(conn, "attacker"):
            conn.execute(
                "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('attacker', 'max_question_chars', '20000')"
                " ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value"
            )
        with serving_process(service, "--timeout", "2") as (url, _):
            started = time.perf_counter()
            got = post(url, keys["attacker"], {"question": question(20_000)})()
            rows.append(
                ["20,000 characters allowed, --timeout 2", got, f"{(time.perf_counter() - started) * 1000:.0f}", "", ""]
            )
        with (
            serving_process(service, "--timeout", "600", "--shutdown-timeout", "2") as (url, proc),
            psycopg.connect(dsn) as holder,
        ):
            holder.execute("LOCK TABLE kgrag.chunk IN ACCESS EXCLUSIVE MODE")
            threading.Thread(target=post(url, keys["victim"], {"question": "crane"}), daemon=True).start()
            while not blocked(dsn):
                time.sleep(0.1)
            started = time.perf_counter()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
            exited = (time.perf_counter() - started) * 1000
            rows.append(
                [
                    "SIGTERM, a search blocked on a lock, --timeout 600, --shutdown-timeout 2",
                    f"exit {proc.returncode}",
                    f"{exited:.0f}",
                    "",
                    "",
                ]
            )
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}; DROP ROLE {}").format(*[sql.Identifier(ROLE)] * 2))
    print(machine())
    print(markdown_table(["attack", "attacker got", "answered in ms", "victim's search ms, median", "slowest"], rows))


if __name__ == "__main__":
    main()

"""Retention (revisions 0039 and 0050): kgrag.purge deletes the log and failure rows, and the settled
tickets of the ingestion queue, older than their tenant's settings (within the owner's limits) and
nothing else, for the owner's `pgkgrag purge` and a
tenant's writer alike; and a deleted document's entities, names and chunks leave the query log."""

from __future__ import annotations

import json
from collections.abc import Callable

import psycopg
import pytest
from commands import psql, run
from conftest import as_role

from pgkgrag.db.connections import WRITER, connect, tenant_transaction

AGES = (1, 10, 40, 100, 400)  # days
TABLES = {
    "query_log": "searched_at",
    "answer_log": "answered_at",
    "ingest_failure": "failed_at",
    "log_overflow": "minute",
    "llm_call": "called_at",
    "ingest_ticket": "finished_at",
}
TICKET = (
    "INSERT INTO kgrag.ingest_ticket (tenant_id, ticket, doc_id, payload_md5, bytes, submitted_by, submitted_at,"
    " state, finished_at) VALUES (%s, nextval('kgrag.ingest_ticket_seq'), %s, 'h', 1, 'w', now() - interval '500 days',"
)


def plant(admin: psycopg.Connection, tenant: str) -> None:
    """One row of each table per age (the owner, past the policies, writes what time made)."""
    for days in AGES:
        at = f"now() - interval '{days} days'"
        admin.execute(
            "INSERT INTO kgrag.query_log (tenant_id, route, reason, rows_returned, ms, searched_at)"
            f" VALUES (%s, 'local', 'r', 1, 1, {at})",
            [tenant],
        )
        admin.execute(
            "INSERT INTO kgrag.answer_log (tenant_id, route, not_found, calls, prompt_tokens,"
            " completion_tokens, context_chars, citations, dropped, ms, answered_at)"
            f" VALUES (%s, 'local', false, 1, 1, 1, 1, 1, 0, 1, {at})",
            [tenant],
        )
        admin.execute(
            "INSERT INTO kgrag.ingest_failure (tenant_id, doc_id, content_hash, reason, failed_at)"
            f" VALUES (%s, %s, 'h', 'bad', {at})",
            [tenant, f"d{days}"],
        )
        admin.execute(f"INSERT INTO kgrag.log_overflow (tenant_id, minute, searches) VALUES (%s, {at}, 3)", [tenant])
        admin.execute(
            f"INSERT INTO kgrag.llm_call (tenant_id, purpose, model, called_at) VALUES (%s, 'answer', 'm', {at})",
            [tenant],
        )
        # failed at 100 and 400 days: kept for retry while its failure row is (ingest_failure_days, 365)
        admin.execute(TICKET + f" %s, {at})", [tenant, f"t{days}", "failed" if days >= 100 else "stored"])
    admin.execute(TICKET + " 'queued', NULL)", [tenant, "waiting"])  # submitted long ago, never settled
    admin.commit()


def ages(admin: psycopg.Connection, tenant: str) -> dict[str, list[int]]:
    """The ages (days, rounded) of the rows left, per table."""
    left = {}
    for table, column in TABLES.items():
        rows = admin.execute(
            f"SELECT COALESCE(round(extract(epoch FROM now() - {column}) / 86400)::int, -1) FROM kgrag.{table}"
            " WHERE tenant_id = %s ORDER BY 1",
            [tenant],
        )
        left[table] = [r[0] for r in rows]
    admin.rollback()
    return left


def test_purge_deletes_what_the_settings_say_and_nothing_else(
    dsn: str, admin: psycopg.Connection, login_roles: Callable[[str], str]
) -> None:
    for tenant in ("a", "b"):
        plant(admin, tenant)
    writer = login_roles(WRITER)
    admin.execute("SELECT kgrag.grant_tenant(%s, 'a')", [writer])
    admin.commit()
    with connect(as_role(dsn, writer)) as conn:
        with (  # erasing yesterday's log by a short retention
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="below the floor of 7"),
            tenant_transaction(conn, "a"),
        ):
            conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('a', 'query_log_days', '1')")
        with (  # or of the tickets that say who submitted what
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="below the floor of 7"),
            tenant_transaction(conn, "a"),
        ):
            conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('a', 'ingest_ticket_days', '1')")
        with tenant_transaction(conn, "a"):
            conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('a', 'query_log_days', '30')")
        with tenant_transaction(conn, "a"):  # a's writer purges a alone
            purged = conn.execute("SELECT kgrag.purge()").fetchone()[0]  # type: ignore[index]
    assert purged == {
        "a": {
            "query_log": 3,
            "log_overflow": 3,
            "answer_log": 2,
            "llm_call": 2,
            "ingest_failure": 1,
            "ingest_ticket": 2,
        }
    }
    assert ages(admin, "a") == {
        "query_log": [1, 10],
        "answer_log": [1, 10, 40],
        "ingest_failure": [1, 10, 40, 100],
        "log_overflow": [1, 10],
        "llm_call": [1, 10, 40],
        "ingest_ticket": [-1, 1, 10, 100],  # the waiting ticket (no finished_at) stays, and the failed one
    }
    assert ages(admin, "b") == {
        **{table: list(AGES) for table in TABLES},
        "ingest_ticket": [-1, *AGES],
    }
    out = run("purge", "--json", dsn=dsn)  # the owner: every tenant (what a nightly job runs)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "a": {
            "query_log": 0,
            "log_overflow": 0,
            "answer_log": 0,
            "llm_call": 0,
            "ingest_failure": 0,
            "ingest_ticket": 0,
        },
        "b": {
            "query_log": 2,
            "log_overflow": 2,
            "answer_log": 2,
            "llm_call": 2,
            "ingest_failure": 1,
            "ingest_ticket": 2,
        },
    }
    assert ages(admin, "b") == {
        "query_log": [1, 10, 40],
        "answer_log": [1, 10, 40],
        "ingest_failure": [1, 10, 40, 100],
        "log_overflow": [1, 10, 40],
        "llm_call": [1, 10, 40],
        "ingest_ticket": [-1, 1, 10, 100],
    }
    again = run("purge", dsn=dsn)
    assert again.returncode == 0 and "a: deleted answer_log 0" in again.stdout, again.stdout
    plant(admin, "c")  # what docs/operator.md has a nightly pg_cron job run, through psql
    nightly = psql(dsn, "-c", "DO $$ BEGIN PERFORM kgrag.use_tenant('*'); PERFORM kgrag.purge(); END $$")
    assert nightly.returncode == 0, nightly.stderr
    assert ages(admin, "c")["query_log"] == [1, 10, 40]

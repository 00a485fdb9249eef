"""Limits a tenant cannot lift and logs it cannot erase or flood (revision 0039), tried by an
attacker holding kgrag_writer (or kgrag_reader) and one tenant: settings above the owner's
ceilings, question text logging turned on, the query log turned off, log rows deleted, updated or
forged, and the log flooded through the logging function."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

from pgkgrag.db.connections import READER, WRITER, connect, tenant_transaction

SET = (
    "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('a', %s, %s::jsonb)"
    " ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value"
)
LOG = "SELECT kgrag_private.log_search('local', 'x', NULL, 1, 1, 1, false, NULL, NULL, NULL, NULL, NULL)"


def test_a_writer_cannot_lift_a_ceiling(login: Callable[..., str]) -> None:
    with connect(login(WRITER, "a")) as conn:
        for key, value, refusal in (
            ("max_question_chars", "10000000", r"max_question_chars = 10000000 is above the ceiling of 20000"),
            ("search_timeout_ms", "600000", r"search_timeout_ms = 600000 is above the ceiling of 30000"),
            ("log_question_text", "true", r"may not set log_question_text to true: the schema owner allows \[false\]"),
            ("query_log", "false", r"may not set query_log to false"),
            ("log_rate_per_minute", "0", r"log_rate_per_minute = 0 is below the floor of 1"),
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match=refusal), tenant_transaction(conn, "a"):
                conn.execute(SET, [key, value])
        with (
            pytest.raises(psycopg.errors.InvalidParameterValue, match="max_hops takes a number"),
            tenant_transaction(conn, "a"),
        ):
            conn.execute(SET, ["max_hops", '"50"'])
        with tenant_transaction(conn, "a"):  # within the ceiling: the tenant's to tune
            conn.execute(SET, ["max_question_chars", "15000"])
            assert conn.execute("SELECT kgrag.setting('max_question_chars')::int").fetchone() == (15000,)
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="above the ceiling"),
            tenant_transaction(conn, "a"),
        ):
            conn.execute("UPDATE kgrag.settings SET value = '10000000' WHERE key = 'max_question_chars'")
        with tenant_transaction(conn, "a"):
            assert conn.execute("SELECT kgrag.setting('max_question_chars')::int").fetchone() == (15000,)


def test_the_log_keeps_what_the_owner_says_whatever_the_caller_passes(
    login: Callable[..., str], admin: psycopg.Connection
) -> None:
    """Question text reaches the log only where the owner allows it, even through the logging
    function called directly; a search cannot switch its own logging off; a number that is not
    whole (30.0 days, 600.0 a minute) is read as whole; a deleted name is redacted as a word only."""
    with tenant_transaction(admin, "*"):
        admin.execute(
            "UPDATE kgrag.settings SET value = jsonb_set(value, '{search_seeds,max}', '10')"
            " WHERE tenant_id = '*' AND key = 'setting_limits'"
        )
    with connect(login(READER, "a")) as conn:
        with tenant_transaction(conn, "a"):
            conn.execute(
                "SELECT kgrag_private.log_search('local', 'x', NULL, 1, 1, 1, false,"
                " 'the salary of Grace Park', NULL, NULL, NULL, NULL)"
            )
            assert conn.execute("SELECT question FROM kgrag.query_log").fetchall() == [(None,)]
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="keeps the query log on"),
            tenant_transaction(conn, "a"),
        ):
            conn.execute("SELECT * FROM kgrag.kgrag_search(NULL, 'vector', 'anything', options => '{\"log\": false}')")
        with (
            pytest.raises(psycopg.errors.InvalidParameterValue, match="option seeds = 50 is beyond the limit of 10"),
            tenant_transaction(conn, "a"),
        ):  # a call's options stay within the owner's ceilings too (here lowered to 10)
            conn.execute("SELECT * FROM kgrag.kgrag_search(NULL, 'vector', 'anything', options => '{\"seeds\": 50}')")
        with (
            pytest.raises(psycopg.errors.InvalidParameterValue, match='option seeds = "50" is beyond the limit'),
            tenant_transaction(conn, "a"),
        ):  # a number written as a string is the number it is used as
            conn.execute(
                "SELECT * FROM kgrag.kgrag_search(NULL, 'vector', 'anything', options => '{\"seeds\": \"50\"}')"
            )
        with tenant_transaction(conn, "a"):  # within the ceiling, as a string or not
            for seeds in ("10", '"10"'):
                options = conn.execute("SELECT kgrag_private.search_options(%s)", [f'{{"seeds": {seeds}}}']).fetchone()
                assert options is not None and int(options[0]["seeds"]) == 10
        with tenant_transaction(conn, "a"):
            redacted = conn.execute(
                "SELECT kgrag_private.redact('It is with IT, not with item: it.', ARRAY['it', 'with it'])"
            ).fetchone()
            assert redacted == ("[forgotten] is [forgotten], not with item: [forgotten].",)  # whole words only
    with connect(login(WRITER, "a")) as conn:
        with tenant_transaction(conn, "a"):
            conn.execute(SET, ["log_rate_per_minute", "600.0"])
            conn.execute(SET, ["query_log_days", "30.0"])
        with tenant_transaction(conn, "a"):
            conn.execute(LOG)  # logged: the rate is read as 600
            assert conn.execute("SELECT count(*) FROM kgrag.query_log").fetchone() == (2,)
            (purged,) = conn.execute("SELECT kgrag.purge()").fetchone()  # type: ignore[misc]
            assert purged["a"]["query_log"] == 0 and set(purged["a"].values()) == {0}  # the retention as 30 days


def test_a_setting_above_a_ceiling_lowered_since_is_read_clamped(
    login: Callable[..., str], admin: psycopg.Connection
) -> None:
    with connect(login(WRITER, "a")) as conn, tenant_transaction(conn, "a"):
        conn.execute(SET, ["max_question_chars", "15000"])
    with tenant_transaction(admin, "*"):  # the owner lowers the ceiling below what tenant a set
        admin.execute(
            "UPDATE kgrag.settings SET value = jsonb_set(value, '{max_question_chars,max}', '3000')"
            " WHERE key = 'setting_limits'"
        )
    with connect(login(READER, "a")) as reader, tenant_transaction(reader, "a"):
        assert reader.execute("SELECT kgrag.setting('max_question_chars')::int").fetchone() == (3000,)
        in_force = reader.execute(
            "SELECT own_value::int, in_force::int, limited FROM kgrag.settings_in_force"
            " WHERE key = 'max_question_chars'"
        )
        assert in_force.fetchone() == (15000, 3000, True)
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="above the limit of 3000"):
            reader.execute("SELECT kgrag_private.check_question(%s)", ["x" * 5000])


@pytest.mark.parametrize("granted", [READER, WRITER])
def test_the_logs_are_not_the_tenants_to_erase_or_forge(
    login: Callable[..., str], admin: psycopg.Connection, granted: str
) -> None:
    with connect(login(granted, "a")) as conn:
        with tenant_transaction(conn, "a"):
            conn.execute(LOG)
        for statement in (
            "DELETE FROM kgrag.query_log",
            "UPDATE kgrag.query_log SET reason = 'forged'",
            "INSERT INTO kgrag.query_log (tenant_id, route, reason, rows_returned, ms)"
            " VALUES ('a', 'local', 'forged', 0, 0)",
            "DELETE FROM kgrag.answer_log",
            "UPDATE kgrag.answer_log SET route = 'forged'",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), tenant_transaction(conn, "a"):
                conn.execute(statement)
    with tenant_transaction(admin, "a"):
        assert admin.execute("SELECT count(*), min(reason) FROM kgrag.query_log WHERE tenant_id = 'a'").fetchone() == (
            1,
            "x",
        )


def test_a_reader_cannot_flood_the_log(login: Callable[..., str], admin: psycopg.Connection) -> None:
    """Beyond the tenant's log_rate_per_minute, a search is counted for its minute, not logged:
    1,000 calls of the logging function leave the rate's rows and the rest counted."""
    with tenant_transaction(admin, "a"):
        admin.execute(SET, ["log_rate_per_minute", "50"])
    with connect(login(READER, "a")) as conn:
        with tenant_transaction(conn, "a"):
            for _ in range(1000):
                conn.execute(LOG)
        with tenant_transaction(conn, "a"):
            logged = conn.execute("SELECT count(*) FROM kgrag.query_log").fetchone()
            counted = conn.execute("SELECT sum(searches)::int FROM kgrag.log_overflow").fetchone()
    assert (logged, counted) == ((50,), (950,))
    with tenant_transaction(admin, "a"):  # another tenant's rate is its own
        assert admin.execute("SELECT count(*) FROM kgrag.log_overflow WHERE tenant_id <> 'a'").fetchone() == (0,)

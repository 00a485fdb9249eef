"""Errors a user can act on, and the one way they are told: the CLI prints one clear message (never
a traceback), the HTTP service answers with the same words.

A database error keeps the words PostgreSQL gave it (the primary message and its hint: the rules
live in SQL, and so do their explanations); a lost connection says what to do.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

LOST_CONNECTION_HINT = (
    "the connection to PostgreSQL was lost. Nothing is half-written: every ingestion batch is one"
    " transaction. Run the same command again; documents already stored are skipped."
)


class KgragError(Exception):
    """A problem with the user's input, configuration or environment, with what to do about it."""


@dataclass(frozen=True)
class Problem:
    """What went wrong, in the words a user reads: the message, a hint when there is one, and the
    SQLSTATE when the database refused."""

    message: str
    hint: str | None = None
    sqlstate: str | None = None

    def text(self) -> str:
        return self.message + (f"\nhint: {self.hint}" if self.hint else "")


def _connection_lost(exc: psycopg.Error) -> bool:
    """The server went away (crash, shutdown, terminated backend), not a query error."""
    state = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError)
    return state.startswith("08") or state in ("57P01", "57P02", "57P03")


def describe(exc: BaseException) -> Problem:
    """The problem an exception stands for. A database error wrapped by SQLAlchemy (Alembic's
    connection) is read as the psycopg error inside it."""
    orig = getattr(exc, "orig", None)
    if isinstance(orig, psycopg.Error):
        exc = orig
    if not isinstance(exc, psycopg.Error):
        return Problem(str(exc))
    diag = exc.diag
    message = diag.message_primary or str(exc).strip().splitlines()[0]
    hint = diag.message_hint or (LOST_CONNECTION_HINT if _connection_lost(exc) else None)
    return Problem(message, hint, exc.sqlstate)

"""One request's work in a worker thread, within its deadline: as the request's coroutine stops it
(past the deadline, its client gone, the server stopping), the query running is cancelled and the
work ends at its next step; the embedder it uses checks before and after its turn; the work's
errors come back as the client gets them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg

from pgkgrag.embed.embedders import Embedder, Vectors
from pgkgrag.errors import KgragError, describe
from pgkgrag.serve.admission import Admission
from pgkgrag.serve.errors import ApiError, from_database

log = logging.getLogger("pgkgrag.serve")
T = TypeVar("T")
Disconnected = Callable[[], Awaitable[bool]]  # whether the client went away


class Stopped(Exception):
    """The request was stopped (past its deadline, its client gone, the server stopping): its work
    ends here and its transaction is rolled back."""


class Call:
    """One request's work in its thread, as the request's coroutine stops it: stop() cancels the
    query running on the call's connection and makes the work end at its next check(); once the
    work commits, it is no longer stopped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: psycopg.Connection | None = None
        self._stopped = False
        self._committing = False

    @contextmanager
    def holding(self, conn: psycopg.Connection) -> Iterator[None]:
        """The connection the work runs on, within the block: the one stop() cancels the query of."""
        with self._lock:
            self._conn = conn
        try:
            self.check()
            yield
        finally:
            with self._lock:
                self._conn = None

    def check(self) -> None:
        with self._lock:
            if self._stopped:
                raise Stopped

    def commit(self) -> None:
        """Say the work's transaction commits now (Stopped if the work was stopped before)."""
        with self._lock:
            if self._stopped:
                raise Stopped
            self._committing = True

    def stop(self) -> bool:
        """Stop the work; False when it is committing already (its result is on its way)."""
        with self._lock:
            if self._committing:
                return False
            self._stopped = True
            if self._conn is not None:
                # from the event loop: briefly, and a cancel that does not reach the server leaves
                # the work to stop at its next check
                with contextlib.suppress(psycopg.OperationalError):
                    self._conn.cancel_safe(timeout=1)
            return True


class Watched:
    """An embedder that embeds in its requester's turn, and checks its call before and after: a
    request stopped while its question waited or was embedded goes no further."""

    def __init__(self, inner: Embedder, call: Call, turn: threading.Lock) -> None:
        self.name, self.dim = inner.name, inner.dim
        self._inner, self._call, self._turn = inner, call, turn

    def embed(self, texts: list[str]) -> Vectors:
        with self._turn:
            self._call.check()
            vectors = self._inner.embed(texts)
        self._call.check()
        return vectors

    def embed_queries(self, texts: list[str]) -> Vectors:
        with self._turn:
            self._call.check()
            vectors = self._inner.embed_queries(texts)
        self._call.check()
        return vectors


async def in_time(
    call: Call,
    deadline: float,
    disconnected: Disconnected | None,
    work: Callable[[], T],
    admission: Admission,
    counted_as: str | None,
    timeout_s: float,
) -> T:
    """work() in a worker thread, stopped past the deadline (408), when the client goes away
    (499) or when this coroutine is cancelled (the server stops); counted among the requests in
    progress of counted_as until the thread ends (429 when they are as many as allowed)."""
    if counted_as is not None:
        admission.begin(counted_as)
    running = asyncio.ensure_future(asyncio.to_thread(work))
    running.add_done_callback(lambda done: _ended(admission, counted_as, done))
    try:
        while not running.done():
            await asyncio.wait({running}, timeout=0.05)
            if running.done():
                break
            if time.monotonic() > deadline:
                why = ApiError(408, f"the request ran past this server's {timeout_s:g} s", code="timeout")
            elif disconnected is not None and await disconnected():
                why = ApiError(499, "the client went away", code="client_closed")
            else:
                continue
            if call.stop():
                raise why
            await asyncio.wait({running})  # it was committing: its result is on its way
    except asyncio.CancelledError:
        call.stop()
        raise
    return _result(running)


def _ended(admission: Admission, who: str | None, done: asyncio.Future[Any]) -> None:
    if who is not None:
        admission.end(who)
    if not done.cancelled():
        done.exception()  # retrieved: the error of a stopped request's work is expected


def _result(done: asyncio.Future[T]) -> T:
    """The result of a request's work, its errors as the client gets them."""
    try:
        return done.result()
    except psycopg.Error as exc:
        error = from_database(exc)
        if error.status == 500:
            log.error("database error: %s", describe(exc).text())
        raise error from exc
    except KgragError as exc:
        raise ApiError(400, str(exc)) from exc

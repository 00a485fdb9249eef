"""What the service holds for its calls: fixed sets of database connections (as kgrag_reader, and a
few as kgrag_writer for the documents submitted) and
the embedders it has loaded, one per name, whose calls take turns (each model's apart, so that a
slow model's queue does not hold up another's)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from pgkgrag.db.connections import READER, connect_app
from pgkgrag.embed.embedders import EMBEDDERS, Embedder, Vectors, get_embedder
from pgkgrag.errors import KgragError
from pgkgrag.serve import telemetry
from pgkgrag.serve.errors import ApiError

SERVED = tuple(name for name in EMBEDDERS if name != "openai")  # an openai tenant embeds at its own endpoint


class Models:
    """The embedders this server has loaded, one per name, for the database's dimension; one call
    of a model at a time (each uses every core anyway)."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._loaded: dict[str, _Locked] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Embedder:
        if name not in SERVED:
            raise ApiError(
                404,
                f"The model {name!r} does not exist here: this server embeds with {', '.join(SERVED)} "
                "(a tenant's model is SELECT kgrag.setting('embedder'))",
                "model",
                "model_not_found",
            )
        with self._lock:
            if name not in self._loaded:
                try:
                    self._loaded[name] = _Locked(get_embedder(name, self.dimension))
                except KgragError as exc:
                    raise ApiError(400, str(exc), "model", "model_not_usable") from exc
            return self._loaded[name]


class _Turns:
    """A lock taken in the order it was asked for. threading.Lock promises no order, so one
    tenant's stream of calls could keep another's waiting for as long as it lasts; in turn, a call
    waits at most for the calls asked before it, of which each tenant has no more than its requests
    in progress (--concurrent-per-tenant)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._asked = self._served = 0

    def __enter__(self) -> None:
        with self._changed:
            turn, self._asked = self._asked, self._asked + 1
            self._changed.wait_for(lambda: self._served == turn)

    def __exit__(self, *_: object) -> None:
        with self._changed:
            self._served += 1
            self._changed.notify_all()


class _Locked:
    """An embedder whose calls take turns."""

    def __init__(self, inner: Embedder) -> None:
        self.name, self.dim = inner.name, inner.dim
        self._inner, self._lock = inner, _Turns()

    def embed(self, texts: list[str]) -> Vectors:
        with self._lock, telemetry.span("kgrag.embed", {"kgrag.embedder": self.name, "kgrag.texts": len(texts)}):
            return self._inner.embed(texts)

    def embed_queries(self, texts: list[str]) -> Vectors:
        with self._lock, telemetry.span("kgrag.embed", {"kgrag.embedder": self.name, "kgrag.texts": len(texts)}):
            return self._inner.embed_queries(texts)


class Connections:
    """A fixed set of connections as one role (kgrag_reader by default); a call waits for one until
    its deadline."""

    def __init__(self, dsn: str, size: int, role: str = READER) -> None:
        self._dsn = dsn
        self._role = role
        self._idle: queue.Queue[psycopg.Connection | None] = queue.Queue()
        for _ in range(size):
            self._idle.put(None)  # opened at first use

    @contextmanager
    def take(self, wait_s: float) -> Iterator[psycopg.Connection]:
        try:
            conn = self._idle.get(timeout=wait_s)
        except queue.Empty:
            raise ApiError(
                503, "every database connection of this server is busy: try again", code="server_busy"
            ) from None
        try:
            if conn is None or conn.closed or conn.broken:
                conn = _connected(self._dsn, self._role)
            yield conn
        finally:
            self._idle.put(conn)


def _connected(dsn: str, role: str) -> psycopg.Connection:
    try:
        return connect_app(dsn, role)
    except KgragError as exc:  # the database cannot be reached, or its schema is not this version's
        raise ApiError(503, str(exc), code="database_unavailable") from exc

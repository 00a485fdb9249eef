"""What `pgkgrag serve` does for a caller, whatever the door (HTTP or MCP): the caller's tenant from
its API key, the limits, and the calls to SQL on a pooled connection that the database checks.

The key decides the tenant, and the database checks it: every transaction of a request names its
tenant with kgrag.use_key (pgkgrag.db.connections.acting_with_key), so a key of tenant a cannot act
for tenant b even through a bug here, when the service's login role holds no tenant grant of its own
(README, "Running the service").

Limits, all checked before the work they bound: a key's form; requests per key and per tenant in a
moving window (the `limits` library); requests in progress per tenant (per key for embeddings) and
answers in progress per tenant; a question's length (the server's ceiling, then the tenant's setting
and the search options, in SQL) before it is embedded. A request's work runs in a thread, in one
transaction, within a deadline: past it, or when the client goes away or the server stops, the query
running is cancelled, the work ends at its next step and the transaction, its logs with it, is
rolled back.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import psycopg

from pgkgrag.db.connections import READER, acting_with_key, connect_app, tenant_transaction
from pgkgrag.embed.embedders import Embedder, Vectors
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.errors import KgragError, describe
from pgkgrag.extras import missing
from pgkgrag.graph.entities import EntityCard, entity_card
from pgkgrag.graph.picture import neighbourhood
from pgkgrag.queries import Q
from pgkgrag.retrieval.results import SearchResult
from pgkgrag.retrieval.search import context, run_search
from pgkgrag.serve import telemetry
from pgkgrag.serve.errors import ApiError, from_database, too_many
from pgkgrag.serve.pool import Connections, Models

try:
    from limits import RateLimitItem, parse
    from limits.storage import MemoryStorage
    from limits.strategies import MovingWindowRateLimiter
except ImportError as exc:
    raise missing("server") from exc

if TYPE_CHECKING:
    from pgkgrag.llm.answers import Answer
    from pgkgrag.llm.client import OpenAICompatibleClient

log = logging.getLogger("pgkgrag.serve")
T = TypeVar("T")
Disconnected = Callable[[], Awaitable[bool]]  # whether the client went away
RouteName = Literal["auto", "local", "global", "mixed", "vector"]  # kgrag.routes() and auto
KEY_FORM = re.compile(r"kgk_[0-9a-f]{64}")  # as kgrag.create_key makes keys


@dataclass(frozen=True)
class Limits:
    """The service's limits: rates as the `limits` library parses them ("60/minute")."""

    key_rate: str = "120/minute"
    tenant_rate: str = "600/minute"
    answers_per_tenant: int = 2  # LLM answers in progress at once
    in_progress_per_tenant: int = 2  # requests in progress at once (per key for embeddings)
    timeout_s: float = 30.0  # per request, its embedding included; then its work is cancelled (408)
    connections: int = 4
    max_body_bytes: int = 4 * 1024 * 1024
    max_question_chars: int = 20_000  # the owner's ceiling on max_question_chars, which SQL checks
    max_inputs: int = 128  # texts per embeddings request
    max_input_chars: int = 8192  # characters per text
    max_embedding_chars: int = 32_768  # characters per embeddings request


@dataclass(frozen=True)
class Caller:
    """Who calls: the key (kept only to name transactions' tenants; None: the login role's own
    grant, as `pgkgrag mcp` over stdio acts), an id for limits and logs (a hash prefix, never the
    key), the tenant the database said it acts for, and when its request must be done by
    (time.monotonic(): the key's check and the work share one --timeout)."""

    key: str | None
    key_id: str
    tenant: str
    deadline: float

    def attributes(self, **more: str | int) -> dict[str, str | int]:
        """A span's attributes: the tenant, the key's id (never the key) and more, named kgrag.*."""
        return {"kgrag.tenant": self.tenant, "kgrag.key": self.key_id, **{f"kgrag.{k}": v for k, v in more.items()}}


def check_rate(rate: str, option: str) -> str:
    """A rate as the `limits` library takes it ("60/minute"), or a clear error."""
    try:
        parse(rate)
    except ValueError as exc:
        raise KgragError(f"{option} {rate!r}: give N/second, N/minute or N/hour (e.g. 60/minute)") from exc
    return rate


def key_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def _key(authorization: str | None) -> str:
    """The API key of an Authorization header, if it has a key's form (kgk_ and 64 hex digits, as
    kgrag.create_key makes them); 401 otherwise, before any work."""
    scheme, _, key = (authorization or "").partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise ApiError(
            401, "an API key is required: Authorization: Bearer KEY (pgkgrag keys create)", code="invalid_api_key"
        )
    if not KEY_FORM.fullmatch(key):
        raise ApiError(401, "the API key is not valid: a key is kgk_ and 64 hex digits", code="invalid_api_key")
    return key


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


class _Watched:
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


class Service:
    def __init__(self, dsn: str, limits: Limits, llm: OpenAICompatibleClient | None = None) -> None:
        self.limits = limits
        self.connections = Connections(dsn, limits.connections)
        with connect_app(dsn, READER) as conn:
            row = conn.execute(Q["columns_dimension"]).fetchone()
        assert row is not None
        self.models = Models(int(row[0]))
        self._rates = MovingWindowRateLimiter(MemoryStorage())
        self._key_rate: RateLimitItem = parse(limits.key_rate)
        self._tenant_rate: RateLimitItem = parse(limits.tenant_rate)
        self._in_progress: dict[str, int] = {}  # by "tenant T" or "key ID": requests whose work runs
        self._answering: dict[str, threading.BoundedSemaphore] = {}
        self._turns: dict[str, threading.Lock] = {}  # by "tenant T" or "key ID": its turn to embed
        self._lock = threading.Lock()  # for the dicts above and the LLM client
        self._llm = llm

    # -- who calls ---------------------------------------------------------------------------

    async def caller(self, authorization: str | None, tenant: str | None, *, counted: bool = True) -> Caller:
        """The caller of a request: its key checked by the database, for the tenant it names (or
        the key's only tenant); 401 without a valid key, 403 for a tenant the key may not act for,
        429 past a rate (counted: False for a call inside a request already counted, an MCP tool's)."""
        deadline = time.monotonic() + self.limits.timeout_s
        key = _key(authorization)
        ident = key_id(key)
        if counted and not self._rates.hit(self._key_rate, "key", ident):
            raise too_many(
                f"this key made more than {self.limits.key_rate} requests",
                "rate_limit_exceeded",
                self._retry_after(self._key_rate, "key", ident),
            )

        def check(conn: psycopg.Connection, _: Call) -> str:
            row = conn.execute(Q["use_key"], [key, tenant]).fetchone()
            assert row is not None
            return str(row[0])

        acting = await self.run(None, None, check)
        if counted and not self._rates.hit(self._tenant_rate, "tenant", acting):
            raise too_many(
                f"tenant {acting} made more than {self.limits.tenant_rate} requests",
                "rate_limit_exceeded",
                self._retry_after(self._tenant_rate, "tenant", acting),
            )
        return Caller(key, ident, acting, deadline)

    def _retry_after(self, rate: RateLimitItem, *identifiers: str) -> float:
        """Seconds until the rate's window lets one more request in."""
        return self._rates.get_window_stats(rate, *identifiers).reset_time - time.time()

    async def key_holder(self, authorization: str | None) -> str:
        """The id of a valid key (401 otherwise), whatever its tenants: for what no tenant owns."""
        try:
            return (await self.caller(authorization, None)).key_id
        except ApiError as exc:
            if exc.status == 400:  # a valid key of several tenants, none named
                return key_id(_key(authorization))
            raise

    # -- running a call ----------------------------------------------------------------------

    async def run(
        self,
        caller: Caller | None,
        disconnected: Disconnected | None,
        work: Callable[[psycopg.Connection, Call], T],
        *,
        counted_as: str | None = None,
    ) -> T:
        """work(conn, call) on a pooled connection in a worker thread, in one transaction, under
        the caller's key, by the caller's deadline (counted_as: among the requests in progress of whom)."""
        deadline = caller.deadline if caller else time.monotonic() + self.limits.timeout_s
        call = Call()

        def in_thread() -> T:
            with (
                self.connections.take(max(0.0, deadline - time.monotonic())) as conn,
                call.holding(conn),
                acting_with_key(caller.key) if caller and caller.key else contextlib.nullcontext(),
                conn.transaction(),
            ):
                result = work(conn, call)
                call.commit()
            return result

        return await self._in_time(call, deadline, disconnected, in_thread, counted_as)

    async def _in_time(
        self,
        call: Call,
        deadline: float,
        disconnected: Disconnected | None,
        work: Callable[[], T],
        counted_as: str | None,
    ) -> T:
        """work() in a worker thread, stopped past the deadline (408), when the client goes away
        (499) or when this coroutine is cancelled (the server stops); counted among the requests in
        progress of counted_as until the thread ends (429 when they are as many as allowed)."""
        if counted_as is not None:
            self._begin(counted_as)
        running = asyncio.ensure_future(asyncio.to_thread(work))
        running.add_done_callback(lambda done: self._end(counted_as, done))
        try:
            while not running.done():
                await asyncio.wait({running}, timeout=0.05)
                if running.done():
                    break
                if time.monotonic() > deadline:
                    why = ApiError(
                        408, f"the request ran past this server's {self.limits.timeout_s:g} s", code="timeout"
                    )
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

    def _begin(self, who: str) -> None:
        if self._in_progress.get(who, 0) >= self.limits.in_progress_per_tenant:
            raise too_many(
                f"{who} has {self.limits.in_progress_per_tenant} requests in progress already",
                "too_many_in_progress",
                1,
            )
        self._in_progress[who] = self._in_progress.get(who, 0) + 1

    def _end(self, who: str | None, done: asyncio.Future[Any]) -> None:
        if who is not None:
            self._in_progress[who] -= 1
            if not self._in_progress[who]:
                del self._in_progress[who]
        if not done.cancelled():
            done.exception()  # retrieved: the error of a stopped request's work is expected

    # -- the calls -----------------------------------------------------------------------------

    async def _about(
        self,
        caller: Caller,
        disconnected: Disconnected | None,
        question: str,
        options: dict[str, Any],
        work: Callable[[psycopg.Connection, Embedder], T],
    ) -> T:
        """work(conn, embedder) for a question, once its length and the options were checked, all
        before it is embedded: against the server's ceiling here, then, in the request's
        transaction, against the tenant's setting max_question_chars and as kgrag_search checks
        its options."""
        if len(question) > self.limits.max_question_chars:
            raise ApiError(
                400,
                f"the question is {len(question)} characters long, above this server's limit of "
                f"{self.limits.max_question_chars}",
                "question",
                "question_too_long",
            )

        who = f"tenant {caller.tenant}"

        def checked(conn: psycopg.Connection, call: Call) -> T:
            with tenant_transaction(conn, caller.tenant):
                try:
                    conn.execute(Q["check_question"], [question])
                except psycopg.errors.InvalidParameterValue as exc:
                    raise ApiError(400, describe(exc).message, "question", "question_too_long") from exc
                try:
                    conn.execute(Q["check_search_options"], [json.dumps(options)])
                except psycopg.errors.InvalidParameterValue as exc:
                    raise ApiError(400, describe(exc).message, "options", "invalid_value") from exc
            return work(conn, _Watched(self.embedder_of(conn, caller.tenant), call, self._turn(who)))

        return await self.run(caller, disconnected, checked, counted_as=who)

    async def search(
        self,
        caller: Caller,
        disconnected: Disconnected | None,
        question: str,
        route: str,
        k: int,
        options: dict[str, Any],
    ) -> SearchResult:
        def work(conn: psycopg.Connection, embedder: Embedder) -> SearchResult:
            with telemetry.span("kgrag.search", caller.attributes(route_asked=route, k=k)) as current:
                found = run_search(conn, caller.tenant, embedder, question, route, k, options)
                current.set_attribute("kgrag.route", found.route)
                current.set_attribute("kgrag.chunks", found.chunks()[:50])
                return found

        return await self._about(caller, disconnected, question, options, work)

    async def context(
        self,
        caller: Caller,
        disconnected: Disconnected | None,
        question: str,
        route: str,
        k: int,
        max_chars: int,
        options: dict[str, Any],
    ) -> str:
        def work(conn: psycopg.Connection, embedder: Embedder) -> str:
            with telemetry.span("kgrag.context", caller.attributes(route_asked=route, k=k)):
                return context(conn, caller.tenant, embedder, question, route, k, max_chars, options)

        return await self._about(caller, disconnected, question, options, work)

    async def ask(
        self,
        caller: Caller,
        disconnected: Disconnected | None,
        question: str,
        route: str,
        k: int,
        options: dict[str, Any],
    ) -> Answer:
        from pgkgrag.llm.answers import AskFailed, ask

        llm = self.chat()

        def work(conn: psycopg.Connection, embedder: Embedder) -> Answer:
            with (
                self.answering(caller.tenant),
                telemetry.span("kgrag.ask", caller.attributes(route_asked=route, k=k)) as current,
            ):
                try:
                    answer = ask(conn, caller.tenant, embedder, llm, question, route, k, options)
                except AskFailed as exc:
                    raise ApiError(502, str(exc), code="llm_failed") from exc
                current.set_attribute("kgrag.route", answer.route)
                current.set_attribute("kgrag.llm_calls", answer.cost.calls)
                current.set_attribute("kgrag.prompt_tokens", answer.cost.prompt_tokens)
                current.set_attribute("kgrag.completion_tokens", answer.cost.completion_tokens)
                current.set_attribute("kgrag.model", llm.settings.model)
                return answer

        return await self._about(caller, disconnected, question, options, work)

    async def entity(self, caller: Caller, disconnected: Disconnected | None, name: str) -> EntityCard:
        return await self.run(
            caller,
            disconnected,
            lambda conn, _: entity_card(conn, caller.tenant, name),
            counted_as=f"tenant {caller.tenant}",
        )

    async def neighbourhood(
        self,
        caller: Caller,
        disconnected: Disconnected | None,
        seed: str,
        hops: int,
        degree_cap: int | None,
        direction: str,
    ) -> dict[str, Any]:
        def work(conn: psycopg.Connection, _: Call) -> dict[str, Any]:
            nodes, edges = neighbourhood(conn, caller.tenant, seed, hops, degree_cap, None, direction)
            return {"nodes": [dataclasses.asdict(n) for n in nodes], "edges": [dataclasses.asdict(e) for e in edges]}

        return await self.run(caller, disconnected, work, counted_as=f"tenant {caller.tenant}")

    async def embedding(
        self, holder: str, disconnected: Disconnected | None, model: str, texts: list[str], queries: bool
    ) -> np.ndarray:
        """The texts embedded with the model, for the key of id holder, within the deadline."""
        embedder = self.models.get(model)  # 404 for a model this server does not serve, before the thread
        who, call = f"key {holder}", Call()
        watched = _Watched(embedder, call, self._turn(who))
        work = watched.embed_queries if queries else watched.embed
        deadline = time.monotonic() + self.limits.timeout_s
        vectors = await self._in_time(call, deadline, disconnected, lambda: work(texts), who)
        return np.asarray(vectors, dtype=np.float32)

    def _turn(self, who: str) -> threading.Lock:
        """The requester's turn to embed: a tenant (or a key) has one embedding waiting for a model
        at a time, and a model serves its callers in the order they came (pgkgrag.serve.pool), so a
        tenant's flood keeps another tenant's question waiting for one of its embeddings at most."""
        with self._lock:
            return self._turns.setdefault(who, threading.Lock())

    def embedder_of(self, conn: psycopg.Connection, tenant: str) -> Embedder:
        return tenant_embedder(conn, tenant, load=lambda name, _: self.models.get(name))

    # -- answering with an LLM ---------------------------------------------------------------

    def chat(self) -> OpenAICompatibleClient:
        """The LLM client, made once from KGRAG_LLM_*; 503 when this server has none."""
        from pgkgrag.llm.client import LlmSettings, OpenAICompatibleClient

        with self._lock:
            if self._llm is None:
                try:
                    self._llm = OpenAICompatibleClient(LlmSettings.from_env())
                except KgragError as exc:
                    raise ApiError(503, f"this server answers with no LLM: {exc}", code="llm_not_configured") from exc
            return self._llm

    @contextmanager
    def answering(self, tenant: str) -> Iterator[None]:
        """A slot among the tenant's answers in progress (429 when none is free)."""
        with self._lock:
            slots = self._answering.setdefault(tenant, threading.BoundedSemaphore(self.limits.answers_per_tenant))
        if not slots.acquire(blocking=False):
            raise too_many(
                f"tenant {tenant} has {self.limits.answers_per_tenant} answers in progress already",
                "too_many_in_progress",
                1,
            )
        try:
            yield
        finally:
            slots.release()

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()


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

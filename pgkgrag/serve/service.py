"""What `pgkgrag serve` does for a caller, whatever the door (HTTP or MCP): the caller's tenant from
its API key, the limits, and the calls to SQL on a pooled connection that the database checks.

The key decides the tenant, and the database checks it: every transaction of a request names its
tenant with kgrag.use_key (pgkgrag.db.connections.acting_with_key), so a key of tenant a cannot act
for tenant b even through a bug here, when the service's login role holds no tenant grant of its own
(README, "Running the service"). Limits: a key's form; requests per key and per tenant in a moving
window (the `limits` library); answers in progress per tenant; a question's length (the server's
ceiling, then the tenant's setting and the search options, in SQL) before it is embedded; and a
deadline per call after which the query is cancelled; a call whose client went away is cancelled too.
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
from pgkgrag.embed.embedders import Embedder
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
    timeout_s: float = 30.0  # per call, then the query is cancelled (408)
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
    key), and the tenant the database said it acts for."""

    key: str | None
    key_id: str
    tenant: str

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
        self._answering: dict[str, threading.BoundedSemaphore] = {}
        self._answering_lock = threading.Lock()
        self._llm = llm

    # -- who calls ---------------------------------------------------------------------------

    async def caller(self, authorization: str | None, tenant: str | None, *, counted: bool = True) -> Caller:
        """The caller of a request: its key checked by the database, for the tenant it names (or
        the key's only tenant); 401 without a valid key, 403 for a tenant the key may not act for,
        429 past a rate (counted: False for a call inside a request already counted, an MCP tool's)."""
        key = _key(authorization)
        ident = key_id(key)
        if counted and not self._rates.hit(self._key_rate, "key", ident):
            raise too_many(
                f"this key made more than {self.limits.key_rate} requests",
                "rate_limit_exceeded",
                self._retry_after(self._key_rate, "key", ident),
            )

        def check(conn: psycopg.Connection) -> str:
            with conn.transaction():
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
        return Caller(key, ident, acting)

    def _retry_after(self, rate: RateLimitItem, *identifiers: str) -> float:
        """Seconds until the rate's window lets one more request in."""
        return self._rates.get_window_stats(rate, *identifiers).reset_time - time.time()

    # -- running a call ----------------------------------------------------------------------

    async def run(
        self,
        caller: Caller | None,
        disconnected: Disconnected | None,
        work: Callable[[psycopg.Connection], T],
    ) -> T:
        """work(conn) on a pooled connection in a worker thread, under the caller's key; the query
        is cancelled when the deadline passes (408) or the client goes away."""
        deadline = time.monotonic() + self.limits.timeout_s
        held: dict[str, psycopg.Connection] = {}

        def in_thread() -> T:
            with self.connections.take(self.limits.timeout_s) as conn:
                held["conn"] = conn
                if caller is None or caller.key is None:
                    return work(conn)
                with acting_with_key(caller.key):
                    return work(conn)

        task = asyncio.ensure_future(asyncio.to_thread(in_thread))
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.05)
            if done:
                break
            late = time.monotonic() > deadline
            if late or (disconnected is not None and await disconnected()):
                if "conn" in held:
                    held["conn"].cancel_safe()
                with contextlib.suppress(psycopg.Error, ApiError, KgragError):
                    await task  # the cancelled query's error: the caller gets 408 or nothing
                if late:
                    raise ApiError(408, f"the call ran past this server's {self.limits.timeout_s:g} s", None, "timeout")
                raise ApiError(499, "the client went away", code="client_closed")
        try:
            return task.result()
        except psycopg.Error as exc:
            error = from_database(exc)
            if error.status == 500:
                log.error("database error: %s", describe(exc).text())
            raise error from exc
        except KgragError as exc:
            raise ApiError(400, str(exc)) from exc

    async def key_holder(self, authorization: str | None) -> str:
        """The id of a valid key (401 otherwise), whatever its tenants: for what no tenant owns."""
        try:
            return (await self.caller(authorization, None)).key_id
        except ApiError as exc:
            if exc.status == 400:  # a valid key of several tenants, none named
                return key_id(_key(authorization))
            raise

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

        def checked(conn: psycopg.Connection) -> T:
            with tenant_transaction(conn, caller.tenant):
                try:
                    conn.execute(Q["check_question"], [question])
                except psycopg.errors.InvalidParameterValue as exc:
                    raise ApiError(400, describe(exc).message, "question", "question_too_long") from exc
                try:
                    conn.execute(Q["check_search_options"], [json.dumps(options)])
                except psycopg.errors.InvalidParameterValue as exc:
                    raise ApiError(400, describe(exc).message, "options", "invalid_value") from exc
            return work(conn, self.embedder_of(conn, caller.tenant))

        return await self.run(caller, disconnected, checked)

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
        return await self.run(caller, disconnected, lambda conn: entity_card(conn, caller.tenant, name))

    async def neighbourhood(
        self,
        caller: Caller,
        disconnected: Disconnected | None,
        seed: str,
        hops: int,
        degree_cap: int | None,
        direction: str,
    ) -> dict[str, Any]:
        def work(conn: psycopg.Connection) -> dict[str, Any]:
            nodes, edges = neighbourhood(conn, caller.tenant, seed, hops, degree_cap, None, direction)
            return {"nodes": [dataclasses.asdict(n) for n in nodes], "edges": [dataclasses.asdict(e) for e in edges]}

        return await self.run(caller, disconnected, work)

    async def embedding(self, model: str, texts: list[str], queries: bool) -> np.ndarray:
        embedder = self.models.get(model)  # 404 for a model this server does not serve, before the thread
        work = embedder.embed_queries if queries else embedder.embed
        return np.asarray(await asyncio.to_thread(work, texts), dtype=np.float32)

    def embedder_of(self, conn: psycopg.Connection, tenant: str) -> Embedder:
        return tenant_embedder(conn, tenant, load=lambda name, _: self.models.get(name))

    # -- answering with an LLM ---------------------------------------------------------------

    def chat(self) -> OpenAICompatibleClient:
        """The LLM client, made once from KGRAG_LLM_*; 503 when this server has none."""
        from pgkgrag.llm.client import LlmSettings, OpenAICompatibleClient

        with self._answering_lock:
            if self._llm is None:
                try:
                    self._llm = OpenAICompatibleClient(LlmSettings.from_env())
                except KgragError as exc:
                    raise ApiError(503, f"this server answers with no LLM: {exc}", code="llm_not_configured") from exc
            return self._llm

    @contextmanager
    def answering(self, tenant: str) -> Iterator[None]:
        """A slot among the tenant's answers in progress (429 when none is free)."""
        with self._answering_lock:
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

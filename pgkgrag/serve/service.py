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

import contextlib
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import psycopg

from pgkgrag.db.connections import READER, WRITER, acting_with_key, connect_app, tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.errors import KgragError, describe
from pgkgrag.graph.entities import EntityCard, entity_card
from pgkgrag.graph.picture import neighbourhood
from pgkgrag.queries import Q
from pgkgrag.retrieval.results import SearchResult
from pgkgrag.retrieval.search import context, run_search
from pgkgrag.serve import telemetry
from pgkgrag.serve.admission import Admission
from pgkgrag.serve.callers import Caller, Limits, bearer_key, key_id
from pgkgrag.serve.calls import Call, Disconnected, Watched, in_time
from pgkgrag.serve.errors import ApiError
from pgkgrag.serve.pool import Connections, Models

if TYPE_CHECKING:
    from pgkgrag.llm.answers import Answer
    from pgkgrag.llm.client import OpenAICompatibleClient

log = logging.getLogger("pgkgrag.serve")
T = TypeVar("T")


class Service:
    def __init__(self, dsn: str, limits: Limits, llm: OpenAICompatibleClient | None = None) -> None:
        self.limits = limits
        self.connections = Connections(dsn, limits.connections)
        self.writers = Connections(dsn, limits.writer_connections, WRITER)
        with connect_app(dsn, READER) as conn:
            row = conn.execute(Q["columns_dimension"]).fetchone()
        assert row is not None
        self.models = Models(int(row[0]))
        self.admission = Admission(limits)
        self._lock = threading.Lock()  # for the LLM client
        self._llm = llm

    # -- who calls ---------------------------------------------------------------------------

    async def caller(
        self,
        authorization: str | None,
        tenant: str | None,
        *,
        counted: bool = True,
        groups: Sequence[str] | None = None,
    ) -> Caller:
        """The caller of a request: its key checked by the database, for the tenant it names (or
        the key's only tenant), narrowed to the end user's groups if named; 401 without a valid
        key, 403 for a tenant the key may not act for or a group it does not hold, 429 past a rate
        (counted: False for a call inside a request already counted, an MCP tool's)."""
        deadline = time.monotonic() + self.limits.timeout_s
        key = bearer_key(authorization)
        ident = key_id(key)
        if counted:
            self.admission.key_request(ident)

        def check(conn: psycopg.Connection, _: Call) -> str:
            row = conn.execute(Q["use_key"], [key, tenant]).fetchone()
            assert row is not None
            if groups is not None:
                conn.execute(Q["use_groups"], [list(groups)])
            return str(row[0])

        acting = await self.run(None, None, check)
        if counted:
            self.admission.tenant_request(acting)
        return Caller(key, ident, acting, deadline, None if groups is None else tuple(groups))

    async def key_holder(self, authorization: str | None) -> str:
        """The id of a valid key (401 otherwise), whatever its tenants: for what no tenant owns."""
        try:
            return (await self.caller(authorization, None)).key_id
        except ApiError as exc:
            if exc.status == 400:  # a valid key of several tenants, none named
                return key_id(bearer_key(authorization))
            raise

    # -- running a call ----------------------------------------------------------------------

    async def run(
        self,
        caller: Caller | None,
        disconnected: Disconnected | None,
        work: Callable[[psycopg.Connection, Call], T],
        *,
        counted_as: str | None = None,
        writing: bool = False,
    ) -> T:
        """work(conn, call) on a pooled connection in a worker thread, in one transaction, under
        the caller's key, by the caller's deadline (counted_as: among the requests in progress of
        whom; writing: on a connection as kgrag_writer, where a writer key may write)."""
        deadline = caller.deadline if caller else time.monotonic() + self.limits.timeout_s
        call = Call()
        pool = self.writers if writing else self.connections

        def in_thread() -> T:
            with (
                pool.take(max(0.0, deadline - time.monotonic())) as conn,
                call.holding(conn),
                acting_with_key(caller.key, caller.groups)
                if caller and (caller.key or caller.groups is not None)
                else contextlib.nullcontext(),
                conn.transaction(),
            ):
                result = work(conn, call)
                call.commit()
            return result

        return await in_time(call, deadline, disconnected, in_thread, self.admission, counted_as, self.limits.timeout_s)

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
            return work(conn, Watched(self.embedder_of(conn, caller.tenant), call, self.admission.turn(who)))

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
                self.admission.answering(caller.tenant),
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
        watched = Watched(embedder, call, self.admission.turn(who))
        work = watched.embed_queries if queries else watched.embed
        deadline = time.monotonic() + self.limits.timeout_s
        vectors = await in_time(
            call, deadline, disconnected, lambda: work(texts), self.admission, who, self.limits.timeout_s
        )
        return np.asarray(vectors, dtype=np.float32)

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

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()

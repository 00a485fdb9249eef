"""A client that stays: one connection and the tenant's embedder, kept between calls.

    import pgkgrag
    with pgkgrag.connect(tenant="demo") as client:
        result = client.search("Who approves changes to the PayFlow contract?")
        print(result.route, result.reason, result.evidence())

pgkgrag.search() connects, loads the embedder and searches every time; a Client pays for the
connection and the model once. It is safe to share between threads (calls take turns on its
connection), and it opens the connection again when the server dropped it.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any

import psycopg

from pgkgrag.config import Config
from pgkgrag.db.connections import READER, connect_app, ensure_server
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.retrieval.results import CitedChunk, SearchResult
from pgkgrag.retrieval.search import cited_chunks, context, run_search

if TYPE_CHECKING:
    from pgkgrag.llm.answers import Answer
    from pgkgrag.llm.client import OpenAICompatibleClient


class Client:
    def __init__(
        self,
        dsn: str | None = None,
        *,
        tenant: str | None = None,
        role: str = READER,
        llm: OpenAICompatibleClient | None = None,
    ) -> None:
        """Connect to `dsn` (default: KGRAG_DSN, else the embedded server) as `role` (kgrag_reader by
        default, when the login role may), acting for `tenant` (default: KGRAG_TENANT, else 'default');
        `llm` answers for ask() (default: the endpoint of KGRAG_LLM_URL, when ask() is first called)."""
        config = Config.from_env(tenant)
        self.tenant = config.tenant
        self._dsn = dsn or ensure_server(config)
        self._role = role
        self._lock = threading.Lock()
        self._conn: psycopg.Connection | None = None
        self._embedders: dict[str, Embedder] = {}
        self._llm = llm
        self._connection()  # fail now, not at the first search, when the database is not there

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = connect_app(self._dsn, self._role)
        return self._conn

    def _call_for(self, tenant: str | None) -> tuple[psycopg.Connection, str, Embedder]:
        chosen = tenant or self.tenant
        conn = self._connection()
        if chosen not in self._embedders:
            self._embedders[chosen] = tenant_embedder(conn, chosen)
        return conn, chosen, self._embedders[chosen]

    def embedder(self, tenant: str | None = None) -> Embedder:
        """The embedder of the tenant's vectors, loaded once."""
        with self._lock:
            return self._call_for(tenant)[2]

    def search(
        self,
        question: str,
        route: str = "auto",
        k: int = 10,
        *,
        tenant: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> SearchResult:
        """kgrag_search for the question, embedded with the tenant's embedder."""
        with self._lock:
            conn, chosen, embedder = self._call_for(tenant)
            return run_search(conn, chosen, embedder, question, route, k, options)

    def context(
        self,
        question: str,
        route: str = "auto",
        k: int = 10,
        max_chars: int = 4000,
        *,
        tenant: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> str:
        """The context block an LLM would get for the question (kgrag.context)."""
        with self._lock:
            conn, chosen, embedder = self._call_for(tenant)
            return context(conn, chosen, embedder, question, route, k, max_chars, options)

    def ask(
        self,
        question: str,
        route: str = "auto",
        k: int = 10,
        *,
        tenant: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> Answer:
        """An answer from the tenant's documents only, with verified citations (pgkgrag.llm.answers),
        from the OpenAI-compatible chat endpoint given to the client or of KGRAG_LLM_URL."""
        from pgkgrag.llm.answers import ask

        with self._lock:
            conn, chosen, embedder = self._call_for(tenant)
            if self._llm is None:
                from pgkgrag.llm.client import LlmSettings, OpenAICompatibleClient

                self._llm = OpenAICompatibleClient(LlmSettings.from_env())
            return ask(conn, chosen, embedder, self._llm, question, route, k, options)

    def cited_chunks(self, refs: list[str], *, tenant: str | None = None) -> list[CitedChunk]:
        with self._lock:
            conn, chosen, _ = self._call_for(tenant)
            return cited_chunks(conn, chosen, refs)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            if self._llm is not None:
                self._llm.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def connect(
    dsn: str | None = None, *, tenant: str | None = None, role: str = READER, llm: OpenAICompatibleClient | None = None
) -> Client:
    """A Client: see its docstring."""
    return Client(dsn, tenant=tenant, role=role, llm=llm)

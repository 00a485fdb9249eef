"""The MCP tools of pgkgrag (the official `mcp` SDK): search, context, ask, entity and neighbourhood,
and remember (a note stored for the tenant, with a writer key), for an agent, over streamable HTTP
at /mcp/ of `pgkgrag serve` (the same API keys and limits as /v1/...) or over stdio (`pgkgrag mcp
--tenant T`, as the login role of KGRAG_DSN, for T alone).

Each tool calls the service (pgkgrag.serve.service), so the database binds the call to the key's
tenant; over stdio, every call acts for T, whatever else the login role may act for (the schema
owner may act for all). An error (a tenant the key may not act for, a rate passed) comes back as the
tool's error, with its code; each call is counted by tool and outcome (kgrag_mcp_tool_calls_total).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from pgkgrag.extras import missing
from pgkgrag.serve import telemetry
from pgkgrag.serve.callers import Caller, Limits, RouteName
from pgkgrag.serve.documents import submit
from pgkgrag.serve.errors import ApiError
from pgkgrag.serve.service import Service

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
except ImportError as exc:
    raise missing("server") from exc

INSTRUCTIONS = (
    "Retrieval over one tenant's documents in PostgreSQL (pgkgrag). search returns ranked chunks, "
    "entities and community reports with the route taken and why; context returns a ready block of "
    "cited passages for an answer; ask answers with verified citations (needs the server's LLM); "
    "entity and neighbourhood show what the knowledge graph says around a name; remember stores a note "
    "for every user of the tenant (writer keys only). Cite chunk ids."
)
# its length is bounded in SQL (setting max_question_chars), as for every caller
Question = Annotated[str, Field(description="The question, in natural language.", min_length=1)]
Route = Annotated[
    RouteName,
    Field(
        description="auto lets the router choose; local: entities and their relations; global: "
        "community reports (themes of the whole collection); mixed: both; vector: passages only."
    ),
]
K = Annotated[
    int,
    Field(
        description="The most chunks (passages) returned; the entity and community report rows that explain "
        "them come besides.",
        ge=1,
        le=100,
    ),
]
Tenant = Annotated[str | None, Field(description="Only for a key of several tenants: which one.")]
Who = Callable[[Context, str | None], Awaitable[Caller]]
TOOLS = ("search", "context", "ask", "entity", "neighbourhood", "remember")


class _Counted(MCPServer):
    """The tools, each call counted by tool and outcome: ok, or the error's code."""

    def __init__(self, metrics: telemetry.Metrics) -> None:
        super().__init__(name="pgkgrag", instructions=INSTRUCTIONS, log_level="WARNING")
        self._metrics = metrics

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        tool = name if name in TOOLS else "unknown"  # the label's values stay few, whatever an agent sends
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            self._metrics.tool_calls.labels(tool, _outcome(exc)).inc()
            raise
        self._metrics.tool_calls.labels(tool, "ok").inc()
        return result


def _outcome(error: ToolError) -> str:
    """The code of a tool's error: the service's own, or what the SDK refused before the tool ran."""
    if isinstance(error, UnexpectedToolError):
        return "internal_error"
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, ApiError):
            return cause.code
        if isinstance(cause, ValidationError):
            return "invalid_request"
        cause = cause.__cause__
    return "not_found"  # a tool this server does not have


def _tools(service: Service, who: Who, metrics: telemetry.Metrics) -> MCPServer:
    server = _Counted(metrics)

    async def acting(ctx: Context, tenant: str | None) -> Caller:
        try:
            return await who(ctx, tenant)
        except ApiError as exc:
            raise _tool_error(exc) from exc

    async def call(work: Awaitable[Any]) -> Any:
        try:
            return await work
        except ApiError as exc:
            raise _tool_error(exc) from exc

    @server.tool()
    async def search(
        question: Question, ctx: Context, route: Route = "auto", k: K = 10, tenant: Tenant = None
    ) -> dict[str, Any]:
        """Search the tenant's documents: ranked rows (chunks, entities, community reports) with
        their scores, the route taken and the reason for it. Use it to find evidence."""
        caller = await acting(ctx, tenant)
        found = await call(service.search(caller, None, question, route, k, {}))
        rows = [dataclasses.asdict(r) for r in found.rows]
        return {"tenant": caller.tenant, "route": found.route, "reason": found.reason, "rows": rows}

    @server.tool()
    async def context(
        question: Question,
        ctx: Context,
        route: Route = "auto",
        k: K = 10,
        max_chars: Annotated[int, Field(description="Longest block.", ge=100, le=100_000)] = 4000,
        tenant: Tenant = None,
    ) -> dict[str, Any]:
        """The block of cited passages an LLM needs to answer the question (empty when nothing in
        the documents answers it). Use it to answer in your own words, citing the chunk ids."""
        caller = await acting(ctx, tenant)
        block = await call(service.context(caller, None, question, route, k, max_chars, {}))
        return {"tenant": caller.tenant, "context": block}

    @server.tool()
    async def ask(
        question: Question, ctx: Context, route: Route = "auto", k: K = 10, tenant: Tenant = None
    ) -> dict[str, Any]:
        """An answer from the tenant's documents only, written by the server's LLM, each claim with
        verified citations; not_found when the documents do not answer it."""
        caller = await acting(ctx, tenant)
        answer = await call(service.ask(caller, None, question, route, k, {}))
        result: dict[str, Any] = json.loads(json.dumps(answer.to_json(), default=str))
        return result

    @server.tool()
    async def entity(
        name: Annotated[str, Field(description="An entity's id, name or alias.", min_length=1, max_length=500)],
        ctx: Context,
        tenant: Tenant = None,
    ) -> dict[str, Any]:
        """What the knowledge graph says of one entity: type, description, aliases, its answer with
        the chunk it came from, its community and its strongest relations."""
        caller = await acting(ctx, tenant)
        return dataclasses.asdict(await call(service.entity(caller, None, name)))

    @server.tool()
    async def neighbourhood(
        name: Annotated[
            str, Field(description="The entity to start from (id, name or alias).", min_length=1, max_length=500)
        ],
        ctx: Context,
        hops: Annotated[int, Field(description="How far to walk.", ge=1, le=4)] = 2,
        degree_cap: Annotated[int, Field(description="Edges followed per entity.", ge=1, le=100)] = 4,
        direction: Literal["out", "in", "both"] = "out",
        tenant: Tenant = None,
    ) -> dict[str, Any]:
        """The entities around one entity within some hops, and the relations (with their evidence
        chunks) that reach them."""
        caller = await acting(ctx, tenant)
        around: dict[str, Any] = await call(service.neighbourhood(caller, None, name, hops, degree_cap, direction))
        return around

    @server.tool()
    async def remember(
        text: Annotated[str, Field(description="The note, in plain text.", min_length=1)],
        ctx: Context,
        title: Annotated[str, Field(description="A short title.", max_length=500)] = "",
        doc_id: Annotated[
            str | None,
            Field(
                description="Its id among the notes (stored as note-ID): a note submitted again with the same id "
                "replaces it (default: from its text).",
                min_length=1,
                max_length=200,
            ),
        ] = None,
        tenant: Tenant = None,
    ) -> dict[str, Any]:
        """Store a note in the tenant's documents, where every user of the tenant will find it
        (with a writer key; a reader key is refused). It is searchable once the tenant's worker has
        ingested it; returns its ticket."""
        caller = await acting(ctx, tenant)
        # a note's id is a note's: an agent replaces its notes, never a document of the tenant's
        note_id = "note-" + (doc_id or hashlib.sha256(text.encode()).hexdigest()[:16])
        (ticket,) = await call(submit(service, caller, None, [{"doc_id": note_id, "title": title, "text": text}]))
        metrics.documents_submitted.inc()
        return {"tenant": caller.tenant, "doc_id": note_id, "ticket": ticket}

    return server


def _tool_error(exc: ApiError) -> ToolError:
    return ToolError(f"{exc.status} {exc.code}: {exc.message}")


class KeyRequired:
    """Pure ASGI in front of /mcp: a request without a valid key gets 401 (a JSON-RPC error, which
    the SDK's client reports) before MCP reads it."""

    def __init__(self, app: Any, service: Service, metrics: telemetry.Metrics) -> None:
        self.app, self.service, self.metrics = app, service, metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            try:
                await self.service.key_holder(headers.get("authorization"))
            except ApiError as exc:
                self.metrics.errors.labels(exc.code).inc()
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": exc.message}})
                headers = {"content-type": "application/json", **exc.headers}
                await send(
                    {
                        "type": "http.response.start",
                        "status": exc.status,
                        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
                    }
                )
                await send({"type": "http.response.body", "body": body.encode()})
                return
        await self.app(scope, receive, send)


def mount_mcp(
    app: Any, service: Service, metrics: telemetry.Metrics
) -> Callable[[], contextlib.AbstractAsyncContextManager[None]]:
    """Mount the tools at /mcp/ of the FastAPI app; returns what its lifespan must run."""

    async def from_key(ctx: Context, tenant: str | None) -> Caller:
        headers = ctx.headers or {}
        # KeyRequired counted the request against the key's (and its only tenant's) rate already
        return await service.caller(headers.get("authorization"), tenant, counted=False)

    server = _tools(service, from_key, metrics)
    asgi = server.streamable_http_app(streamable_http_path="/", stateless_http=True, json_response=True)
    app.mount("/mcp", KeyRequired(asgi, service, metrics))

    @contextlib.asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    return running


def run_stdio(dsn: str, tenant: str) -> None:
    """The tools over stdio for one tenant, as the login role's own grant (no key): every call acts
    for that tenant, whatever else the login role may act for; a call that names another is refused."""
    service = Service(dsn, Limits())

    async def fixed(_: Context, named: str | None) -> Caller:
        if named not in (None, tenant):
            raise ApiError(
                403,
                f"pgkgrag mcp --tenant {tenant} acts for tenant {tenant!r} only: it may not act for tenant {named!r}",
                "tenant",
                "tenant_not_allowed",
            )
        return Caller(None, "stdio", tenant, time.monotonic() + service.limits.timeout_s)

    _tools(service, fixed, telemetry.Metrics()).run("stdio")

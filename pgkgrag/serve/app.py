"""`pgkgrag serve`: search, context and answers over HTTP and MCP, and the tenants' embedders in the
shape of OpenAI's embeddings API, for applications in any language and for agents.

Every request but GET /healthz and GET /metrics carries an API key (Authorization: Bearer KEY,
made by `pgkgrag keys create`); the database checks it and binds the request to the key's tenant
(pgkgrag.serve.service). POST /v1/search and /v1/context embed the question with the tenant's
embedder and call kgrag.kgrag_search and kgrag.context; POST /v1/ask answers with verified
citations (pgkgrag.llm.answers, the chat endpoint of KGRAG_LLM_URL); POST /v1/documents submits
documents (JSON, or files as a multipart form) to the tenant's ingestion queue with a writer key
(202 and their tickets; GET /v1/documents/{ticket} says where each is); POST /v1/entity and
/v1/neighbourhood show the graph around an entity; POST /v1/embeddings embeds with a named model,
so a client can make the SQL call itself. /mcp serves the same as MCP tools (pgkgrag.serve.mcp).
FastAPI validates and routes; uvicorn serves. Every error, whatever refuses the request (the
routing, the body's size or parsing, the service, the database), has OpenAI's shape ({"error":
{message, type, param, code}}) and a code of pgkgrag.serve.errors.CODES; every request is counted
in /metrics, by endpoint and status, and every error by its code.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import psycopg
from pydantic import BaseModel, ConfigDict, Field

from pgkgrag.extras import missing
from pgkgrag.queries import Q
from pgkgrag.serve import telemetry
from pgkgrag.serve.callers import Caller, Limits, RouteName
from pgkgrag.serve.documents import add_document_routes
from pgkgrag.serve.errors import ApiError
from pgkgrag.serve.middleware import BodyLimit, Measured, refused
from pgkgrag.serve.pool import SERVED
from pgkgrag.serve.service import Service

try:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from starlette.exceptions import HTTPException
except ImportError as exc:
    raise missing("server") from exc


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)
    # not OpenAI's: what the texts are, for a model that embeds questions and passages apart (e5)
    input_type: Literal["query", "passage"] = "query"


GROUPS_FIELD = Field(
    default=None,
    max_length=32,
    description="The end user's groups: what of documents for an audience the request sees, within the key's "
    "groups (a group the key does not hold is refused, 403); [] sees documents for everyone only. "
    "Default: every group the key holds.",
)


class QuestionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1)  # its length is checked before it is embedded (Service)
    tenant: str | None = Field(default=None, description="For a key of several tenants: which one.")
    groups: list[str] | None = GROUPS_FIELD
    route: RouteName = "auto"
    k: int = Field(default=10, ge=1, le=1000)
    options: dict[str, Any] = Field(default_factory=dict)


class ContextRequest(QuestionRequest):
    max_chars: int = Field(default=4000, ge=100, le=100_000)


class EntityRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=500, description="An entity id, name or alias.")
    tenant: str | None = None
    groups: list[str] | None = GROUPS_FIELD


class NeighbourhoodRequest(EntityRequest):
    hops: int = Field(default=2, ge=1, le=4)
    degree_cap: int | None = Field(default=4, ge=1, le=100)
    direction: Literal["out", "in", "both"] = "out"


def _texts(request: EmbeddingRequest, limits: Limits) -> list[str]:
    """The texts to embed, within the limits of a request (before any is embedded)."""
    value = request.input
    texts = [value] if isinstance(value, str) else value
    if not texts:
        raise ApiError(400, "input is empty: give a string or a list of strings", "input")
    if not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "input must be text: token arrays are not supported", "input")
    strings = [t for t in texts if isinstance(t, str)]
    if len(strings) > limits.max_inputs:
        raise ApiError(
            400, f"input holds {len(strings)} texts, more than {limits.max_inputs}", "input", "too_many_inputs"
        )
    for i, text in enumerate(strings):
        if not text.strip():
            raise ApiError(400, f"input[{i}] is empty", "input")
        if len(text) > limits.max_input_chars:
            raise ApiError(
                400,
                f"input[{i}] is {len(text)} characters long, more than {limits.max_input_chars}",
                "input",
                "input_too_long",
            )
    total = sum(len(t) for t in strings)
    if total > limits.max_embedding_chars:
        raise ApiError(
            400,
            f"input holds {total} characters in all, more than {limits.max_embedding_chars}",
            "input",
            "input_too_long",
        )
    return strings


def create_app(dsn: str, limits: Limits | None = None) -> FastAPI:
    """The application, its service and its metrics (app.state.service, app.state.metrics)."""
    limits = limits or Limits()
    service = Service(dsn, limits)
    metrics = telemetry.Metrics()
    mcp_running: list[Callable[[], contextlib.AbstractAsyncContextManager[None]]] = []

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp_running[0]():  # the mounted MCP app's own lifespan never runs
            yield
        service.close()

    app = FastAPI(title="pgkgrag", description=__doc__, docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.service, app.state.metrics = service, metrics

    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return refused(metrics, exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"msg": "invalid request", "loc": (), "type": ""}
        if first.get("type") == "json_invalid":
            return refused(metrics, ApiError(400, f"the body is not JSON: {first['msg']}", code="invalid_json"))
        param = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or None
        return refused(metrics, ApiError(400, f"{param or 'request'}: {first['msg']}", param))

    @app.exception_handler(HTTPException)
    async def routing(_: Request, exc: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "invalid_request")
        return refused(metrics, ApiError(exc.status_code, str(exc.detail), code=code, headers=exc.headers))

    @app.exception_handler(Exception)
    async def crashed(_: Request, __: Exception) -> JSONResponse:  # raised again after: uvicorn logs it
        return refused(metrics, ApiError(500, "the server failed: its log says why", code="internal_error"))

    async def caller(request: Request, tenant: str | None, groups: list[str] | None = None) -> Caller:
        return await service.caller(request.headers.get("authorization"), tenant, groups=groups)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        def ping(conn: psycopg.Connection, _: object) -> None:
            conn.execute(Q["columns_dimension"])

        try:
            await service.run(None, None, ping)
        except ApiError as exc:
            raise ApiError(503, f"the database is not reachable: {exc.message}", code="database_unavailable") from exc
        return {"status": "ok", "dimension": service.models.dimension, "models": list(SERVED)}

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)

    @app.post("/v1/search")
    async def search(body: QuestionRequest, request: Request) -> dict[str, Any]:
        acting = await caller(request, body.tenant, body.groups)
        found = await service.search(acting, request.is_disconnected, body.question, body.route, body.k, body.options)
        _count_search(metrics, "/v1/search", found.route, found.rows)
        return {
            "tenant": acting.tenant,
            "route": found.route,
            "reason": found.reason,
            "rows": [dataclasses.asdict(r) for r in found.rows],
        }

    @app.post("/v1/context")
    async def context(body: ContextRequest, request: Request) -> dict[str, Any]:
        acting = await caller(request, body.tenant, body.groups)
        block = await service.context(
            acting, request.is_disconnected, body.question, body.route, body.k, body.max_chars, body.options
        )
        if not block:
            metrics.empty.labels("/v1/context").inc()
        return {"tenant": acting.tenant, "context": block}

    @app.post("/v1/ask")
    async def ask(body: QuestionRequest, request: Request) -> dict[str, Any]:
        acting = await caller(request, body.tenant, body.groups)
        answer = await service.ask(acting, request.is_disconnected, body.question, body.route, body.k, body.options)
        metrics.searches.labels("/v1/ask", answer.route).inc()
        metrics.llm_calls.inc(answer.cost.calls)
        metrics.llm_tokens.labels("prompt").inc(answer.cost.prompt_tokens)
        metrics.llm_tokens.labels("completion").inc(answer.cost.completion_tokens)
        if answer.not_found:
            metrics.empty.labels("/v1/ask").inc()
        return answer.to_json()

    @app.post("/v1/entity")
    async def entity(body: EntityRequest, request: Request) -> dict[str, Any]:
        acting = await caller(request, body.tenant, body.groups)
        return dataclasses.asdict(await service.entity(acting, request.is_disconnected, body.name))

    @app.post("/v1/neighbourhood")
    async def neighbourhood(body: NeighbourhoodRequest, request: Request) -> dict[str, Any]:
        acting = await caller(request, body.tenant, body.groups)
        return await service.neighbourhood(
            acting, request.is_disconnected, body.name, body.hops, body.degree_cap, body.direction
        )

    add_document_routes(app, service, metrics, caller)

    @app.post("/v1/embeddings")
    async def embeddings(body: EmbeddingRequest, request: Request) -> dict[str, Any]:
        holder = await service.key_holder(request.headers.get("authorization"))
        texts = _texts(body, limits)
        vectors = await service.embedding(
            holder, request.is_disconnected, body.model, texts, body.input_type == "query"
        )
        if body.dimensions is not None and body.dimensions != vectors.shape[1]:
            raise ApiError(400, f"the model {body.model} makes {vectors.shape[1]}-dimensional vectors", "dimensions")
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                if body.encoding_format == "base64"
                else v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]
        tokens = sum(len(t.split()) for t in texts)  # words, as an estimate: the models do not report tokens
        return {
            "object": "list",
            "data": data,
            "model": body.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    KNOWN = {route.path for route in app.routes if hasattr(route, "path")} | {"/mcp"}
    from pgkgrag.serve.mcp import mount_mcp

    mcp_running.append(mount_mcp(app, service, metrics))
    app.add_middleware(BodyLimit, limit=limits.max_body_bytes, metrics=metrics)
    app.add_middleware(Measured, metrics=metrics, known=KNOWN)  # the last added is the outermost: it sees all
    return app


def _count_search(metrics: telemetry.Metrics, endpoint: str, route: str, rows: list[Any]) -> None:
    metrics.searches.labels(endpoint, route).inc()
    if not rows:
        metrics.empty.labels(endpoint).inc()
    if any(r.payload.get("coverage") == "reduced" for r in rows):
        metrics.fallbacks.inc()


def serve(dsn: str, host: str, port: int, limits: Limits, traces: str | None, shutdown_s: int) -> None:
    """Serve until SIGTERM (or SIGINT): then new connections are refused, the requests in progress
    have shutdown_s seconds to end, and those still running are cancelled (their queries with them)."""
    try:
        import uvicorn
    except ImportError as exc:
        raise missing("server") from exc
    telemetry.configure_traces(traces)
    app = create_app(dsn, limits)
    uvicorn.run(app, host=host, port=port, log_level="info", timeout_graceful_shutdown=shutdown_s)

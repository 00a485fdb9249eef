"""`pgkgrag serve`: the tenant's embedder over HTTP, in the shape of OpenAI's embeddings API,
and answers with verified citations.

A client in any language embeds the question here (POST /v1/embeddings, with `model` = the
tenant's embedder, `SELECT kgrag.setting('embedder')`), then makes one SQL call
(kgrag.kgrag_search) with the vector: the same model that embedded the documents, without
Python in the caller. Every OpenAI client library works unchanged (float and base64 encodings).
POST /v1/ask answers a question from a tenant's documents (pgkgrag.llm.answers, with the chat
endpoint of KGRAG_LLM_URL). FastAPI validates and routes; uvicorn serves. Errors have OpenAI's
shape ({"error": {...}}).
"""

from __future__ import annotations

import base64
import secrets
import threading
from typing import Any, Literal

import numpy as np
import psycopg
from pydantic import BaseModel, ConfigDict, Field

from pgkgrag.client import Client
from pgkgrag.config import SHARED_TENANT
from pgkgrag.db.connections import READER, connect_app, tenant_transaction
from pgkgrag.embed.embedders import EMBEDDERS, Embedder, get_embedder
from pgkgrag.errors import KgragError, describe
from pgkgrag.extras import missing
from pgkgrag.queries import Q

try:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
except ImportError as exc:
    raise missing("server") from exc

MAX_INPUTS = 2048  # texts per request, as OpenAI's API allows
MAX_INPUT_CHARS = 32_768  # characters per text
SERVED = tuple(name for name in EMBEDDERS if name != "openai")  # an openai tenant embeds at its own endpoint


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)
    # not OpenAI's: what the texts are, for a model that embeds questions and passages apart (e5)
    input_type: Literal["query", "passage"] = "query"


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1)
    tenant: str | None = None
    route: str = "auto"
    k: int = Field(default=10, ge=1, le=1000)
    options: dict[str, Any] = Field(default_factory=dict)


class Models:
    """The embedders this server has loaded, one per name, for the database's dimension."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._loaded: dict[str, Embedder] = {}
        self._lock = threading.Lock()  # one model call at a time (USE uses every core anyway)

    def embed(self, name: str, texts: list[str], queries: bool = True) -> np.ndarray:
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
                    self._loaded[name] = get_embedder(name, self.dimension)
                except KgragError as exc:
                    raise ApiError(400, str(exc), "model", "model_not_usable") from exc
            model = self._loaded[name]
            return np.asarray(model.embed_queries(texts) if queries else model.embed(texts), dtype=np.float32)


def _texts(request: EmbeddingRequest) -> list[str]:
    value = request.input
    texts = [value] if isinstance(value, str) else value
    if not texts:
        raise ApiError(400, "input is empty: give a string or a list of strings", "input")
    if not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "input must be text: token arrays are not supported", "input")
    strings = [t for t in texts if isinstance(t, str)]
    if len(strings) > MAX_INPUTS:
        raise ApiError(400, f"input holds {len(strings)} texts, more than {MAX_INPUTS}", "input")
    for i, text in enumerate(strings):
        if not text.strip():
            raise ApiError(400, f"input[{i}] is empty", "input")
        if len(text) > MAX_INPUT_CHARS:
            raise ApiError(400, f"input[{i}] is {len(text)} characters long, more than {MAX_INPUT_CHARS}", "input")
    return strings


def _error(status: int, message: str, param: str | None = None, code: str | None = None) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return JSONResponse(body, status_code=status)


def database_dimension(dsn: str) -> int:
    with connect_app(dsn, READER) as conn, tenant_transaction(conn, SHARED_TENANT):
        row = conn.execute(Q["tenant_embedder"]).fetchone()
    assert row is not None
    return int(row[0])


def create_app(dsn: str, token: str | None = None) -> FastAPI:
    """The application; `token`, when given, is the bearer token every request must carry."""
    models = Models(database_dimension(dsn))
    app = FastAPI(title="pgkgrag", description=__doc__, docs_url=None, redoc_url=None)

    @app.middleware("http")
    async def bearer(request: Request, call_next: Any) -> Any:
        if token is not None and request.url.path != "/healthz":
            given = request.headers.get("authorization", "")
            if not secrets.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return _error(
                    401, "a valid bearer token is required (Authorization: Bearer ...)", code="invalid_api_key"
                )
        return await call_next(request)

    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.param, exc.code)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"msg": "invalid request", "loc": ()}
        param = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or None
        return _error(400, f"{param or 'request'}: {first['msg']}", param)

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        try:
            database_dimension(dsn)
        except (KgragError, psycopg.Error) as exc:
            raise ApiError(503, f"the database is not reachable: {describe(exc).message}") from exc
        return {"status": "ok", "dimension": models.dimension, "models": list(SERVED)}

    answering: dict[str, Client] = {}  # the Client that asks, made at the first question
    answering_lock = threading.Lock()

    @app.post("/v1/ask")
    def ask(request: AskRequest) -> dict[str, Any]:
        from pgkgrag.llm.answers import AskFailed

        try:
            with answering_lock:
                if "client" not in answering:
                    answering["client"] = Client(dsn)
            client = answering["client"]
            answer = client.ask(
                request.question, request.route, request.k, tenant=request.tenant, options=request.options
            )
        except AskFailed as exc:
            raise ApiError(502, str(exc), code="llm_failed") from exc
        except KgragError as exc:
            raise ApiError(400, str(exc)) from exc
        except psycopg.Error as exc:
            problem = describe(exc)
            state = problem.sqlstate or ""
            # a value the client library refuses (a NUL in a text) is the request's fault too
            bad_value = state.startswith("22") or isinstance(exc, psycopg.DataError)
            status = 403 if state == "42501" else 400 if bad_value else 500
            raise ApiError(status, problem.message, code=problem.sqlstate) from exc
        return answer.to_json()

    @app.post("/v1/embeddings")
    def embeddings(request: EmbeddingRequest) -> dict[str, Any]:
        texts = _texts(request)
        vectors = models.embed(request.model, texts, queries=request.input_type == "query")
        if request.dimensions is not None and request.dimensions != vectors.shape[1]:
            raise ApiError(400, f"the model {request.model} makes {vectors.shape[1]}-dimensional vectors", "dimensions")
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                if request.encoding_format == "base64"
                else v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]
        tokens = sum(len(t.split()) for t in texts)  # words, as an estimate: the models do not report tokens
        return {
            "object": "list",
            "data": data,
            "model": request.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    return app


def serve(dsn: str, host: str, port: int, token: str | None) -> None:
    try:
        import uvicorn
    except ImportError as exc:
        raise missing("server") from exc

    uvicorn.run(create_app(dsn, token), host=host, port=port, log_level="info")

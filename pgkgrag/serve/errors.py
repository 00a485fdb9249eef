"""The service's errors, in the shape of OpenAI's API: {"error": {message, type, param, code}}, with
a stable `code` for every error (CODES; README, "Running the service"), never a raw SQLSTATE."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import psycopg

from pgkgrag.errors import describe

try:
    from fastapi.responses import JSONResponse
except ImportError as exc:
    from pgkgrag.extras import missing

    raise missing("server") from exc

CODES = {  # every code an error of the service may carry, and what it means
    "invalid_json": "the body is not JSON",
    "invalid_request": "the body is JSON but not a request of this endpoint (param says which field)",
    "invalid_value": "the database refused a value of the request (SQLSTATE class 22)",
    "question_too_long": "the question is longer than the tenant's max_question_chars or the server's ceiling",
    "too_many_inputs": "more texts to embed than --max-inputs",
    "input_too_long": "a text to embed is longer than --max-input-chars, or all are longer than --max-embedding-chars",
    "invalid_api_key": "no key, a key not of the form kgk_ and 64 hex digits, or an unknown or revoked one",
    "tenant_not_allowed": "the key (or the login role) may not act for that tenant (SQLSTATE 42501)",
    "not_found": "no such endpoint",
    "method_not_allowed": "the endpoint takes another method",
    "model_not_found": "this server does not embed with that model",
    "model_not_usable": "the model cannot embed for this database (its dimension)",
    "timeout": "the request ran past --timeout, or the search past search_timeout_ms; its work was cancelled",
    "too_large": "the body is larger than --max-body",
    "rate_limit_exceeded": "the key or the tenant made more requests than its rate (Retry-After says when to retry)",
    "too_many_in_progress": "the tenant (or the key, for embeddings) has as many requests or answers in progress "
    "as it may (Retry-After)",
    "client_closed": "the client went away; its work was cancelled",
    "queue_full": "the tenant's ingestion queue is at its ceiling (settings queue_max_documents, queue_max_mb: "
    "Retry-After)",
    "document_too_large": "a document submitted is above the size limits (setting max_document_mb)",
    "llm_not_configured": "/v1/ask, and this server has no LLM (KGRAG_LLM_URL)",
    "llm_failed": "the LLM failed or answered nothing",
    "server_busy": "every database connection is busy, or the database is out of a resource (SQLSTATE class 53)",
    "database_unavailable": "the database cannot be reached or is shutting down",
    "database_error": "any other database error (logged by the server)",
    "internal_error": "a bug of the server (logged)",
}

# SQLSTATE (whole, then its class) -> HTTP status and code
_BY_SQLSTATE = {
    "28P01": (401, "invalid_api_key"),
    "28000": (403, "tenant_not_allowed"),
    "42501": (403, "tenant_not_allowed"),
    "57014": (408, "timeout"),
    "22": (400, "invalid_value"),
    "53": (503, "server_busy"),
    "08": (503, "database_unavailable"),
    "57": (503, "database_unavailable"),  # 57P01-57P05: the server shuts down or cannot take connections
}


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str = "invalid_request",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        assert code in CODES, code
        self.status, self.message, self.param, self.code = status, message, param, code
        self.headers = dict(headers or {})
        if status == 401:
            self.headers["WWW-Authenticate"] = "Bearer"

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def too_many(message: str, code: str, retry_after_s: float) -> ApiError:
    """A 429 that says in how many seconds to try again (a whole number, at least 1)."""
    return ApiError(429, message, code=code, headers={"Retry-After": str(max(1, math.ceil(retry_after_s)))})


def from_database(exc: psycopg.Error) -> ApiError:
    """The error a database error is for the client: its status and code by its SQLSTATE."""
    described = describe(exc)
    state = described.sqlstate or ""
    status, code = _BY_SQLSTATE.get(state) or _BY_SQLSTATE.get(state[:2]) or (500, "database_error")
    if not state and isinstance(exc, psycopg.DataError):  # a value the client library refuses (a NUL in a text)
        status, code = 400, "invalid_value"
    elif not state and isinstance(exc, psycopg.OperationalError):  # the connection broke
        status, code = 503, "database_unavailable"
    return ApiError(status, described.message, code=code)


QUEUE_RETRY_S = 30  # Retry-After of a submission refused by a full queue: a worker takes pages meanwhile


def submission_error(exc: psycopg.Error, index: int) -> ApiError:
    """The error of the document at `index` of a submission that the database refused: 429 with
    Retry-After when the queue is at its ceiling, 413 past a size limit, else as any database error,
    its message naming the document."""
    error = from_database(exc)
    state = describe(exc).sqlstate or ""
    message = f"documents[{index}]: {error.message}"
    if state == "53400":
        return too_many(message, "queue_full", QUEUE_RETRY_S)
    if state == "54000":
        return ApiError(413, message, "documents", "document_too_large")
    return ApiError(error.status, message, "documents" if error.status == 400 else None, error.code)

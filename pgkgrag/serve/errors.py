"""The service's errors, in the shape of OpenAI's API: {"error": {message, type, param, code}}."""

from __future__ import annotations

from typing import Any

import psycopg

from pgkgrag.errors import describe

try:
    from fastapi.responses import JSONResponse
except ImportError as exc:
    from pgkgrag.extras import missing

    raise missing("server") from exc


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status)


def status_of(exc: psycopg.Error) -> tuple[int, str | None]:
    """The HTTP status and error code of a database error."""
    state = describe(exc).sqlstate or ""
    if state == "28P01":
        return 401, "invalid_api_key"
    if state == "42501":
        return 403, "tenant_not_allowed"
    if state == "57014":
        return 408, "timeout"
    # a value the client library refuses (a NUL in a text) is the request's fault too
    if state.startswith("22") or isinstance(exc, psycopg.DataError):
        return 400, state or None
    return 500, state or None

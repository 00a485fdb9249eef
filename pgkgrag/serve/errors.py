"""The service's errors, in the shape of OpenAI's API: {"error": {message, type, param, code}}."""

from __future__ import annotations

from typing import Any

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

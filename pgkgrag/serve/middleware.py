"""The service's pure ASGI layers (pure, so that a handler still sees its client go away): a body
over the limit refused before anything parses it, and every request measured and counted."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from pgkgrag.extras import missing
from pgkgrag.serve import telemetry
from pgkgrag.serve.errors import ApiError

try:
    from fastapi.responses import JSONResponse
except ImportError as exc:
    raise missing("server") from exc

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BodyLimit:
    """Pure ASGI: a request body larger than the limit gets 413 before anything parses it (by its
    Content-Length, or, for a chunked body, by reading it up to the limit first)."""

    def __init__(self, app: Any, limit: int, metrics: telemetry.Metrics) -> None:
        self.app, self.limit, self.metrics = app, limit, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = ApiError(413, f"the request body is larger than this server's {self.limit} bytes", code="too_large")
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await refused(self.metrics, too_big)(scope, receive, send)
            return
        if length is not None:
            await self.app(scope, receive, send)
            return
        # no Content-Length (a chunked body): read it whole, up to the limit, then hand it on
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                await refused(self.metrics, too_big)(scope, receive, send)
                return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class Measured:
    """Pure ASGI (so that a handler still sees its client go away): each request's span, count by
    endpoint and status, and latency."""

    def __init__(self, app: Any, metrics: telemetry.Metrics, known: set[str]) -> None:
        self.app, self.metrics, self.known = app, metrics, known

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path = str(scope.get("path", "")).rstrip("/") or "/"
        endpoint = path if path in self.known else "other"
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            with telemetry.span("kgrag.request", {"http.route": endpoint}) as current:
                await self.app(scope, receive, sending)
                current.set_attribute("http.status_code", status)
        finally:
            self.metrics.requests.labels(endpoint, str(status)).inc()
            self.metrics.latency.labels(endpoint).observe(time.perf_counter() - started)


def refused(metrics: telemetry.Metrics, error: ApiError) -> JSONResponse:
    """The response of an error, counted by its code."""
    metrics.errors.labels(error.code).inc()
    return error.response()

"""Documents in over HTTP and MCP: POST /v1/documents (JSON documents, or files as a multipart form
read by pgkgrag's readers, pgkgrag.serve.uploads) submits them to the key's tenant's ingestion queue
(kgrag.submit_document, which checks each and the owner's ceilings) in one transaction, on a
connection as kgrag_writer, where only a writer key may write; GET /v1/documents/{ticket} says where
one is (kgrag.ingest_queue). `pgkgrag worker` ingests them, not the service."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.queries import Q
from pgkgrag.serve import telemetry
from pgkgrag.serve.callers import Caller
from pgkgrag.serve.calls import Call, Disconnected
from pgkgrag.serve.errors import ApiError, submission_error
from pgkgrag.serve.service import Service
from pgkgrag.serve.uploads import converted, reader_limits

try:
    from fastapi import FastAPI, Request
except ImportError as exc:
    from pgkgrag.extras import missing

    raise missing("server") from exc


class DocumentsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    documents: list[dict[str, Any]] = Field(
        min_length=1, description="Documents as JSONL lines: doc_id, text, title, metadata, language, entities, ..."
    )
    tenant: str | None = Field(default=None, description="For a key of several tenants: which one.")


async def submission(request: Request) -> tuple[str | None, list[dict[str, Any]], list[tuple[str, bytes]]]:
    """(tenant, documents, files) of POST /v1/documents: a JSON body ({"documents": [...]}), or a
    multipart form of files (field "files", repeated; "tenant" optional)."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        form = await request.form()
        files = [
            (str(item.filename or "upload"), await item.read())
            for item in form.getlist("files")
            if not isinstance(item, str)
        ]
        tenant = form.get("tenant")
        if not files:
            raise ApiError(400, 'a multipart submission sends its files in the field "files"', "files")
        return (tenant if isinstance(tenant, str) else None), [], files
    try:
        body = DocumentsRequest.model_validate_json(await request.body())
    except ValidationError as exc:
        first = exc.errors()[0]
        if first.get("type") == "json_invalid":
            raise ApiError(400, f"the body is not JSON: {first['msg']}", code="invalid_json") from exc
        param = ".".join(str(p) for p in first.get("loc", ())) or None
        raise ApiError(400, f"{param or 'request'}: {first['msg']}", param) from exc
    return body.tenant, body.documents, []


async def submit(
    service: Service,
    caller: Caller,
    disconnected: Disconnected | None,
    documents: list[dict[str, Any]],
    files: Sequence[tuple[str, bytes]] = (),
) -> list[int]:
    """Submit documents, and files converted by pgkgrag's readers within the tenant's limits (PDF,
    HTML, DOCX, Markdown, text), to the tenant's ingestion queue in one transaction: their tickets,
    or an error naming the first refused."""
    most = service.limits.max_documents
    if not 1 <= len(documents) + len(files) <= most:
        raise ApiError(400, f"give 1 to {most} documents a request", "documents")
    read: list[dict[str, Any]] = []
    if files:  # read with no connection held (a reader's limits bound each file; the deadline all)
        limits = await service.run(caller, disconnected, lambda conn, _: reader_limits(conn, caller.tenant))
        read = await asyncio.to_thread(converted, limits, list(files))
        if time.monotonic() > caller.deadline:
            raise ApiError(408, f"the request ran past this server's {service.limits.timeout_s:g} s", code="timeout")

    def work(conn: psycopg.Connection, call: Call) -> list[int]:
        tickets = []
        with tenant_transaction(conn, caller.tenant):
            for i, document in enumerate([*documents, *read]):
                try:
                    row = conn.execute(Q["submit_document"], [Jsonb(document)]).fetchone()
                except psycopg.Error as exc:
                    raise submission_error(exc, i) from exc
                assert row is not None
                tickets.append(int(row[0]))
        return tickets

    return await service.run(caller, disconnected, work, counted_as=f"tenant {caller.tenant}", writing=True)


async def ticket_state(
    service: Service, caller: Caller, disconnected: Disconnected | None, ticket: int
) -> dict[str, Any]:
    """A ticket of the tenant's ingestion queue (kgrag.ingest_queue): 404 for one it does not see."""

    def work(conn: psycopg.Connection, _: Call) -> dict[str, Any] | None:
        with tenant_transaction(conn, caller.tenant), conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(Q["ticket_state"], [ticket]).fetchone()

    found = await service.run(caller, disconnected, work, counted_as=f"tenant {caller.tenant}")
    if found is None:
        raise ApiError(404, f"tenant {caller.tenant!r} has no ticket {ticket}", "ticket", "not_found")
    return {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in found.items()}


def add_document_routes(
    app: FastAPI,
    service: Service,
    metrics: telemetry.Metrics,
    caller: Callable[[Request, str | None], Awaitable[Caller]],
) -> None:
    @app.post("/v1/documents", status_code=202)
    async def documents(request: Request) -> dict[str, Any]:
        await service.key_holder(request.headers.get("authorization"))  # a valid key before the body is read
        tenant, given, files = await submission(request)
        acting = await caller(request, tenant)
        tickets = await submit(service, acting, request.is_disconnected, given, files)
        metrics.documents_submitted.inc(len(tickets))
        return {"tenant": acting.tenant, "tickets": tickets}

    @app.get("/v1/documents/{ticket}")
    async def document_ticket(ticket: int, request: Request) -> dict[str, Any]:
        acting = await caller(request, request.query_params.get("tenant"))
        return {"tenant": acting.tenant, **await ticket_state(service, acting, request.is_disconnected, ticket)}

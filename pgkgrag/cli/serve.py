"""pgkgrag serve: the HTTP and MCP service; pgkgrag mcp: the MCP tools over stdio for one tenant."""

from __future__ import annotations

import click

from pgkgrag.cli.common import friendly_errors
from pgkgrag.config import Config
from pgkgrag.db.connections import ensure_server


@click.command(name="serve")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (127.0.0.1: this machine only)."
)
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option(
    "--key-rate", default="120/minute", show_default=True, help="Requests per API key (N/second|minute|hour)."
)
@click.option("--tenant-rate", default="600/minute", show_default=True, help="Requests per tenant, all its keys.")
@click.option(
    "--answers-per-tenant", type=click.IntRange(1, 64), default=2, show_default=True, help="LLM answers in progress."
)
@click.option(
    "--concurrent-per-tenant",
    type=click.IntRange(1, 64),
    default=2,
    show_default=True,
    help="Requests of a tenant in progress at once (per key for /v1/embeddings); more get 429. "
    "Keep it below --connections, so one tenant leaves connections to the others.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 600),
    default=30.0,
    show_default=True,
    help="Seconds per request, embedding included; then its work is cancelled (408).",
)
@click.option("--connections", type=click.IntRange(1, 64), default=4, show_default=True, help="Database connections.")
@click.option(
    "--writer-connections",
    type=click.IntRange(1, 64),
    default=2,
    show_default=True,
    help="Database connections as kgrag_writer, for the documents submitted (POST /v1/documents, the MCP tool "
    "remember); the login role must be granted kgrag_writer for them.",
)
@click.option(
    "--max-body",
    type=click.IntRange(1024, 256 * 1024 * 1024),
    default=4 * 1024 * 1024,
    show_default=True,
    help="Largest request body in bytes (then 413).",
)
@click.option(
    "--max-question-chars",
    type=click.IntRange(1, 1_000_000),
    default=20_000,
    show_default=True,
    help="Longest question, refused before the database is asked (the tenant's max_question_chars still applies).",
)
@click.option("--max-inputs", type=click.IntRange(1, 2048), default=128, show_default=True, help="Texts per embedding.")
@click.option(
    "--max-input-chars", type=click.IntRange(1, 1_000_000), default=8192, show_default=True, help="Characters per text."
)
@click.option(
    "--max-embedding-chars",
    type=click.IntRange(1, 10_000_000),
    default=32_768,
    show_default=True,
    help="Characters of all the texts of one /v1/embeddings request.",
)
@click.option(
    "--shutdown-timeout",
    type=click.IntRange(0, 3600),
    default=10,
    show_default=True,
    help="Seconds the requests in progress get to end after SIGTERM; then they are cancelled.",
)
@click.option(
    "--traces",
    type=click.Choice(["console", "otlp"]),
    default=None,
    help="Send OpenTelemetry spans to stdout or over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT); default: none.",
)
@friendly_errors
def serve_command(
    host: str,
    port: int,
    key_rate: str,
    tenant_rate: str,
    answers_per_tenant: int,
    concurrent_per_tenant: int,
    timeout: float,
    connections: int,
    writer_connections: int,
    max_body: int,
    max_question_chars: int,
    max_inputs: int,
    max_input_chars: int,
    max_embedding_chars: int,
    shutdown_timeout: int,
    traces: str | None,
) -> None:
    """Serve search, context, answers and the graph over HTTP (/v1/...) and MCP (/mcp) for the
    holders of API keys (pgkgrag keys create), and the tenants' embedders as an OpenAI-compatible
    POST /v1/embeddings; GET /healthz and GET /metrics (Prometheus) need no key."""
    from pgkgrag.serve.app import serve
    from pgkgrag.serve.callers import Limits, check_rate

    limits = Limits(
        key_rate=check_rate(key_rate, "--key-rate"),
        tenant_rate=check_rate(tenant_rate, "--tenant-rate"),
        answers_per_tenant=answers_per_tenant,
        in_progress_per_tenant=concurrent_per_tenant,
        timeout_s=timeout,
        connections=connections,
        writer_connections=writer_connections,
        max_body_bytes=max_body,
        max_question_chars=max_question_chars,
        max_inputs=max_inputs,
        max_input_chars=max_input_chars,
        max_embedding_chars=max_embedding_chars,
    )
    serve(ensure_server(Config.from_env()), host, port, limits, traces, shutdown_timeout)


@click.command(name="mcp")
@click.option("--tenant", envvar="KGRAG_TENANT", required=True, help="The tenant the tools act for.")
@friendly_errors
def mcp_command(tenant: str) -> None:
    """Serve the MCP tools (search, context, ask, entity, neighbourhood) over stdio for one tenant,
    as the login role of KGRAG_DSN (acting as kgrag_reader): for a desktop agent. Every call acts
    for that tenant, whatever else the login role may act for."""
    from pgkgrag.serve.mcp import run_stdio

    run_stdio(ensure_server(Config.from_env(tenant)), tenant)

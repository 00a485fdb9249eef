"""The service's metrics (prometheus-client, served at GET /metrics) and traces (OpenTelemetry:
spans for a request's phases, the embedding, the SQL call and the LLM's answer).

Traces are off unless `pgkgrag serve --traces console|otlp` turns them on: console prints each
span as JSON on stdout; otlp sends them over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (the
exporter reads the standard OTEL_* variables). Without an SDK configured, the spans cost nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pgkgrag.errors import KgragError
from pgkgrag.extras import missing

try:
    from opentelemetry import trace
    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
    from prometheus_client.exposition import CONTENT_TYPE_LATEST
except ImportError as exc:
    raise missing("server") from exc

_tracer = trace.get_tracer("pgkgrag.serve")
TRACE_EXPORTERS = ("console", "otlp")


@contextmanager
def span(name: str, attributes: dict[str, Any] | None = None) -> Iterator[trace.Span]:
    with _tracer.start_as_current_span(name, attributes=attributes) as current:
        yield current


def configure_traces(exporter: str | None) -> None:
    """Send spans to `exporter` (console or otlp) from now on; None: no traces."""
    if exporter is None:
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    chosen: SpanExporter
    if exporter == "console":
        chosen = ConsoleSpanExporter()
    elif exporter == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise KgragError(
                "--traces otlp needs the OTLP exporter: pip install 'pgkgrag[server]' "
                "(opentelemetry-exporter-otlp-proto-http)"
            ) from exc
        chosen = OTLPSpanExporter()
    else:
        raise KgragError(f"unknown trace exporter {exporter!r}: choose one of {', '.join(TRACE_EXPORTERS)}")
    provider = TracerProvider(resource=Resource.create({"service.name": "pgkgrag"}))
    provider.add_span_processor(BatchSpanProcessor(chosen))
    trace.set_tracer_provider(provider)


class Metrics:
    """The counters and histograms of one server, in a registry of its own."""

    CONTENT_TYPE = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "kgrag_requests", "Requests by endpoint and HTTP status.", ["endpoint", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "kgrag_request_seconds",
            "Time to answer a request, by endpoint.",
            ["endpoint"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=self.registry,
        )
        self.searches = Counter(
            "kgrag_searches", "Searches by the route taken.", ["endpoint", "route"], registry=self.registry
        )
        self.fallbacks = Counter(
            "kgrag_fallbacks", "Searches whose walk ran out of budget (coverage reduced).", registry=self.registry
        )
        self.empty = Counter("kgrag_empty_answers", "Calls that found nothing.", ["endpoint"], registry=self.registry)
        self.llm_calls = Counter("kgrag_llm_calls", "Chat calls made to answer.", registry=self.registry)
        self.llm_tokens = Counter(
            "kgrag_llm_tokens", "Tokens the LLM endpoint reported, by kind.", ["kind"], registry=self.registry
        )
        self.errors = Counter("kgrag_errors", "Failed requests by error code.", ["code"], registry=self.registry)
        self.documents_submitted = Counter(
            "kgrag_documents_submitted",
            "Documents submitted to the ingestion queues (POST /v1/documents, the MCP tool remember).",
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "kgrag_mcp_tool_calls",
            "MCP tool calls by tool and outcome (ok, or the error's code).",
            ["tool", "outcome"],
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

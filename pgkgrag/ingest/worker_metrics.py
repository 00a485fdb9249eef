"""`pgkgrag worker --metrics-port`: the worker's own Prometheus metrics (prometheus-client, the
server extra), on a port of its own: the tickets it settled by state, the pages it claimed, the
pages that waited for a failing endpoint (the breaker), and each of its tenants' queue by state
after every drain (kgrag.ingest_queue; "waiting": held back by a failing endpoint)."""

from __future__ import annotations

from pgkgrag.extras import missing

try:
    from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
except ImportError as exc:
    raise missing("server") from exc


class WorkerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.settled = Counter(
            "kgrag_worker_tickets", "Tickets the worker settled, by state.", ["state"], registry=self.registry
        )
        self.pages = Counter("kgrag_worker_pages", "Pages of tickets the worker claimed.", registry=self.registry)
        self.endpoint_failures = Counter(
            "kgrag_worker_endpoint_failures",
            "Pages (or documents alone) that waited because an endpoint failed them: the breaker opening.",
            registry=self.registry,
        )
        self.queue = Gauge(
            "kgrag_worker_queue",
            "A tenant's ingestion queue by state, after the worker's last drain.",
            ["tenant", "state"],
            registry=self.registry,
        )

    def serve(self, port: int, host: str = "127.0.0.1") -> None:
        start_http_server(port, addr=host, registry=self.registry)

    def observe(self, what: str, label: str, n: int) -> None:
        """What QueueWorker.observe hears: pages, endpoint_failures, settled (label: the state),
        queue:TENANT (label: the state, n: how many now)."""
        if what == "pages":
            self.pages.inc(n)
        elif what == "endpoint_failures":
            self.endpoint_failures.inc(n)
        elif what == "settled":
            self.settled.labels(label).inc(n)
        elif what.startswith("queue:"):
            self.queue.labels(what.removeprefix("queue:"), label).set(n)

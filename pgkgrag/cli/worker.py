"""pgkgrag worker: ingest the documents submitted to the queue (kgrag.submit_document)."""

from __future__ import annotations

import signal
import sys
from types import FrameType

import click

from pgkgrag.cli import render
from pgkgrag.cli.common import console, friendly_errors, open_tenant, tenant_option
from pgkgrag.db.connections import WRITER, connect_app, ensure_server
from pgkgrag.embed.embedders import EMBEDDERS, Embedder
from pgkgrag.embed.vectors import tenant_embedder
from pgkgrag.ingest.extractors.base import EXTRACTORS, Extractor
from pgkgrag.ingest.extractors.choice import make_extractor
from pgkgrag.ingest.queue_worker import QueueWorker, start_listening


@click.command("worker")
@tenant_option
@click.option("--drain", is_flag=True, help="Ingest what is queued now, build, and exit (for cron and tests).")
@click.option(
    "--extractor", type=click.Choice(EXTRACTORS), default="auto", show_default=True, help="As for pgkgrag ingest."
)
@click.option(
    "--embedder", type=click.Choice(EMBEDDERS), default=None, help="Default: the tenant's embedder (as for ingest)."
)
@click.option(
    "--page",
    type=click.IntRange(1, 10_000),
    default=1000,
    show_default=True,
    help="Tickets claimed at a time (64 MB of documents at most).",
)
@click.option(
    "--batch-size", type=click.IntRange(1, 100_000), default=200, show_default=True, help="Documents per transaction."
)
@click.option(
    "--quiet-seconds",
    type=click.FloatRange(0, 86_400),
    default=5.0,
    show_default=True,
    help="Build communities, reports and answers once the queue was quiet this long.",
)
@click.option(
    "--wait-seconds",
    type=click.FloatRange(0.1, 3600),
    default=15.0,
    show_default=True,
    help="How long a page waits after an endpoint (the embedder, the LLM) failed it, doubled with each failure "
    "in a row (at most an hour): the tenant's work pauses, and the next claim after it probes the endpoint.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Serve the worker's Prometheus metrics on 127.0.0.1:PORT (tickets settled, pages, the breaker, the queue).",
)
@friendly_errors
def worker_command(
    tenant: str | None,
    drain: bool,
    extractor: str,
    embedder: str | None,
    page: int,
    batch_size: int,
    quiet_seconds: float,
    wait_seconds: float,
    metrics_port: int | None,
) -> None:
    """Ingest the documents submitted to a tenant's queue (SQL kgrag.submit_document, HTTP POST /v1/documents,
    the MCP tool), woken by each submission; any number of workers share a queue. Its connections are
    its own (three: claims and writes, the next batch's staging, the wait for submissions), apart from the
    service's."""
    config, conn = open_tenant(tenant, WRITER, existing=False)
    dsn = ensure_server(config)
    stopping = False
    queue: QueueWorker | None = None

    def stop(signum: int, frame: FrameType | None) -> None:
        """SIGTERM: a worker waiting stops now; one ingesting ends its page, settles it, and stops."""
        nonlocal stopping
        stopping = True
        if queue is not None and queue.waiting:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    with conn, connect_app(dsn, WRITER) as listen, connect_app(dsn, WRITER) as stage:
        listen.autocommit = True
        start_listening(listen)
        chosen: dict[str, tuple[Extractor, Embedder]] = {}

        def tools(name: str) -> tuple[Extractor, Embedder]:
            if name not in chosen:
                chosen[name] = (make_extractor(conn, name, extractor, None), tenant_embedder(conn, name, embedder))
            return chosen[name]

        queue = QueueWorker(
            conn,
            listen,
            [config.tenant],
            lambda name: tools(name)[0],
            lambda name: tools(name)[1],
            page=page,
            batch_size=batch_size,
            quiet_s=quiet_seconds,
            wait_s=wait_seconds,
            stage_conn=stage,
        )
        if metrics_port is not None:
            from pgkgrag.ingest.worker_metrics import WorkerMetrics

            metrics = WorkerMetrics()
            metrics.serve(metrics_port)
            queue.observe = metrics.observe
        if not drain:
            console.print(f"pgkgrag worker: tenant {config.tenant!r}, waiting for documents (Ctrl-C or SIGTERM stops)")
        try:
            counts = queue.run(drain_only=drain, stop=lambda: stopping)
        except KeyboardInterrupt:
            counts = queue.counts
    console.print(render.worker_line(counts))
    if counts.settled.get("failed"):
        sys.exit(1)

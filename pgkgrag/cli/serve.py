"""pgkgrag serve: the HTTP service."""

from __future__ import annotations

import click

from pgkgrag.cli.common import (
    friendly_errors,
)
from pgkgrag.config import Config
from pgkgrag.db.connections import ensure_server


@click.command(name="serve")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (127.0.0.1: this machine only)."
)
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option(
    "--token",
    envvar="KGRAG_SERVE_TOKEN",
    default=None,
    help="Bearer token every request must carry (default: KGRAG_SERVE_TOKEN; none: no token asked).",
)
@friendly_errors
def serve_command(host: str, port: int, token: str | None) -> None:
    """Serve the tenants' embedders as an OpenAI-compatible POST /v1/embeddings (and GET /healthz),
    so a client in any language embeds its question with the model of the documents."""
    from pgkgrag.serve.app import serve

    serve(ensure_server(Config.from_env()), host, port, token)

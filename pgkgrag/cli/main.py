"""`pgkgrag`: the command group, with the commands of each module of pgkgrag.cli."""

from __future__ import annotations

import click

from pgkgrag.cli import db, demo, graph, ingest, keys, purge, search, serve, worker


@click.group()
@click.version_option(package_name="pgkgrag")
def main() -> None:
    """pgkgrag: GraphRAG inside PostgreSQL."""


main.add_command(db.db)
main.add_command(keys.keys_group)
for command in (
    ingest.ingest,
    ingest.build_command,
    ingest.delete,
    ingest.reembed_command,
    worker.worker_command,
    search.search_command,
    search.context_command,
    search.ask_command,
    search.eval_command,
    graph.graph_command,
    graph.show_command,
    graph.status_command,
    graph.tenants_command,
    purge.purge_command,
    serve.serve_command,
    serve.mcp_command,
    demo.demo_command,
):
    main.add_command(command)

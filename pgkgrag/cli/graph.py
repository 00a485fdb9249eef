"""pgkgrag graph, show, status and tenants: what a tenant's graph holds."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from pgkgrag.cli import render
from pgkgrag.cli.common import (
    console,
    friendly_errors,
    json_option,
    open_tenant,
    print_json,
    tenant_option,
)
from pgkgrag.config import Config
from pgkgrag.db.connections import READER, connect_app, ensure_server
from pgkgrag.graph.entities import entity_card
from pgkgrag.graph.picture import write_neighbourhood
from pgkgrag.graph.totals import graph_totals, require_documents, staleness, tenants
from pgkgrag.ingest.queue_worker import queue_states


@click.command(name="graph")
@click.argument("name")
@click.option("--hops", type=click.IntRange(0, 10), default=2, show_default=True)
@click.option(
    "--degree-cap", type=click.IntRange(1, 1000), default=4, show_default=True, help="Each node's strongest edges."
)
@click.option("--relations", multiple=True, help="Follow only these relation types (any case); repeat for several.")
@click.option("--direction", type=click.Choice(["out", "in", "both"]), default="out", show_default=True)
@click.option("--out", "out_path", type=click.Path(path_type=Path), required=True, help="A .svg or an .html file.")
@tenant_option
@friendly_errors
def graph_command(
    name: str,
    hops: int,
    degree_cap: int,
    relations: tuple[str, ...],
    direction: str,
    out_path: Path,
    tenant: str | None,
) -> None:
    """Draw the neighbourhood of an entity (id, name or alias) into an SVG or HTML file."""
    config, conn = open_tenant(tenant, READER)
    with conn:
        written = write_neighbourhood(
            conn, config.tenant, name, out_path, hops, degree_cap, list(relations) or None, direction
        )
    console.print(f"drew the {hops}-hop neighbourhood of {escape(name)} in {escape(str(written))}", highlight=False)


@click.command(name="show")
@click.argument("name")
@tenant_option
@json_option
@friendly_errors
def show_command(name: str, tenant: str | None, as_json: bool) -> None:
    """Print what the graph says of an entity (id, name or alias): its card and strongest edges."""
    config, conn = open_tenant(tenant, READER)
    with conn:
        card = entity_card(conn, config.tenant, name)
    if as_json:
        print_json(card)
        return
    console.print(render.entity_card(card))


@click.command(name="status")
@tenant_option
@json_option
@friendly_errors
def status_command(tenant: str | None, as_json: bool) -> None:
    """The tenant's counts, what of it is stale (kgrag.staleness), with the command that fixes it, and its
    ingestion queue by state (kgrag.ingest_queue)."""
    config, conn = open_tenant(tenant, READER, existing=False)
    with conn:
        queue = queue_states(conn, config.tenant)
        # a tenant with documents waiting in its queue only is one too
        totals = graph_totals(conn, config.tenant) if queue else require_documents(conn, config.tenant)
        stale = staleness(conn, config.tenant)
    if as_json:
        print_json({"tenant": config.tenant, "totals": totals, "stale": stale, "queue": queue})
        return
    console.print(render.status_table(config.tenant, totals, stale))
    if queue:
        console.print(render.queue_line(queue), highlight=False, markup=False)
    if any(row.how_many for row in stale):
        console.print(f"stale: run `pgkgrag build --tenant {config.tenant}`", highlight=False, markup=False)
    else:
        console.print("nothing is stale", highlight=False)


@click.command(name="tenants")
@json_option
@friendly_errors
def tenants_command(as_json: bool) -> None:
    """List the tenants that hold documents, with their documents, chunks, entities and communities."""
    config = Config.from_env()
    with connect_app(ensure_server(config), READER) as conn:
        listed = tenants(conn)
    if as_json:
        print_json(listed)
        return
    if not listed:
        console.print("no tenant has documents yet: `pgkgrag ingest FILES --tenant NAME` creates one")
        return
    console.print(render.tenants_table(listed))

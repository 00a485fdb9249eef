"""pgkgrag purge: delete the log and failure rows, and the settled tickets of the ingestion queue,
kept past their tenant's retention.

The rule lives in SQL (kgrag.purge: settings query_log_days, answer_log_days, ingest_failure_days,
ingest_ticket_days, within the owner's limits); this command only calls it, as a scheduler (pg_cron) would.
"""

from __future__ import annotations

import click

from pgkgrag.cli.common import console, friendly_errors, json_option, print_json
from pgkgrag.config import Config
from pgkgrag.db.connections import connect_app, ensure_server, tenant_transaction
from pgkgrag.queries import Q


@click.command(name="purge")
@click.option(
    "--tenant", default="*", show_default=True, help="Only this tenant ('*', the schema owner's: every tenant)."
)
@json_option
@friendly_errors
def purge_command(tenant: str, as_json: bool) -> None:
    """Delete the query log, answer log and ingestion failure rows older than their tenant's retention."""
    with connect_app(ensure_server(Config.from_env()), None) as conn, tenant_transaction(conn, tenant):
        row = conn.execute(Q["purge"]).fetchone()
    purged: dict[str, dict[str, int]] = row[0] if row else {}
    if as_json:
        print_json(purged)
        return
    if not purged:
        console.print("nothing to purge: no tenant holds log or failure rows", highlight=False)
    for name, tables in sorted(purged.items()):
        counts = ", ".join(f"{table} {n}" for table, n in sorted(tables.items()))
        console.print(f"{name}: deleted {counts}", highlight=False, markup=False)

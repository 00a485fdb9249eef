"""pgkgrag keys: the API keys of `pgkgrag serve`, made, listed and revoked by the schema owner.

The keys live in SQL (kgrag.create_key, kgrag.list_keys, kgrag.revoke_key): the database keeps
their sha256 and checks them (kgrag.use_key); these commands only call those functions.
"""

from __future__ import annotations

import click

from pgkgrag.cli.common import check_groups, console, friendly_errors, print_json
from pgkgrag.config import Config
from pgkgrag.db.connections import connect_app, ensure_server
from pgkgrag.queries import Q


def _owner_dsn() -> str:
    return ensure_server(Config.from_env())


@click.group(name="keys")
def keys_group() -> None:
    """API keys of `pgkgrag serve`: each acts for its tenants as a reader or a writer (for the schema owner)."""


@keys_group.command(name="create")
@click.argument("name")
@click.option(
    "--tenant", "tenants", multiple=True, required=True, help="A tenant the key acts for (repeat for several)."
)
@click.option("--role", type=click.Choice(["reader", "writer"]), default="reader", show_default=True)
@click.option(
    "--group",
    "groups",
    multiple=True,
    callback=check_groups,
    help="A group the key holds (repeat for several): it sees the documents for it. None: documents for everyone only.",
)
@friendly_errors
def create_command(name: str, tenants: tuple[str, ...], role: str, groups: tuple[str, ...]) -> None:
    """Make key NAME and print it, once, alone on the last line: the database keeps its hash only."""
    with connect_app(_owner_dsn(), None) as conn:
        row = conn.execute(Q["create_key"], [name, list(tenants), role, list(groups)]).fetchone()
        conn.commit()
    assert row is not None
    holding = f" holding {', '.join(sorted(set(groups)))}" if groups else ""
    console.print(f"key {name} acts for {', '.join(sorted(set(tenants)))} as a {role}{holding}; it is shown this once:")
    print(row[0])


@keys_group.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array instead of a table.")
@friendly_errors
def list_command(as_json: bool) -> None:
    """List the keys (never the keys themselves): name, tenants, role, groups, made, revoked."""
    with connect_app(_owner_dsn(), None) as conn:
        rows = conn.execute(Q["list_keys"]).fetchall()
    listed = [
        {
            "name": n,
            "tenants": t,
            "role": r,
            "groups": g,
            "created_at": c.isoformat(),
            "revoked_at": v.isoformat() if v else None,
        }
        for n, t, r, g, c, v in rows
    ]
    if as_json:
        print_json(listed)
        return
    if not listed:
        console.print("no key yet: `pgkgrag keys create NAME --tenant T` makes one")
    for key in listed:
        state = f"revoked {key['revoked_at']}" if key["revoked_at"] else "active"
        held = ",".join(key["groups"]) or "-"
        console.print(f"{key['name']}\t{','.join(key['tenants'])}\t{key['role']}\t{held}\t{key['created_at']}\t{state}")


@keys_group.command(name="revoke")
@click.argument("name")
@friendly_errors
def revoke_command(name: str) -> None:
    """Revoke key NAME: refused from the next request on."""
    with connect_app(_owner_dsn(), None) as conn:
        row = conn.execute(Q["revoke_key"], [name]).fetchone()
        conn.commit()
    console.print(f"key {name} revoked" if row and row[0] else f"key {name} was revoked already")

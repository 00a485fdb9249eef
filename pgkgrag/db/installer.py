"""Installing the SQL of sql/ into a database: what every Alembic revision and migration run does.

The SQL lives in sql/ and nowhere else:
- sql/incremental/NNNN_name.sql (and NNNN_name.down.sql) is DDL that runs exactly once, applied
  by the Alembic revision NNNN. Once released, a file is frozen by its sha256 (sql/incremental/FROZEN);
  a change to the schema is a new revision, never an edit.
- sql/idempotent/*.sql holds the current definition of every function and view (CREATE OR REPLACE),
  run after every migration run that ends at head whenever a revision ran or the files changed, so
  an upgraded database and a fresh one always carry the same objects. Files named *.kept.sql replace
  in place what tables, policies and revisions depend on, and what they define is never dropped; what
  the other files created is dropped and created again, recorded in kgrag.settings (tenant '*').
  sql/idempotent/README.md and sql/incremental/README.md state each folder's contract.

Every run holds a transaction-scoped advisory lock, so two concurrent upgrades are serialized and
never half-applied: everything happens in one transaction.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import Connection

from pgkgrag.config import DEFAULT_DIMENSION, SHARED_TENANT
from pgkgrag.errors import KgragError
from pgkgrag.queries import Q
from pgkgrag.resources import ALEMBIC_DIR, SQL_DIR

_LOCK_KEY = "kgrag.migrations"
MAX_DIMENSION = 16000
VECTOR_INDEXES = ("halfvec", "bq")  # what revision 0024 may build
# kgrag.version() is defined by this file of sql/idempotent, at head; below VERSION_AT_HEAD too, as the
# revisions 0006 to 0048 and their drivers had it at every revision
VERSION_FILE = "006_version.sql"
VERSION_AT_HEAD = "0049"


# --- the SQL files ------------------------------------------------------------------------------


def incremental_file(revision: str, *, down: bool = False) -> Path:
    """The one incremental file of a revision (NNNN_name.sql, or NNNN_name.down.sql), as released."""
    suffix = ".down.sql" if down else ".sql"
    found = [
        p
        for p in sorted((SQL_DIR / "incremental").glob(f"{revision}_*{suffix}"))
        if down or not p.name.endswith(".down.sql")
    ]
    if len(found) != 1:
        raise KgragError(f"expected one sql/incremental/{revision}_*{suffix} file, found {len(found)}")
    return found[0]


def file_to_run(revision: str, *, down: bool = False) -> Path:
    """What a revision runs: its amended file (sql/incremental/amended/, same name) when there is
    one, else the released file. An amendment leaves the schema the released file left, apart from
    what it says it changes (a released file that cannot run without superuser, say), and is frozen
    like the released file, which stays as it ran in the databases that ran it."""
    released = incremental_file(revision, down=down)
    amended = SQL_DIR / "incremental" / "amended" / released.name
    return amended if amended.is_file() else released


def frozen_hashes() -> dict[str, str]:
    """Path (sql/... or alembic/...) -> sha256 of every released migration file."""
    frozen: dict[str, str] = {}
    for line in (SQL_DIR / "incremental" / "FROZEN").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split()
            frozen[name] = digest
    return frozen


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def revision_files(revision: str) -> dict[str, Path]:
    """The files that make up a revision, keyed as in FROZEN: its script, its SQL, its amendments."""
    (script,) = sorted((ALEMBIC_DIR / "versions").glob(f"{revision}_*.py"))
    files = {f"alembic/versions/{script.name}": script}
    for down in (False, True):
        path = incremental_file(revision, down=down)
        files[f"sql/incremental/{path.name}"] = path
        run = file_to_run(revision, down=down)
        if run != path:
            files[f"sql/incremental/amended/{run.name}"] = run
    return files


def check_frozen(key: str, path: Path) -> None:
    """Refuse a released migration file whose content changed since its release."""
    expected = frozen_hashes().get(key)
    if expected is not None and file_sha256(path) != expected:
        raise KgragError(
            f"{key} was edited after it was released (its sha256 differs from sql/incremental/FROZEN). "
            "Released migrations are immutable: put the change in a new revision."
        )


def idempotent_files() -> list[Path]:
    return sorted((SQL_DIR / "idempotent").glob("*.sql"))


def idempotent_digest() -> str:
    h = hashlib.sha256()
    for path in idempotent_files():
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def execute_file(conn: psycopg.Connection, path: Path) -> None:
    """Run one SQL file (several statements, no parameters) in the current transaction.

    The file runs with search_path = pg_catalog, <pgvector's schema>, pg_temp: functions declared
    `SET search_path FROM CURRENT` pin exactly that path, wherever pgvector is installed.
    """
    (vector_schema,) = conn.execute(Q["installer_vector_schema"]).fetchone() or ("public",)
    (previous,) = conn.execute(Q["installer_search_path"]).fetchone()  # type: ignore[misc]
    conn.execute(sql.SQL(Q["installer_pin_search_path"]).format(schema=sql.Identifier(vector_schema)))
    try:
        conn.execute(path.read_text())  # file text, not a literal: run as one simple-protocol query
    except psycopg.Error as exc:
        raise KgragError(f"{path.relative_to(SQL_DIR.parent)} failed: {str(exc).strip()}") from exc
    conn.execute(Q["installer_restore_search_path"], [previous])  # the caller's path, as it was


# --- called from alembic/ -----------------------------------------------------------------------


def driver_connection(bind: Connection) -> psycopg.Connection:
    conn = bind.connection.driver_connection
    assert isinstance(conn, psycopg.Connection)
    return conn


def apply_revision(bind: Connection, revision: str, *, down: bool = False) -> None:
    """What every revision's upgrade()/downgrade() does: run its incremental file. Before a down
    file, the idempotent layer goes (its views depend on the tables a down file changes; finish()
    builds it again wherever the run ends at head)."""
    for key, path in revision_files(revision).items():
        check_frozen(key, path)
    conn = driver_connection(bind)
    if down:
        _drop_idempotent(conn)
    execute_file(conn, file_to_run(revision, down=down))


def prepare(bind: Connection, dim: int | None, vector_index: str | None = None) -> None:
    """Start of every migration run: lock, Citus's DDL mode, extension, search_path, defaults
    tenant, dimension, the kind of vector index (read by revision 0024)."""
    conn = driver_connection(bind)
    conn.execute(Q["installer_lock"], [_LOCK_KEY])
    conn.execute(Q["installer_citus_sequential"])
    _preflight(conn)
    # the defaults tenant: the schema owner's (sealed to this transaction once the schema can, 0011 on)
    sealed = conn.execute(Q["installer_has_use_tenant"]).fetchone()[0]  # type: ignore[index]
    conn.execute(Q["use_tenant"] if sealed else Q["installer_set_tenant"], [SHARED_TENANT])
    installed = installed_dimension(conn)
    if installed is not None and dim is not None and dim != installed:
        raise KgragError(
            f"this database was installed with embedding dimension {installed}; --dim {dim} cannot change it "
            "(the vector columns and indexes are sized by it). Install into an empty database instead."
        )
    chosen = dim if dim is not None else (installed or DEFAULT_DIMENSION)
    if not 1 <= chosen <= MAX_DIMENSION:
        raise KgragError(f"embedding dimension must be between 1 and {MAX_DIMENSION}, got {chosen}")
    conn.execute(Q["installer_set_dimension"], [str(chosen)])
    if vector_index is not None and vector_index not in VECTOR_INDEXES:
        raise KgragError(f"vector index must be one of {', '.join(VECTOR_INDEXES)}, got {vector_index!r}")
    index = installed_vector_index(conn)
    if index is not None and vector_index is not None and vector_index != index:
        raise KgragError(
            f"this database's vector index is {index} (chosen when revision 0024 ran); --vector-index {vector_index} "
            "cannot change it here: `pgkgrag db downgrade 0023`, then `pgkgrag db upgrade --vector-index "
            f"{vector_index}` builds the other index"
        )
    conn.execute(Q["installer_set_vector_index"], [vector_index or ""])


def _preflight(conn: psycopg.Connection) -> None:
    """Refuse, before anything changes, a run this role lacks privileges for: each missing one is
    named with the statement an administrator runs (from installer_missing_privileges). pgvector,
    when not installed, is created here: it is tried, since providers let their admin role create
    it without marking it trusted, and a refusal is reported with the rest."""
    lacking = [(str(missing), str(fix)) for missing, fix in conn.execute(Q["installer_missing_privileges"])]
    if not conn.execute(Q["installer_vector_installed"]).fetchone():
        available = bool(conn.execute(Q["installer_vector_available"]).fetchone())
        refused = not available
        if available:
            try:
                with conn.transaction():
                    conn.execute(Q["installer_create_vector"])
            except psycopg.errors.InsufficientPrivilege:
                refused = True
        if refused:
            missing, fix = conn.execute(Q["installer_vector_lacking"], {"available": available}).fetchone()  # type: ignore[misc]
            lacking.append((str(missing), str(fix)))
    if lacking:
        (role,) = conn.execute(Q["installer_role"]).fetchone() or ("this role",)
        lines = "\n".join(f"  - {missing}\n      {fix}" for missing, fix in lacking)
        raise KgragError(
            f"{role} lacks what this migration needs; nothing was changed. Missing, and what an administrator runs:\n"
            f"{lines}"
        )


def _has_settings(conn: psycopg.Connection) -> bool:
    return bool(conn.execute(Q["installer_settings_exist"]).fetchone()[0])  # type: ignore[index]


def installed_dimension(conn: psycopg.Connection) -> int | None:
    if not _has_settings(conn):
        return None
    row = conn.execute(Q["installer_dimension"]).fetchone()
    return row[0] if row else None


def installed_vector_index(conn: psycopg.Connection) -> str | None:
    """halfvec or bq once revision 0024 ran, else None."""
    if not _has_settings(conn):
        return None
    row = conn.execute(Q["installer_vector_index"]).fetchone()
    return str(row[0]) if row else None


def finish(bind: Connection, *, at_head: bool, ran: bool, revision: str | None) -> None:
    """End of every migration run: (re)build the idempotent layer at head, kgrag.version() naming
    the revision reached (on a distributed schema, with its delegated calls); remove it elsewhere."""
    conn = driver_connection(bind)
    if not _has_settings(conn):
        return  # downgraded to base: the schema is gone
    digest = idempotent_digest()
    if at_head and not ran and _setting(conn, "idempotent_sha256") == digest:
        return
    _drop_idempotent(conn)
    if not at_head:
        # (a text, as the setting's rule says since revision 0041: no digest is "")
        _put_setting(conn, "idempotent_sha256", "")
        if revision is not None and "0006" <= revision < VERSION_AT_HEAD:
            # the revisions before 0049, and their drivers, have kgrag.version() at every revision
            conn.execute(Q["installer_name_revision"], [revision])
            execute_file(conn, SQL_DIR / "idempotent" / VERSION_FILE)
        return
    before = _kgrag_objects(conn)
    conn.execute(Q["installer_name_revision"], [revision])  # the result of kgrag.version() (006_version.sql)
    for path in idempotent_files():
        execute_file(conn, path)
    created = sorted(_kgrag_objects(conn) - before)
    _put_setting(conn, "idempotent_objects", [list(obj) for obj in created])
    _put_setting(conn, "idempotent_sha256", digest)
    conn.execute(Q["installer_delegate_calls"])  # created again: delegated again (Citus only)


def _kgrag_objects(conn: psycopg.Connection) -> set[tuple[str, str]]:
    return {(kind, identity) for kind, identity in conn.execute(Q["installer_objects"]).fetchall()}


def _drop_idempotent(conn: psycopg.Connection) -> None:
    recorded = _setting(conn, "idempotent_objects") or []
    listed = json.dumps([{"kind": kind, "identity": identity} for kind, identity in recorded])
    for kind, identity in conn.execute(Q["installer_drop_order"], [listed]).fetchall():
        conn.execute(sql.SQL(Q["installer_drop_object"]).format(kind=sql.SQL(kind), object=sql.SQL(identity)))
    _put_setting(conn, "idempotent_objects", [])
    _drop_version(conn)


def _drop_version(conn: psycopg.Connection) -> None:
    """kgrag.version() goes with the layer that defines it, also where an earlier installer or
    revision 0006 created it, unrecorded; finish() creates it again at head, and below 0049."""
    conn.execute(Q["installer_drop_version"])


def _setting(conn: psycopg.Connection, key: str) -> Any:
    row = conn.execute(Q["installer_get_setting"], [key]).fetchone()
    return row[0] if row else None


def _put_setting(conn: psycopg.Connection, key: str, value: Any) -> None:
    description = "Maintained by the installer: the functions and views of sql/idempotent."
    conn.execute(Q["installer_put_setting"], [key, json.dumps(value), description])

"""The schema revision this driver needs, and the check that a database has it.

The revisions are the files of alembic/versions (NNNN_name.py, one linear history), so knowing
them needs neither Alembic nor SQLAlchemy: searching does not load the migration machinery.
"""

from __future__ import annotations

import functools
import re

import psycopg

from pgkgrag.errors import KgragError
from pgkgrag.queries import Q
from pgkgrag.resources import ALEMBIC_DIR

_REVISION_FILE = re.compile(r"^(\d{4})_\w+\.py$")


@functools.cache
def revisions() -> tuple[str, ...]:
    """This package's revisions, oldest first."""
    found = (_REVISION_FILE.match(p.name) for p in (ALEMBIC_DIR / "versions").iterdir())
    return tuple(sorted(m.group(1) for m in found if m))


def head() -> str:
    """The newest revision this package ships."""
    return revisions()[-1]


def require_current(conn: psycopg.Connection) -> None:
    """Refuse a database whose kgrag schema is older than this package's (a newer one is fine:
    in a rolling deployment the database is upgraded before the applications)."""
    installed, has_version = conn.execute(Q["schema_installed"]).fetchone() or (False, False)
    if not installed:
        raise KgragError("pgkgrag is not installed in this database: run `pgkgrag db upgrade`")
    found = conn.execute(Q["schema_version"]).fetchone()[0] if has_version else None  # type: ignore[index]
    if not conn.autocommit:
        conn.commit()
    if found == head() or (found is not None and found not in revisions()):
        return  # current, or newer than this package knows
    at = found or "below head (no kgrag.version())"
    raise KgragError(
        f"the kgrag schema in this database is at revision {at}, but this pgkgrag needs "
        f"{head()}: run `pgkgrag db upgrade` (or `alembic upgrade head` where you deploy with Alembic)"
    )

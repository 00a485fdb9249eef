"""Where pgkgrag finds its database and which tenant it acts for, from the environment."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TENANT = "default"  # the tenant commands act for when none is named
SHARED_TENANT = "*"  # holds the defaults of every tenant (settings, router rules)


@dataclass(frozen=True)
class Config:
    """Connection settings.

    dsn: KGRAG_DSN, a PostgreSQL connection string; when unset the embedded server is used.
    home: KGRAG_HOME, the directory of the embedded server's data; by default the nearest .pgkgrag
    in the current directory or above it (as git finds .git), else ./.pgkgrag (project_home).
    tenant: KGRAG_TENANT, the tenant commands act for (default 'default'); what a tenant's name may
    be is the database's rule (kgrag_private.is_tenant_name), checked by kgrag.use_tenant.
    """

    dsn: str | None
    home: Path
    tenant: str

    @classmethod
    def from_env(cls, tenant: str | None = None) -> Config:
        dsn = os.environ.get("KGRAG_DSN") or None
        given = os.environ.get("KGRAG_HOME")
        home = Path(given).expanduser().resolve() if given else project_home(Path.cwd())
        chosen = tenant or os.environ.get("KGRAG_TENANT") or DEFAULT_TENANT
        return cls(dsn=dsn, home=home, tenant=chosen)


def project_home(start: Path) -> Path:
    """The private server's directory of the project `start` is in: the nearest .pgkgrag holding a
    server's data (a `data` directory) in `start` or a directory above it, as git finds .git, so
    every command of a project finds the same server from any of its folders; `start`/.pgkgrag when
    there is none (the first command creates it there). Only a .pgkgrag of this account's own, that
    no one else may write, is taken: a server is started on its data, configuration included, and
    one someone else left above (in /tmp, say) must not run as this account."""
    here = start.resolve()
    for folder in (here, *here.parents):
        home = folder / ".pgkgrag"
        if _own(home) and (home / "data").is_dir():
            return home
    return here / ".pgkgrag"


def _own(path: Path) -> bool:
    """Owned by this account and writable by no one else (False where it is not there or not ours to read)."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return info.st_uid == os.getuid() and not info.st_mode & 0o022 and stat.S_ISDIR(info.st_mode)


# The schema's dimension when none is chosen at install time: the widest of the bundled embedders (use,
# 512); a narrower one (e5, the default, 384) is stored zero-padded (kgrag_private.fit_vector).
DEFAULT_DIMENSION = 512

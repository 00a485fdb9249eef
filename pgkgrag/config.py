"""Where pgkgrag finds its database and which tenant it acts for, from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TENANT = "default"  # the tenant commands act for when none is named
SHARED_TENANT = "*"  # holds the defaults of every tenant (settings, router rules)


@dataclass(frozen=True)
class Config:
    """Connection settings.

    dsn: KGRAG_DSN, a PostgreSQL connection string; when unset the embedded server is used.
    home: KGRAG_HOME, the directory of the embedded server's data (default ./.pgkgrag).
    tenant: KGRAG_TENANT, the tenant commands act for (default 'default'); what a tenant's name may
    be is the database's rule (kgrag_private.is_tenant_name), checked by kgrag.use_tenant.
    """

    dsn: str | None
    home: Path
    tenant: str

    @classmethod
    def from_env(cls, tenant: str | None = None) -> Config:
        dsn = os.environ.get("KGRAG_DSN") or None
        home = Path(os.environ.get("KGRAG_HOME") or ".pgkgrag").expanduser().resolve()
        chosen = tenant or os.environ.get("KGRAG_TENANT") or DEFAULT_TENANT
        return cls(dsn=dsn, home=home, tenant=chosen)


# The schema's dimension when none is chosen at install time: the widest of the bundled embedders (use,
# 512); a narrower one (e5, the default, 384) is stored zero-padded (kgrag_private.fit_vector).
DEFAULT_DIMENSION = 512

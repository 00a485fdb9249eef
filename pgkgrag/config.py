"""Where pgkgrag finds its database and which tenant it acts for, from the environment."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pgkgrag.errors import KgragError

DEFAULT_TENANT = "default"  # the tenant commands act for when none is named
SHARED_TENANT = "*"  # holds the defaults of every tenant (settings, router rules)
_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$")


def validate_tenant(tenant: str) -> str:
    """Return the tenant if it is a valid tenant id ('*' names the defaults), else raise."""
    if tenant == SHARED_TENANT or _TENANT_RE.match(tenant):
        return tenant
    raise KgragError(f"invalid tenant {tenant!r}: use 1-128 letters, digits or _.:@- (starting with a letter or digit)")


@dataclass(frozen=True)
class Config:
    """Connection settings.

    dsn: KGRAG_DSN, a PostgreSQL connection string; when unset the embedded server is used.
    home: KGRAG_HOME, the directory of the embedded server's data (default ./.pgkgrag).
    tenant: KGRAG_TENANT, the tenant commands act for (default 'default').
    """

    dsn: str | None
    home: Path
    tenant: str

    @classmethod
    def from_env(cls, tenant: str | None = None) -> Config:
        dsn = os.environ.get("KGRAG_DSN") or None
        home = Path(os.environ.get("KGRAG_HOME") or ".pgkgrag").expanduser().resolve()
        chosen = tenant or os.environ.get("KGRAG_TENANT") or DEFAULT_TENANT
        return cls(dsn=dsn, home=home, tenant=validate_tenant(chosen))


# The schema's dimension when none is chosen at install time: that of the default embedder (setting
# embedder = use, Universal Sentence Encoder multilingual v3), which pgkgrag.embedders declares with it.
DEFAULT_DIMENSION = 512

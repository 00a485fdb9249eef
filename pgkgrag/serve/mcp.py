"""placeholder"""

from __future__ import annotations
from typing import Any


def mount_mcp(app: Any, service: Any) -> None:
    return None


def run_stdio(dsn: str, tenant: str) -> None:
    raise NotImplementedError

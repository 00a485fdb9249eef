"""pgkgrag: GraphRAG inside PostgreSQL, with a thin Python driver.

import pgkgrag
with pgkgrag.connect(tenant="demo") as client:      # keeps its connection and embedder
    result = client.search("who signs off the PayFlow renewal?")
    print(result.route, result.reason)
    for row in result.rows: ...

pgkgrag.search("...") is the one-shot form: it connects and loads the embedder every time.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgkgrag.client import Client, connect
    from pgkgrag.retrieval.results import SearchResult, SearchRow
    from pgkgrag.retrieval.search import search

__all__ = ["Client", "SearchResult", "SearchRow", "connect", "search"]
_WHERE = {
    "Client": "client",
    "connect": "client",
    "SearchResult": "retrieval.results",
    "SearchRow": "retrieval.results",
    "search": "retrieval.search",
}


def __getattr__(name: str) -> Any:
    """The public names, imported when first used: `import pgkgrag` itself loads nothing heavy."""
    if name not in _WHERE:
        raise AttributeError(f"module 'pgkgrag' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pgkgrag.{_WHERE[name]}"), name)

"""pgkgrag: GraphRAG inside PostgreSQL, with a thin Python driver.

import pgkgrag
with pgkgrag.connect(tenant="demo") as client:      # keeps its connection and embedder
    result = client.search("who signs off the PayFlow renewal?")
    print(result.route, result.reason)
    for row in result.rows: ...

pgkgrag.search("...") is the one-shot form: it connects and loads the embedder every time.
"""

from pgkgrag.client import Client, connect
from pgkgrag.search import SearchResult, SearchRow, search

__all__ = ["Client", "SearchResult", "SearchRow", "connect", "search"]

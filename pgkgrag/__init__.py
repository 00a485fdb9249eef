"""pgkgrag: GraphRAG inside PostgreSQL, with a thin Python driver.

import pgkgrag
result = pgkgrag.search("who signs off the PayFlow renewal?")
print(result.route, result.reason)
for row in result.rows: ...
"""

from pgkgrag.search import SearchResult, SearchRow, search

__all__ = ["SearchResult", "SearchRow", "search"]

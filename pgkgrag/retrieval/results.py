"""What a search returns: its rows, with the route and the reason, and the chunks a reference names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SearchRow:
    rank: int
    ref_id: str
    kind: str
    source: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True)
class SearchResult:
    route: str
    reason: str
    rows: list[SearchRow]

    def evidence(self) -> list[str]:
        """The chunk ids the rows cite, in rank order, once each."""
        seen: dict[str, None] = {}
        for row in self.rows:
            for ref in row.payload.get("evidence_refs", []):
                seen.setdefault(ref, None)
        return list(seen)

    def chunks(self) -> list[str]:
        """The chunk rows' ids, in rank order."""
        return [row.ref_id for row in self.rows if row.kind == "chunk"]


@dataclass(frozen=True)
class CitedChunk:
    chunk_id: str
    doc_id: str
    title: str
    text: str
    page: int | None
    headings: list[str]

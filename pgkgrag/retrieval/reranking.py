"""The optional reranking stage after fusion: a rerank endpoint reorders the chunks a search found.

A reranker is a model that scores (question, passage) pairs; it is served over HTTP by Text
Embeddings Inference (`POST /rerank` with query and texts) and in Cohere's shape by Cohere, Jina,
vLLM and Infinity (`POST /v1/rerank` with model, query and documents). The database cannot make
the call, so the driver does (Python callers and `pgkgrag search`; another language reads
kgrag.reranker() and does the same). It is configured per tenant in kgrag.settings (rerank_url,
rerank_api, rerank_model, rerank_timeout_ms, rerank_candidates) and off while rerank_url is empty.
KGRAG_RERANK_API_KEY, when set, is sent as a bearer token. A reranker that fails, answers out of
shape or is slower than rerank_timeout_ms never fails the search: the fused order is kept and the
reason says why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import psycopg
from psycopg.rows import class_row

from pgkgrag.queries import Q
from pgkgrag.retrieval.results import CitedChunk, SearchRow


class RerankFailed(Exception):
    """The reranker did not answer, or answered out of shape."""


@dataclass(frozen=True)
class RerankSettings:
    url: str
    api: str
    model: str
    timeout_ms: int
    candidates: int


def reranker(conn: psycopg.Connection) -> RerankSettings | None:
    """The current tenant's reranker (kgrag.reranker(), inside its transaction), or None."""
    with conn.cursor(row_factory=class_row(RerankSettings)) as cur:
        return cur.execute(Q["reranker"]).fetchone()


def scores(settings: RerankSettings, question: str, texts: list[str]) -> dict[int, float]:
    """The reranker's score of each text it scored, by position in `texts`."""
    try:
        import httpx
    except ImportError as exc:
        raise RerankFailed("httpx is not installed (pip install 'pgkgrag[llm]')") from exc
    if settings.api == "tei":
        payload: dict[str, Any] = {"query": question, "texts": texts}
    else:
        payload = {"model": settings.model, "query": question, "documents": texts, "top_n": len(texts)}
    key = os.environ.get("KGRAG_RERANK_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.post(settings.url, json=payload, headers=headers, timeout=settings.timeout_ms / 1000)
    except httpx.TimeoutException as exc:
        raise RerankFailed(f"no answer within {settings.timeout_ms} ms (setting rerank_timeout_ms)") from exc
    except httpx.HTTPError as exc:
        raise RerankFailed(f"{type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise RerankFailed(f"HTTP {response.status_code}: {response.text[:200]}")
    try:
        body = response.json()
    except ValueError as exc:
        raise RerankFailed(f"the answer is not JSON: {response.text[:100]}") from exc
    return _parse(body, len(texts))


def _parse(body: Any, n: int) -> dict[int, float]:
    """TEI answers [{"index", "score"}]; Cohere's shape {"results": [{"index", "relevance_score"}]}."""
    items = body if isinstance(body, list) else body.get("results") if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise RerankFailed("the answer has neither a list of scores nor results")
    found: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict):
            raise RerankFailed("a result is not an object")
        index, score = item.get("index"), item.get("score", item.get("relevance_score"))
        if not isinstance(index, int) or not 0 <= index < n or not isinstance(score, int | float):
            raise RerankFailed(f"a result is out of shape: {str(item)[:100]}")
        found[index] = float(score)
    return found


@dataclass(frozen=True)
class Reranked:
    """The rows in their new order (the best `k` chunks kept) and what the reason should add."""

    rows: list[SearchRow]
    note: str


def _reordered(rows: list[SearchRow]) -> list[SearchRow]:
    return [row for row in rows if row.kind == "chunk" and row.source != "neighbour"]


def passages(conn: psycopg.Connection, rows: list[SearchRow]) -> dict[str, str]:
    """The text of each chunk the reranker reorders (inside the tenant's transaction)."""
    refs = [row.ref_id for row in _reordered(rows)]
    with conn.cursor(row_factory=class_row(CitedChunk)) as cur:
        return {chunk.chunk_id: chunk.text for chunk in cur.execute(Q["cited_chunks"], [refs])}


def rerank_rows(
    settings: RerankSettings, question: str, rows: list[SearchRow], texts: dict[str, str], k: int
) -> Reranked:
    """Reorder the chunk rows of a search and keep the best k, or the first k fused ones when the
    reranker fails. The rows that are not chunks stay first; a neighbour follows its chunk."""
    primary = _reordered(rows)
    note = f"chunks reranked by {settings.url}"
    try:
        scored = scores(settings, question, [texts.get(row.ref_id, "") for row in primary]) if primary else {}
        order = sorted(range(len(primary)), key=lambda i: (i not in scored, -scored.get(i, 0.0), i))
        kept = [replace(primary[i], payload={**primary[i].payload, "rerank_score": scored.get(i)}) for i in order]
    except RerankFailed as exc:
        kept, note = primary, f"reranker skipped ({exc}): fused order kept"
    beside: dict[str, list[SearchRow]] = {}
    for row in rows:
        if row.source == "neighbour":
            beside.setdefault(row.payload.get("neighbour_of", ""), []).append(row)
    others = [row for row in rows if row.kind != "chunk"]
    ordered = others + [n for row in kept[:k] for n in [row, *beside.get(row.ref_id, [])]]
    return Reranked([replace(row, rank=i) for i, row in enumerate(ordered, 1)], note)

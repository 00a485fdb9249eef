"""Answers with verified citations, from any OpenAI-compatible chat model.

- local, mixed and vector routes: the packed context (kgrag.context_blocks) between delimiters,
  with the instruction to answer only from it and to cite each claim with its [doc_id | chunk_id]
  (for a count question, its first block says how many of the whole collection match, and a
  sentence stating it stands on the tag [collection count]: the reduce of the global route gets it
  too);
- global route: a map over the community reports the search chose (one call per report, with the
  chunks that report cites as its context, "NOT_INFORMED" allowed, concurrency bounded), then a
  reduce over the partial answers; a report is never a citation, the chunks it cites are;
- nothing retrieved: "not found in the sources", and no LLM call.

Citations are checked in SQL (kgrag.check_citations), never trusted: a citation of anything but a
chunk the model was given is removed, a claim left without one is marked unsupported, and an
answer without a supported claim is "not found". Documents are data: the context is delimited and
the instruction says that what it holds is never an instruction. What an answer cost goes to
kgrag.answer_log (kgrag.answers_by_route sums it per route).
"""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg.rows import class_row

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.errors import KgragError
from pgkgrag.llm.answer_prompts import (
    ANSWER_PROMPT,
    CLOSE,
    COUNT_TAG,
    MAP_PROMPT,
    NOT_FOUND_REPLY,
    NOT_INFORMED_REPLY,
    OPEN,
    REDUCE_PROMPT,
)
from pgkgrag.llm.client import Completion, OpenAICompatibleClient, RequestFailed, llm_calls, log_llm_calls
from pgkgrag.queries import Q

NOT_FOUND = "not found in the sources"
_TAG = re.compile(r"\[(?:[^\[\]|\n]*\|\s*)?([^\[\]|\s]+)\s*\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MAX_MAP_CHARS = 8000  # the chunks a report cites, per map call (kgrag.report_context)


class AskFailed(KgragError):
    """The answer could not be made: the LLM failed or answered nothing. Nothing is returned."""


@dataclass(frozen=True)
class Citation:
    chunk_id: str
    doc_id: str
    title: str
    quote: str
    page: int | None = None
    headings: tuple[str, ...] = ()
    source: str = ""  # how the answer names it (kgrag.source_tag): "handbook.pdf p.3 § On call"


@dataclass(frozen=True)
class CitationCheck:
    """One row of kgrag.check_citations: whether a cited chunk id may stay (status ok, not sent or
    unknown), with its document, title and quote when it is a chunk."""

    chunk_id: str
    status: str
    doc_id: str | None
    title: str | None
    quote: str | None
    page: int | None
    headings: list[str] | None
    source: str | None


@dataclass(frozen=True)
class Claim:
    text: str
    citations: list[str]
    supported: bool
    counted: bool = False  # it states the collection's count it was given (the tag [collection count])


@dataclass
class Cost:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    context_chars: int = 0
    ms: float = 0.0
    done: list[Completion] = field(default_factory=list)  # each call, for kgrag.llm_call

    def add(self, completion: Completion, context: str) -> None:
        self.done.append(completion)
        self.calls += 1
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.context_chars += len(context)


@dataclass(frozen=True)
class Answer:
    question: str
    answer: str
    route: str
    reason: str
    not_found: bool
    claims: list[Claim]
    citations: list[Citation]
    dropped: list[dict[str, str]]  # {"chunk_id", "status"}: citations removed, and why
    cost: Cost = field(default_factory=Cost)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Call:
    """One chat call to make: the system prompt, the sources block and the chunk ids it holds."""

    system: str
    question: str
    sources: str
    sent: list[str]


def ask(
    conn: psycopg.Connection,
    tenant: str,
    embedder: Embedder,
    llm: OpenAICompatibleClient,
    question: str,
    route: str = "auto",
    k: int = 10,
    options: dict[str, Any] | None = None,
) -> Answer:
    """Retrieve for the tenant, answer from what was retrieved only, verify the citations."""
    started = time.perf_counter()
    vector = embedder.embed_queries([question])[0]
    with tenant_transaction(conn, tenant):
        max_chars, map_reports = conn.execute(Q["answer_settings"]).fetchone()  # type: ignore[misc]
        # one search: the global route's maps are the reports it chose (answer_map_reports of them,
        # unless the caller asks for another number); the other routes do not read the option
        opts = json.dumps({"reports": map_reports, **(options or {})})
        blocks = conn.execute(Q["context_blocks"], [vector, route, question, max_chars, k, opts]).fetchall()
        chosen, reason, reports = conn.execute(Q["last_search"]).fetchone()  # type: ignore[misc]
        maps = _maps(conn, question, reports) if chosen == "global" else []
    cost = Cost()
    map_dropped: dict[str, str] = {}  # citations the map step removed, and why
    counted = [body for kind, _, body in blocks if kind == "count"]  # a count question's whole-collection figures
    if not blocks:
        return _finish(conn, tenant, question, chosen, reason, None, [], cost, started, map_dropped)
    if maps:
        partials = [
            _verified_text(conn, tenant, call, answer)
            for call, answer in zip(maps, _complete_all(llm, maps, cost), strict=True)
        ]
        for _, dropped in partials:
            map_dropped.update(dropped)
        informed = [(call, text) for call, (text, _) in zip(maps, partials, strict=True) if text]
        if not informed:
            return _finish(conn, tenant, question, chosen, reason, None, [], cost, started, map_dropped)
        sent = sorted({cid for call, _ in informed for cid in call.sent})
        final = _Call(REDUCE_PROMPT, question, "\n\n".join(counted + [text for _, text in informed]), sent)
    else:
        sources = "\n\n".join(body for _, _, body in blocks)
        final = _Call(ANSWER_PROMPT, question, sources, [ref for kind, ref, _ in blocks if kind == "chunk"])
    (reply,) = _complete_all(llm, [final], cost)
    # (the count block by its kind, from SQL: a document quoting the tag gives no figure a sentence may stand on)
    return _finish(conn, tenant, question, chosen, reason, reply, final.sent, cost, started, map_dropped, bool(counted))


def _maps(conn: psycopg.Connection, question: str, reports: list[str]) -> list[_Call]:
    """One map call per community report the global route chose: the report and the chunks it cites."""
    calls = []
    for community_id in reports:
        for body, sent in conn.execute(Q["report_context"], [community_id, MAX_MAP_CHARS]).fetchall():
            calls.append(_Call(MAP_PROMPT, question, body, list(sent)))
    return calls


def _complete_all(llm: OpenAICompatibleClient, calls: list[_Call], cost: Cost) -> list[str]:
    def one(call: _Call) -> Completion:
        user = f"Question: {call.question}\n\n{OPEN}\n{call.sources}\n{CLOSE}"
        return llm.complete([{"role": "system", "content": call.system}, {"role": "user", "content": user}])

    try:
        with ThreadPoolExecutor(max_workers=max(1, min(llm.settings.concurrency, len(calls)))) as pool:
            done = list(pool.map(one, calls))
    except RequestFailed as exc:
        raise AskFailed(f"the LLM request failed, no answer returned: {exc}") from exc
    for call, completion in zip(calls, done, strict=True):
        cost.add(completion, call.sources)
        if not completion.text.strip():
            raise AskFailed("the LLM returned an empty answer, no answer returned")
    return [completion.text.strip() for completion in done]


def split_claims(reply: str) -> list[tuple[str, list[str]]]:
    """The reply's sentences, each with the chunk ids its tags name, and COUNT_TAG where it carries
    that tag (tags that open a sentence belong to the one before: "... it. [d | d#1] Next ...")."""

    def tags(piece: str) -> list[str]:
        return _TAG.findall(piece) + ([COUNT_TAG] if COUNT_TAG in piece else [])

    claims: list[tuple[str, list[str]]] = []
    for piece in _SENTENCE_END.split(reply.strip()):
        leading = re.match(r"^(\s*\[[^\[\]]*\])+", piece)
        if leading and claims:
            text, cited = claims[-1]
            claims[-1] = (text, cited + tags(leading.group(0)))
            piece = piece[leading.end() :]
        text = " ".join(_TAG.sub("", piece.replace(COUNT_TAG, "")).split())
        if text.strip(" .;,"):
            claims.append((text, tags(piece)))
    return claims


def _verified(
    conn: psycopg.Connection, tenant: str, reply: str, sent: list[str], counted: bool = False
) -> tuple[list[Claim], dict[str, CitationCheck]]:
    """Each sentence with the citations that stand (kgrag.check_citations); one carrying the
    count tag stands where the model was given the collection's count (counted), and keeps the tag."""
    claims = split_claims(reply)
    cited = list(dict.fromkeys(cid for _, ids in claims for cid in ids if cid != COUNT_TAG))
    with tenant_transaction(conn, tenant), conn.cursor(row_factory=class_row(CitationCheck)) as cur:
        status = {row.chunk_id: row for row in cur.execute(Q["check_citations"], [cited, sent]).fetchall()}
    verified = []
    for text, ids in claims:
        kept = [cid for cid in dict.fromkeys(ids) if cid in status and status[cid].status == "ok"]
        by_count = counted and COUNT_TAG in ids
        verified.append(Claim(text, kept, bool(kept) or by_count, by_count))
    return verified, status


def _verified_text(conn: psycopg.Connection, tenant: str, call: _Call, reply: str) -> tuple[str, dict[str, str]]:
    """A map's partial answer, its supported sentences only, with their tags ('' when not
    informed), and the citations it lost, with why."""
    if reply.strip() == NOT_INFORMED_REPLY:
        return "", {}
    claims, status = _verified(conn, tenant, reply, call.sent)
    dropped = {cid: row.status for cid, row in status.items() if row.status != "ok"}
    return " ".join(_tagged(claim, status) for claim in claims if claim.supported), dropped


def _citation(row: CitationCheck) -> Citation:
    """A citation kept (status ok: a chunk of the tenant, with its document, title and quote)."""
    return Citation(
        row.chunk_id,
        row.doc_id or "",
        row.title or "",
        row.quote or "",
        row.page,
        tuple(row.headings or ()),
        row.source or "",
    )


def _tagged(claim: Claim, status: dict[str, CitationCheck]) -> str:
    if not claim.supported:
        return f"{claim.text} [unsupported]"
    tags = [f"[{status[cid].source} | {cid}]" for cid in claim.citations] + ([COUNT_TAG] if claim.counted else [])
    return claim.text + " " + " ".join(tags)


def _finish(
    conn: psycopg.Connection,
    tenant: str,
    question: str,
    route: str,
    reason: str,
    reply: str | None,
    sent: list[str],
    cost: Cost,
    started: float,
    map_dropped: dict[str, str],
    counted: bool = False,
) -> Answer:
    claims: list[Claim] = []
    status: dict[str, CitationCheck] = {}
    if reply is not None and reply.strip() != NOT_FOUND_REPLY:
        claims, status = _verified(conn, tenant, reply, sent, counted)
    supported = [claim for claim in claims if claim.supported]
    kept = list(dict.fromkeys(cid for claim in supported for cid in claim.citations))
    lost = {**map_dropped, **{cid: row.status for cid, row in status.items() if row.status != "ok"}}
    dropped = [{"chunk_id": cid, "status": why} for cid, why in lost.items()]
    text = " ".join(_tagged(claim, status) for claim in claims) if supported else NOT_FOUND
    cost.ms = (time.perf_counter() - started) * 1000
    citations = [_citation(status[cid]) for cid in kept]
    answer = Answer(question, text, route, reason, not supported, claims, citations, dropped, cost)
    with tenant_transaction(conn, tenant):
        conn.execute(
            Q["log_answer"],
            [
                question,
                route,
                answer.not_found,
                cost.calls,
                cost.prompt_tokens,
                cost.completion_tokens,
                cost.context_chars,
                len(citations),
                len(dropped),
                cost.ms,
            ],
        )
        log_llm_calls(conn, llm_calls("answer", cost.done, route))
    return answer

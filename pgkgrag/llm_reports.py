"""Community reports rewritten by an LLM (optional; the template report is the default).

The template report (kgrag.refresh_reports) is the input: subjects, what the corpus says about
them and the relations between them, each claim tagged with its chunk id. The model turns it
into a short readable summary that must keep those tags; an answer citing a chunk id the input
does not hold, or citing none, is rejected and the template report stays. Only reports still in
their template form are sent, so an unchanged community is never summarized twice.
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import psycopg

from pgkgrag.llm_client import OpenAICompatibleClient, RequestFailed
from pgkgrag.queries import Q

_CITATION = re.compile(r"\[([^\[\]\s]+#\d+)\]")
_CHUNK_ID = re.compile(r"[^\s,\[\]]+#\d+")
PROMPT = (
    "You summarize one community of a knowledge graph for a reader who wants the shape of a document "
    "collection. Write at most 150 words. Every sentence must end with the [chunk id] citations, copied "
    "exactly from the input, of the claims it uses. Use only facts from the input; cite only ids it contains."
)


@dataclass
class ReportRewrite:
    written: int = 0
    rejected: Counter[str] = field(default_factory=Counter)


def validate_summary(summary: str, template: str) -> str | None:
    """Why the summary is rejected, or None when it may replace the template."""
    cited = set(_CITATION.findall(summary))
    if not summary.strip():
        return "empty summary"
    if not cited:
        return "summary cites no chunk"
    if cited - set(_CHUNK_ID.findall(template)):
        return "summary cites a chunk the report does not"
    return None


def rewrite_reports(conn: psycopg.Connection, client: OpenAICompatibleClient) -> ReportRewrite:
    """Summarize the current tenant's template reports (in the caller's transaction)."""
    result = ReportRewrite()
    rows = conn.execute(Q["template_reports"]).fetchall()

    def ask(template: str) -> str | Exception:
        try:
            return client.chat([{"role": "system", "content": PROMPT}, {"role": "user", "content": template}])
        except RequestFailed as exc:
            return exc

    with ThreadPoolExecutor(max_workers=client.settings.concurrency) as pool:
        answers = list(pool.map(ask, [report for _, report in rows]))
    for (community_id, template), answer in zip(rows, answers, strict=True):
        if isinstance(answer, Exception):
            result.rejected["LLM request failed"] += 1
            continue
        reason = validate_summary(answer, template)
        if reason:
            result.rejected[reason] += 1
            continue
        conn.execute(Q["set_report_text"], [community_id, answer.strip(), f"llm:{client.settings.model}"])
        result.written += 1
    return result

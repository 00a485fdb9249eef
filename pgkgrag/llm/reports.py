"""Community reports rewritten by an LLM (optional; the template report is the default).

The template report (kgrag_private.refresh_reports) is the input: subjects, what the corpus says about
them and the relations between them, each claim tagged with its chunk id. The model turns it
into a short readable summary that must keep those tags; an answer citing a chunk id the input
does not hold, or citing none, is rejected and the template report stays (the rule is SQL's:
kgrag_private.set_report_text). Only reports still in their template form are sent, so an
unchanged community is never summarized twice.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import psycopg

from pgkgrag.llm.client import Completion, OpenAICompatibleClient, RequestFailed, llm_calls, log_llm_calls
from pgkgrag.queries import Q

PROMPT = (
    "You summarize one community of a knowledge graph for a reader who wants the shape of a document "
    "collection. Write at most 150 words. Every sentence must end with the [chunk id] citations, copied "
    "exactly from the input, of the claims it uses. Use only facts from the input; cite only ids it contains."
)


@dataclass
class ReportRewrite:
    written: int = 0
    rejected: Counter[str] = field(default_factory=Counter)


def rewrite_reports(conn: psycopg.Connection, client: OpenAICompatibleClient) -> ReportRewrite:
    """Summarize the current tenant's template reports (in the caller's transaction)."""
    result = ReportRewrite()
    rows = conn.execute(Q["template_reports"]).fetchall()

    def ask(template: str) -> Completion | Exception:
        try:
            return client.complete([{"role": "system", "content": PROMPT}, {"role": "user", "content": template}])
        except RequestFailed as exc:
            return exc

    with ThreadPoolExecutor(max_workers=client.settings.concurrency) as pool:
        done = list(pool.map(ask, [report for _, report in rows]))
    log_llm_calls(conn, llm_calls("report", [d for d in done if isinstance(d, Completion)]))
    for (community_id, _template), completion in zip(rows, done, strict=True):
        if isinstance(completion, Exception):
            result.rejected["LLM request failed"] += 1
            continue
        answer = completion.text
        writer = f"llm:{client.settings.model}"
        (refused,) = conn.execute(Q["set_report_text"], [community_id, answer, writer]).fetchone()  # type: ignore[misc]
        if refused:
            result.rejected[refused] += 1
        else:
            result.written += 1
    return result

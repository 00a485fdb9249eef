"""What the graph and the answers cost (revision 0039): every LLM call of an ingestion with the LLM
extractor, a build whose reports the LLM writes and an answer is a row of kgrag.llm_call, and
kgrag.llm_cost sums what the endpoint was asked and said it counted, per purpose and route."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from fake_openai import FakeOpenAI
from ingesting import OPS, ingest

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.llm import LlmExtractor
from pgkgrag.llm.answers import ask
from pgkgrag.llm.client import LlmSettings, OpenAICompatibleClient

COST = (
    "SELECT purpose, route, sum(calls)::int, sum(cached)::int, sum(prompt_tokens)::int, sum(completion_tokens)::int"
    " FROM kgrag.llm_cost GROUP BY 1, 2 ORDER BY 1, 2"
)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.word_usage = True
    monkeypatch.setenv("KGRAG_LLM_URL", server.url)
    monkeypatch.setenv("KGRAG_LLM_MODEL", "cost-model")
    monkeypatch.setenv("KGRAG_LLM_BACKOFF", "0.01")
    yield server
    server.close()


def chats(fake: FakeOpenAI, since: int = 0) -> int:
    return sum(1 for r in fake.requests[since:] if str(r["path"]).endswith("/chat/completions"))


def test_the_cost_view_sums_what_the_endpoint_was_asked(
    conn: psycopg.Connection, tmp_path: Path, fake: FakeOpenAI
) -> None:
    assert ingest(conn, tmp_path, OPS).ok  # the graph the reports and the answer come from
    texts = ["The Vault keeps the keys.", "The Gate admits visitors.", "The Mill grinds grain."]
    llm_docs = [{"doc_id": f"x{i}", "title": "", "text": t} for i, t in enumerate(texts)]
    assert ingest(conn, tmp_path, llm_docs, extractor=LlmExtractor.from_env(conn, "t1")).ok
    extraction_calls, extraction_usage = chats(fake), list(fake.usage_reported)
    again = [{**d, "doc_id": f"{d['doc_id']}-again"} for d in llm_docs]  # the same texts: from the cache
    assert ingest(conn, tmp_path, again, extractor=LlmExtractor.from_env(conn, "t1")).ok
    assert chats(fake) == extraction_calls
    fake.default = (200, "A summary.")
    build(conn, "t1", HashEmbedder(512), report_writer=OpenAICompatibleClient(LlmSettings.from_env()))
    report_calls, report_usage = chats(fake, extraction_calls), fake.usage_reported[len(extraction_usage) :]
    question = "What does the Auth Service depend on?"
    answered = ask(conn, "t1", HashEmbedder(512), OpenAICompatibleClient(LlmSettings.from_env()), question)
    answer_calls = chats(fake, extraction_calls + report_calls)
    answer_usage = fake.usage_reported[len(extraction_usage) + len(report_usage) :]
    assert extraction_calls == len(texts) and report_calls > 0 and answer_calls == answered.cost.calls > 0
    with tenant_transaction(conn, "t1"):
        rows = conn.execute(COST).fetchall()

    def summed(usage: list[tuple[int, int]]) -> tuple[int, int]:
        return sum(p for p, _ in usage), sum(c for _, c in usage)

    assert rows == [
        ("answer", answered.route, answer_calls, 0, *summed(answer_usage)),
        ("extraction", None, extraction_calls, len(texts), *summed(extraction_usage)),
        ("report", None, report_calls, 0, *summed(report_usage)),
    ], rows
    assert summed(answer_usage) == (answered.cost.prompt_tokens, answered.cost.completion_tokens)

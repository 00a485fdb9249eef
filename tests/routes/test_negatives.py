"""Questions the collection does not answer come back empty with every bundled embedder: a team's
Portuguese contracts and compliance notes (tests/fixtures/acervo, written for these tests),
ingested from its folder as a user does, asked what it holds and what it does not (a carrot cake,
the weather). e5 puts two sentences of one language near 0.8 whatever they say, so the floor a
vector chunk alone must clear is the tenant's own: the median similarity of two of its passages
(kgrag.refresh_chunk_spread, measured by the build)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from commands import run

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.retrieval.search import run_search

ACERVO = Path(__file__).parent.parent / "fixtures" / "acervo"
QUESTIONS = [json.loads(line) for line in (ACERVO / "questions.jsonl").read_text().splitlines()]
NEGATIVES = [q["question"] for q in QUESTIONS if q.get("expect_empty")]
POSITIVES = [q for q in QUESTIONS if not q.get("expect_empty")]


@pytest.fixture
def acervo(dsn: str, request: pytest.FixtureRequest) -> Iterator[tuple[psycopg.Connection, Embedder, str]]:
    """The folder ingested (and built) into a tenant named for the embedder, by the CLI."""
    name = request.param
    done = run("ingest", str(ACERVO / "docs"), "--tenant", f"acervo_{name}", "--embedder", name, dsn=dsn)
    assert done.returncode == 0, done.stderr
    embedder: Embedder = request.getfixturevalue(name)
    with connect(dsn) as conn:
        yield conn, embedder, f"acervo_{name}"


def spread(conn: psycopg.Connection, tenant: str) -> dict[str, object] | None:
    with tenant_transaction(conn, tenant):
        row = conn.execute("SELECT kgrag.setting('chunk_spread')").fetchone()
    return row[0] if row else None


@pytest.mark.parametrize("acervo", ["use", "e5"], indirect=True)
def test_questions_the_collection_does_not_answer_come_back_empty(
    acervo: tuple[psycopg.Connection, Embedder, str],
) -> None:
    conn, embedder, tenant = acervo
    measured = spread(conn, tenant)
    assert measured is not None and measured["embedder"] == embedder.name and measured["chunks"] == 13
    for question in NEGATIVES:
        result = run_search(conn, tenant, embedder, question, "auto", 10, {})
        assert result.rows == [], (question, result.reason)
        assert result.reason.startswith("nothing cleared the floors"), result.reason
    # what it holds is still found, and the document that answers is among the rows
    found = 0
    for question in POSITIVES:
        result = run_search(conn, tenant, embedder, question["question"], "auto", 10, {})
        docs = {row.payload.get("doc_id", "").removesuffix(".md") for row in result.rows}
        found += bool(docs & set(question["expect_docs"]))
    # the direct questions (the first seven) with either embedder; e5 the paraphrases too
    assert found >= (len(POSITIVES) if embedder.name == "e5" else 7), found


@pytest.mark.parametrize("acervo", ["e5"], indirect=True)
def test_the_collections_own_median_is_what_turns_an_unrelated_question_away(
    acervo: tuple[psycopg.Connection, Embedder, str],
) -> None:
    conn, embedder, tenant = acervo
    median = spread(conn, tenant)["median"]  # type: ignore[index]
    question = "como faço bolo de cenoura"
    # above the floor carried over from USE (0.802 for e5), below the collection's median
    off = run_search(conn, tenant, embedder, question, "vector", 10, {"chunk_alone_min_similarity": -1})
    assert off.rows and all(row.source == "vector" for row in off.rows)
    on = run_search(conn, tenant, embedder, question, "vector", 10, {})
    assert on.rows == []
    said = f"({median} where nothing else matched: the median similarity of two of the collection's passages"
    assert said in on.reason
    # a question some passage holds a word of is not held to it: its words support the vectors
    worded = run_search(conn, tenant, embedder, "bolo de cenoura e o prazo de pagamento", "vector", 10, {})
    assert any(row.source == "vector" for row in worded.rows)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="out of range"):
        run_search(conn, tenant, embedder, question, "vector", 10, {"chunk_alone_min_similarity": 2})


@pytest.mark.parametrize("acervo", ["e5"], indirect=True)
def test_a_writer_cannot_break_searches_with_the_measured_setting_and_a_group_changes_nothing(
    acervo: tuple[psycopg.Connection, Embedder, str], login: Callable[..., str], dsn: str, tmp_path: Path
) -> None:
    conn, embedder, tenant = acervo
    measured = spread(conn, tenant)
    writer = login("kgrag_writer", tenant)
    for forged in ({"embedder": "e5", "median": "high"}, {"embedder": "use", "median": 0.99}, {"median": 0.99}):
        with psycopg.connect(writer) as attacker, tenant_transaction(attacker, tenant):
            attacker.execute(
                "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'chunk_spread', %s) "
                "ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value",
                [tenant, json.dumps(forged)],
            )
        # a value that is no number, or of another embedder, is no floor: the carried-over one stands
        result = run_search(conn, tenant, embedder, "como faço bolo de cenoura", "vector", 10, {})
        assert result.rows, forged
    # a number past float8 is the ceiling (1): searches go on, nothing clears it alone
    with psycopg.connect(writer) as attacker, tenant_transaction(attacker, tenant):
        attacker.execute(
            'UPDATE kgrag.settings SET value = \'{"embedder": "e5", "median": 1e400}\''
            " WHERE tenant_id = %s AND key = 'chunk_spread'",
            [tenant],
        )
    huge = run_search(conn, tenant, embedder, "como faço bolo de cenoura", "vector", 10, {})
    assert huge.rows == [] and "(1 where nothing else matched" in huge.reason, huge.reason
    # a reader measures nothing: the setting is written by writers (the build) alone
    reader = login("kgrag_reader", tenant)
    with (
        psycopg.connect(reader) as own,
        tenant_transaction(own, tenant),
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        own.execute("SELECT kgrag.refresh_chunk_spread()")
    # the build measures it again; a document for a group only does not move it
    (tmp_path / "salarios.md").write_text("# Salários\n\nA tabela de salários de 2026 sobe 5% em março para todos.\n")
    done = run("ingest", str(tmp_path), "--tenant", tenant, "--access", "hr", dsn=dsn)
    assert done.returncode == 0, done.stderr
    assert spread(conn, tenant) == measured

"""Honest partial answers on the sample corpus, as a login role granted kgrag_reader: a question
about the collection naming a subject nobody wrote about comes back empty and says why (not every
report by weight), and a question asking how many, or for every item, says how many match and that
only k are shown."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from commands import run
from conftest import DEMO_TENANT, as_role
from psycopg.rows import dict_row
from searching import ask

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder

SEARCH = "SELECT kind, ref_id, route, reason, payload FROM kgrag.kgrag_search(question => %s, k => %s)"


@pytest.fixture
def reader(demo: str, login_roles: Callable[[str], str]) -> Iterator[psycopg.Connection]:
    role = login_roles("kgrag_reader")
    with psycopg.connect(demo, autocommit=True) as owner:
        owner.execute("SELECT kgrag.grant_tenant(%s, %s)", [role, DEMO_TENANT])
    with psycopg.connect(as_role(demo, role), row_factory=dict_row) as own:
        yield own


def search(conn: psycopg.Connection, question: str, k: int = 10) -> list[dict]:
    with tenant_transaction(conn, DEMO_TENANT):
        return conn.execute(SEARCH, [question, k]).fetchall()  # type: ignore[return-value]


def last_reason(conn: psycopg.Connection, question: str) -> str:
    with tenant_transaction(conn, DEMO_TENANT):
        conn.execute(SEARCH, [question, 10]).fetchall()
        row = conn.execute("SELECT reason FROM kgrag.last_search()").fetchone()
    assert row is not None
    return row["reason"]  # type: ignore[call-overload, no-any-return]


def test_an_aggregation_about_what_nobody_wrote_about_is_empty(reader: psycopg.Connection) -> None:
    assert search(reader, "What are the main themes about office furniture?") == []
    reason = last_reason(reader, "What are the main themes about office furniture?")
    assert 'about "office furniture", which no chunk of the collection mentions: nothing to return' in reason
    assert "rule en-themes" in reason and "nothing cleared the floors" not in reason
    # the same question in Portuguese, and the aggregations it must not be confused with
    assert search(reader, "Quais são os principais temas sobre móveis de escritório?") == []
    whole = search(reader, "What are the main themes?")
    assert whole and whole[0]["route"] == "global" and "without naming a subject" in whole[0]["reason"]
    held = search(reader, "What are the main themes across the incidents?")
    assert held and held[0]["route"] == "global" and "no chunk of the collection mentions" not in held[0]["reason"]


def test_a_count_says_how_many_match_and_that_k_are_shown(reader: psycopg.Connection, demo: str) -> None:
    rows = search(reader, "How many incidents were there?", k=3)
    with psycopg.connect(demo) as owner, tenant_transaction(owner, DEMO_TENANT):
        # counted here another way: every chunk and entity, filtered in this process
        incidents = owner.execute("SELECT count(*) FROM kgrag.entity WHERE type = 'Incident'").fetchone()[0]  # type: ignore[index]
        chunks = owner.execute("SELECT chunk_id, tsv @@ plainto_tsquery(lang, 'incidents') FROM kgrag.chunk").fetchall()
    holding = sorted(chunk_id for chunk_id, hit in chunks if hit)
    documents = {chunk_id.rsplit("#", 1)[0] for chunk_id in holding}
    assert incidents > 3 and holding  # more entities than the k shown
    assert 0 < len(rows) <= 3 + 5  # k chunks, and the entity rows of the local route
    matching = rows[0]["payload"]["matching"]
    assert all(row["payload"]["matching"] == matching for row in rows)
    assert matching == {
        "subject": "incidents",
        "shown": len(rows),
        "chunks": len(holding),
        "documents": len(documents),
        "capped": False,
        "entities": {"Incident": incidents},
        "known": True,
    }
    reason = rows[0]["reason"]
    assert "asks for a count or a complete list (rule en-count)" in reason
    assert f'{len(holding)} chunks in {len(documents)} documents hold every word of "incidents"' in reason
    assert f"the graph holds {incidents} entities of type Incident" in reason
    assert f"{len(rows)} rows are shown" in reason
    # in Portuguese, and a question that asks for no count says nothing of it
    quantos = search(reader, "Quantos incidentes houve?", k=3)
    assert quantos and "rule pt-contagem" in quantos[0]["reason"]
    assert quantos[0]["payload"]["matching"]["entities"] == {"Incident": incidents}
    plain = search(reader, "What does the Auth Service depend on?", k=3)
    assert plain and all("matching" not in row["payload"] for row in plain)
    assert "count or a complete list" not in plain[0]["reason"]


def test_with_a_question_vector_too(dconn: psycopg.Connection, use: Embedder) -> None:
    """As the driver searches (the question embedded): the same empty answer; a subject some chunk
    names gets the reports ranked against it, or every report by weight where none clears the floor."""
    furniture = ask(dconn, use, "What are the main themes about office furniture?")
    assert furniture.route == "global" and furniture.rows == []
    assert 'about "office furniture", which no chunk of the collection mentions' in furniture.reason
    held = ask(dconn, use, "What are the main themes across the incidents?")
    assert held.route == "global" and held.rows
    assert 'community reports ranked against its subject "incidents"' in held.reason
    assert "no report cleared the floor against the subject: every report of the level, by weight" in held.reason


def test_the_shell_says_it_too(demo: str) -> None:
    """`pgkgrag search` prints the reason: a count that says only k are shown, and an aggregation
    about nothing held that says why it is empty."""
    counted = run("search", "How many incidents were there?", "--tenant", DEMO_TENANT, "--k", "3", dsn=demo)
    assert counted.returncode == 0, counted.stderr
    said = " ".join(counted.stdout.split())
    assert "(rule en-count)" in said and "rows are shown" in said and "entities of type Incident" in said
    empty = run("search", "What are the main themes about office furniture?", "--tenant", DEMO_TENANT, dsn=demo)
    assert "which no chunk of the collection mentions" in " ".join(empty.stdout.split())


def test_a_count_whose_words_no_chunk_holds_is_unknown_not_zero(dsn: str, tmp_path: Path) -> None:
    """English incident notes, asked in Portuguese, from the shell: no chunk holds "incidentes" and
    no entity type is called so (the keyphrases extractor types none Incident), so the count is
    said to be unknown, not a true zero; a count the words do find still says how many."""
    for n, what in enumerate(("the payment database ran out of disk", "a certificate expired", "the queue stalled")):
        (tmp_path / f"inc-{n}.md").write_text(
            f"# Incident {n}\n\nIncident {n}: {what}; the on-call engineer fixed it.\n"
        )
    done = run("ingest", str(tmp_path), "--tenant", "notes", "--embedder", "hash", dsn=dsn)
    assert done.returncode == 0, done.stderr
    asked = run("search", "Quantos incidentes houve?", "--tenant", "notes", "--json", dsn=dsn)
    assert asked.returncode == 0, asked.stderr
    rows = json.loads(asked.stdout)
    said = rows[0]["reason"] if rows else ""
    assert 'no chunk holds every word of "incidentes"' in said and "unknown, not zero" in said, said
    assert all(row["payload"]["matching"]["known"] is False for row in rows)
    english = json.loads(run("search", "How many incidents were there?", "--tenant", "notes", "--json", dsn=dsn).stdout)
    assert '3 chunks in 3 documents hold every word of "incidents"' in english[0]["reason"]
    assert english[0]["payload"]["matching"]["known"] is True
    # nothing found for a count: the shell never says that nothing in the collection answers it
    nothing = run("search", "Quantos sinistros houve?", "--tenant", "notes", dsn=dsn)
    shown = " ".join(nothing.stdout.split())
    assert "unknown, not zero" in shown and "no rows (the reason above says why)" in shown, shown
    assert "nothing in the collection" not in shown
    empty = run("context", "Quantos sinistros houve?", "--tenant", "notes", dsn=dsn)
    assert "(empty: no rows; " in empty.stdout, empty.stdout + empty.stderr

"""A team's folder through `pgkgrag ingest`, as a new user runs it: PDF, HTML, DOCX and Markdown
files (the fixtures and real files of this machine) beside every kind of bad file; what each file
became, in SQL; pages and headings in search rows, context tags and answers; re-ingestion by
content."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import psycopg
import pytest
from commands import run, summary
from documents import BAD_FILES, FIXTURES, add_bad_files
from fake_openai import FakeOpenAI
from ingesting import CountingEmbedder

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.ingest.extractors.choice import AutoExtractor
from pgkgrag.ingest.ingestor import Ingestor

GOOD = ("handbook.docx", "handbook.html", "handbook.md", "handbook.pdf", "notes/meeting-notes.md")
REAL = [p for p in (Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),) if p.exists()]
ESCALATION = "Who does the on-call engineer call when the Quartz Database is unavailable?"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The fixtures (the handbook in four formats, the meeting notes in a subfolder), a real PDF of
    this machine where there is one, and one bad file of each kind."""
    root = tmp_path / "team"
    (root / "notes").mkdir(parents=True)
    for name in GOOD:
        shutil.copy(FIXTURES / Path(name).name, root / name)
    for path in REAL:
        shutil.copy(path, root)
    add_bad_files(root)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main")  # hidden: left alone
    return root


def rows(dsn: str, query: str, *params: object) -> list[tuple]:
    with psycopg.connect(dsn) as conn, tenant_transaction(conn, "acme"):
        return conn.execute(query, list(params)).fetchall()  # type: ignore[arg-type]


def test_a_mixed_folder_is_stored_with_pages_and_headings_and_every_bad_file_recorded(folder: Path, dsn: str) -> None:
    first = run("ingest", str(folder), "--embedder", "hash", "--tenant", "acme", dsn=dsn)
    assert first.returncode == 1, first.stderr  # some files failed: the run says so
    assert "Traceback" not in first.stderr
    for name in BAD_FILES:
        assert f"rejected {folder / name}:" in " ".join(first.stderr.split()), name
    table = summary(first.stdout)
    stored = [*GOOD, *(p.name for p in REAL)]
    assert table["documents read"] == table["written"] == str(len(stored))
    assert table["rejected input"] == table["of which files"] == str(len(BAD_FILES))
    assert table["of which JSONL lines"] == "0"
    assert rows(dsn, "SELECT doc_id FROM kgrag.document ORDER BY doc_id") == [(d,) for d in sorted(stored)]
    failures = dict(rows(dsn, "SELECT doc_id, reason FROM kgrag.ingest_failure"))
    assert sorted(failures) == list(BAD_FILES)
    assert "encrypted" in failures["encrypted.pdf"] and "setting max_file_mb" in failures["huge.pdf"]

    # titles are the documents' own; a PDF's chunks keep their pages, every format its headings
    titles = dict(rows(dsn, "SELECT doc_id, title FROM kgrag.document"))
    assert {titles[d] for d in GOOD[:4]} == {"Northwind Operations Handbook"}
    assert titles["notes/meeting-notes.md"] == "BUG REPORTS"
    pdf = rows(dsn, "SELECT page, headings FROM kgrag.chunks WHERE doc_id = 'handbook.pdf' ORDER BY ordinal")
    # (sections too small to stand alone go with the next on their page, under the headings shared)
    assert pdf == [
        (1, ["Northwind Operations Handbook"]),
        (2, ["Northwind Operations Handbook", "Services and owners"]),
        (3, ["Northwind Operations Handbook", "On call"]),
        (4, ["Northwind Operations Handbook", "Changes"]),
    ]
    html = rows(dsn, "SELECT DISTINCT page, headings[2] FROM kgrag.chunks WHERE doc_id = 'handbook.html'")
    assert "Services and owners" in {h for _, h in html} and {p for p, _ in html} == {None}
    if REAL:
        pages = rows(dsn, "SELECT count(DISTINCT page) FROM kgrag.chunks WHERE doc_id = %s", REAL[0].name)
        assert pages[0][0] > 1

    # markup is not in entities, nor the section headings of the notes (the title's name is, by
    # design: what a document's title names is what it is about)
    names = [name for (name,) in rows(dsn, "SELECT name FROM kgrag.entity")]
    assert names and not [n for n in names if any(mark in n for mark in ("===", "---", "#", "**", "\n"))]
    assert not {"Attendees", "Decision", "Risk", "Budget", "Action"} & set(names)

    # search rows carry the page and headings; the table prints them
    found = run("search", ESCALATION, "--tenant", "acme", "--route", "vector", "--json", dsn=dsn)
    assert found.returncode == 0, found.stderr
    payloads = {r["ref_id"]: r["payload"] for r in json.loads(found.stdout) if r["kind"] == "chunk"}
    on_pdf = [p for ref, p in payloads.items() if ref.startswith("handbook.pdf#")]
    assert on_pdf and all(p["page"] >= 1 and p["headings"][0] == "Northwind Operations Handbook" for p in on_pdf)
    shown = run("search", ESCALATION, "--tenant", "acme", "--route", "vector", dsn=dsn)
    assert "§ Northwind Operations Handbook > On call" in " ".join(shown.stdout.split())

    # the second run: nothing changed, the same failures, nothing written twice
    again = run("ingest", str(folder), "--tenant", "acme", dsn=dsn)
    assert again.returncode == 1 and summary(again.stdout)["unchanged (skipped)"] == str(len(stored))
    assert sorted(d for (d,) in rows(dsn, "SELECT doc_id FROM kgrag.ingest_failure")) == list(BAD_FILES)
    # a bad file mended is stored and its failure forgotten
    shutil.copy(FIXTURES / "handbook.pdf", folder / "encrypted.pdf")
    mended = run("ingest", str(folder), "--tenant", "acme", dsn=dsn)
    assert summary(mended.stdout)["written"] == "1"
    assert "encrypted.pdf" not in {d for (d,) in rows(dsn, "SELECT doc_id FROM kgrag.ingest_failure")}


def test_answers_cite_the_page_and_the_section(folder: Path, dsn: str) -> None:
    for name in BAD_FILES:
        (folder / name).unlink()
    stored = run("ingest", str(folder), "--embedder", "hash", "--tenant", "acme", dsn=dsn)
    assert stored.returncode == 0, stored.stderr
    fake = FakeOpenAI()
    tags: list[str] = []

    def cite_escalation(messages: list[dict[str, str]]) -> str:
        lines = messages[-1]["content"].splitlines()
        tagged = [line for line in lines if line.startswith("[handbook.pdf ")]
        tags.extend(tagged)
        chosen = next((line for line in tagged if "Tomas Okafor" in line), tagged[0])
        return f"The on-call engineer calls Tomas Okafor. {chosen[: chosen.index(']') + 1]}"

    fake.responder = cite_escalation  # type: ignore[assignment]
    try:
        env = {"KGRAG_LLM_URL": fake.url, "KGRAG_LLM_RETRIES": "1"}
        asked = run("ask", ESCALATION, "--tenant", "acme", "--route", "vector", "--json", dsn=dsn, **env)
        assert asked.returncode == 0, asked.stderr
        answer = json.loads(asked.stdout)
        (citation,) = answer["citations"]
        assert citation["doc_id"] == "handbook.pdf" and citation["page"] == 3
        assert citation["headings"] == ["Northwind Operations Handbook", "On call"]
        source = "handbook.pdf p.3 § Northwind Operations Handbook > On call"
        assert citation["source"] == source
        assert f"[{source} | {citation['chunk_id']}]" in answer["answer"]
        assert tags and all(" p." in tag for tag in tags)  # every PDF chunk the LLM read named its page
        shown = run("ask", ESCALATION, "--tenant", "acme", "--route", "vector", dsn=dsn, **env)
        assert "p.3 § Northwind Operations Handbook > On call" in " ".join(shown.stdout.split())
    finally:
        fake.close()


def test_re_ingestion_goes_by_content(folder: Path, dsn: str, conn: psycopg.Connection) -> None:
    for name in BAD_FILES:
        (folder / name).unlink()
    embedder = CountingEmbedder()

    def ingest() -> tuple[int, int]:
        done = Ingestor(conn, "acme", AutoExtractor(), embedder).run([folder])
        return done.written, done.unchanged

    assert ingest() == (len(GOOD) + len(REAL), 0)
    chunks_before = dict(rows(dsn, "SELECT chunk_id, content_hash FROM kgrag.chunk WHERE doc_id = 'handbook.md'"))
    embedder.calls.clear()
    # the same file converted again (touched, rewritten unchanged): nothing changes
    (folder / "handbook.html").write_bytes((folder / "handbook.html").read_bytes())
    assert ingest() == (0, len(GOOD) + len(REAL)) and embedder.calls == []
    # one section changed: the document is written again, only the changed chunk embedded
    text = (folder / "handbook.md").read_text()
    (folder / "handbook.md").write_text(text.replace("fifteen minutes", "five minutes"))
    assert ingest() == (1, len(GOOD) + len(REAL) - 1)
    texts = {t for (t,) in rows(dsn, "SELECT text FROM kgrag.chunk")}
    embedded = texts & set(embedder.calls)  # (the rest of the calls: entities the change made)
    assert len(embedded) == 1 and "five minutes" in embedded.pop()
    chunks_after = dict(rows(dsn, "SELECT chunk_id, content_hash FROM kgrag.chunk WHERE doc_id = 'handbook.md'"))
    assert chunks_after.keys() == chunks_before.keys()
    assert sum(chunks_after[c] != chunks_before[c] for c in chunks_after) == 1
    # a renamed file is a new document (its doc_id is its path); the old one stays until deleted
    (folder / "handbook.md").rename(folder / "runbook.md")
    assert ingest() == (1, len(GOOD) + len(REAL) - 1)
    docs = {d for (d,) in rows(dsn, "SELECT doc_id FROM kgrag.document")}
    assert {"handbook.md", "runbook.md"} <= docs


def test_links_and_empty_files_are_named_once_under_their_place_in_the_folder(dsn: str, tmp_path: Path) -> None:
    """A link inside the folder (to a file of it, to a folder outside it) is not followed: no
    document stored twice, nothing read from outside; every file not taken is a line of the run and
    a failure row whose doc_id is its path in the folder (the doc_id it would have had); the summary's
    counts add up."""
    team, outside = tmp_path / "team", tmp_path / "outside"
    (team / "sub").mkdir(parents=True)
    outside.mkdir()
    (team / "a.md").write_text("# A\n\nAna Costa works at Contoso.\n")
    (team / "sub" / "s.md").write_text("# S\n\nA note about Contoso.\n")
    (outside / "secret.md").write_text("# Secret\n\nNot for this tenant.\n")
    (team / "b.md").symlink_to(team / "a.md")
    (team / "sub" / "elsewhere").symlink_to(outside)
    (team / "empty.txt").write_text("")
    (team / "lines.jsonl").write_text('{"doc_id": "j1"}\n')
    done = run("ingest", str(team), "--embedder", "hash", "--tenant", "acme", dsn=dsn)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    said = " ".join(done.stderr.split())
    assert f"rejected {team / 'b.md'}: a symbolic link (to {team / 'a.md'}): not followed" in said
    assert f"rejected {team / 'sub' / 'elsewhere'}: a symbolic link (to {outside}): not followed" in said
    table = summary(done.stdout)
    assert (table["written"], table["rejected input"], table["of which files"], table["of which JSONL lines"]) == (
        "2",
        "4",
        "3",
        "1",
    )
    assert rows(dsn, "SELECT doc_id FROM kgrag.document ORDER BY 1") == [("a.md",), ("sub/s.md",)]
    failures = sorted(d for (d,) in rows(dsn, "SELECT doc_id FROM kgrag.ingest_failure"))
    # (a JSONL line without a doc_id is kept under its file and line)
    assert failures[1:] == ["b.md", "empty.txt", "sub/elsewhere"] and failures[0].endswith("lines.jsonl:1"), failures
    # a link named on the command line was asked for: it is read (under its own name)
    named = run("ingest", str(team / "b.md"), "--embedder", "hash", "--tenant", "acme", dsn=dsn)
    assert named.returncode == 0, named.stderr
    assert ("b.md",) in rows(dsn, "SELECT doc_id FROM kgrag.document ORDER BY 1")

"""The local route puts the seeds' own pages first: a question naming a subject that has a page of
its own in the collection (a document titled with its name) gets that page's answer chunk among
its first rows, in the seeds' order, at most half of them, even where the vector and lexical lists
prefer the many chunks about another subject the question names."""

from __future__ import annotations

from pathlib import Path

import psycopg
from ingesting import ingest

from pgkgrag.build import build
from pgkgrag.embedders import HashEmbedder
from pgkgrag.gazetteer import GazetteerExtractor, KnownName
from pgkgrag.search import SearchResult, run_search

QUESTION = "Which plant is larger, the Pterocarya or the Cotula?"
CROWD = {  # pages about other plants of the genus Cotula: the words of the question, again and again
    f"c{i}": (f"Cotula species {i}", f"Cotula species {i} is a small plant of the genus Cotula, larger than most.")
    for i in range(6)
}
PAGES = {
    "cotula": ("Cotula", "Cotula is a genus of small plants in the daisy family, found in the south."),
    "ptero": ("Pterocarya", "Pterocarya is a genus of trees known as wingnuts, up to 30 metres tall."),
    "notes": ("Field notes", "We saw Pterocarya trees by the river and Cotula by the path."),
}


def load(conn: psycopg.Connection, tmp_path: Path, pages: dict[str, tuple[str, str]]) -> HashEmbedder:
    docs = [{"doc_id": d, "title": title, "text": text} for d, (title, text) in (CROWD | pages).items()]
    names = [KnownName(title, "Plant") for title, _ in (CROWD | PAGES | pages).values() if title != "Field notes"]
    embedder = HashEmbedder(512)
    assert ingest(conn, tmp_path, docs, extractor=GazetteerExtractor(names), embedder=embedder).ok
    build(conn, "t1", embedder)
    return embedder


def search(conn: psycopg.Connection, embedder: HashEmbedder, route: str, k: int) -> SearchResult:
    return run_search(conn, "t1", embedder, QUESTION, route, k, {})


def test_the_named_subjects_pages_come_first(conn: psycopg.Connection, tmp_path: Path) -> None:
    embedder = load(conn, tmp_path, PAGES)
    vector = search(conn, embedder, "vector", 4)
    assert "ptero#0" not in vector.chunks()  # the fused lists alone leave the page out
    local = search(conn, embedder, "local", 4)
    assert local.chunks()[:2] == ["ptero#0", "cotula#0"]  # the seeds' order: the rarer name first
    first = [r for r in local.rows if r.kind == "chunk"][:2]
    assert [r.payload["ranks"]["own_page"] for r in first] == [1, 2] and {r.source for r in first} == {"graph"}
    assert len(local.chunks()) == 4 and "first the seeds' own pages" in local.reason
    others = [r for r in local.rows if r.kind == "chunk"][2:]
    assert all("own_page" not in r.payload["ranks"] for r in others)


def test_at_most_half_of_the_rows(conn: psycopg.Connection, tmp_path: Path) -> None:
    embedder = load(conn, tmp_path, PAGES)
    for k, pinned in ((1, 0), (2, 1), (3, 1), (5, 2)):
        rows = [r for r in search(conn, embedder, "local", k).rows if r.kind == "chunk"]
        assert len(rows) == k
        assert sum("own_page" in r.payload["ranks"] for r in rows) == pinned, k


def test_a_subject_without_a_page_of_its_own_is_not_pinned(conn: psycopg.Connection, tmp_path: Path) -> None:
    """Without the page titled Pterocarya, its answer comes from the field notes: that chunk is
    evidence like any other, not a page about it."""
    embedder = load(conn, tmp_path, {d: page for d, page in PAGES.items() if d != "ptero"})
    local = search(conn, embedder, "local", 4)
    ranks = {r.ref_id: r.payload["ranks"] for r in local.rows if r.kind == "chunk"}
    assert local.chunks()[0] == "cotula#0" and ranks["cotula#0"]["own_page"] == 1
    assert [c for c, r in ranks.items() if "own_page" in r] == ["cotula#0"]


def test_a_seed_the_question_does_not_name_word_for_word_is_not_pinned(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    """A misspelt name still seeds the walk (a fuzzy link), but a guess does not take a row first."""
    embedder = load(conn, tmp_path, PAGES)
    local = run_search(conn, "t1", embedder, "Which plant is larger, the Pterocaria or the Cotula?", "local", 4, {})
    assert "Pterocarya" in local.reason  # linked, and a seed
    ranks = {r.ref_id: r.payload["ranks"] for r in local.rows if r.kind == "chunk"}
    assert [c for c, r in ranks.items() if "own_page" in r] == ["cotula#0"]


def test_a_seed_linked_by_a_guess_is_not_pinned_though_its_name_is_a_word_of_the_question(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    """A page titled Time exists and "time" is a word of the question, but the question does not
    name it (lowercase, where the question capitalizes its names): if it seeds the walk at all, it
    is as a guess, and its page does not take a row first."""
    embedder = load(
        conn, tmp_path, PAGES | {"time": ("Time", "Time is what a clock measures, and Time is a magazine.")}
    )
    local = run_search(conn, "t1", embedder, "What time does the Pterocarya flower?", "local", 4, {})
    assert "Pterocarya, Time" in local.reason  # both seed the walk
    ranks = {r.ref_id: r.payload["ranks"] for r in local.rows if r.kind == "chunk"}
    assert [c for c, r in ranks.items() if "own_page" in r] == ["ptero#0"]

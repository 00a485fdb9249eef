"""Chunking: exact offsets, size limit, overlap, headings kept with their section."""

from __future__ import annotations

import itertools

import pytest

from pgkgrag.ingest.chunking import ChunkSettings, chunk_text

SETTINGS = ChunkSettings(max_chars=300, min_chars=100, overlap_chars=40)
DOC = (
    """# Runbook

The auth service issues tokens. It depends on the session store.

## Incidents

"""
    + " ".join(f"Incident {i} hit the payment module at night and was fixed by the on-call team." for i in range(12))
    + """

## Contacts

The IAM team owns the service.
"""
)


def test_offsets_are_exact_and_cover_the_text() -> None:
    chunks = chunk_text(DOC, "Runbook", SETTINGS)
    assert len(chunks) > 3
    for c in chunks:
        assert DOC[c.char_start : c.char_end] == c.text
        assert len(c.text) <= SETTINGS.max_chars
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    covered = set()
    for c in chunks:
        covered.update(range(c.char_start, c.char_end))
    assert all(i in covered for i, ch in enumerate(DOC) if not ch.isspace())


def test_consecutive_chunks_overlap() -> None:
    # the overlap repeats whole sentences that fit in it (these are 77 characters)
    chunks = chunk_text(DOC, "Runbook", ChunkSettings(max_chars=300, min_chars=100, overlap_chars=90))
    incident = [c for c in chunks if c.title == "Incidents"]
    assert len(incident) >= 2
    assert all(b.char_start < a.char_end for a, b in itertools.pairwise(incident))
    assert not any(b.char_start < a.char_end for a, b in itertools.pairwise(chunks) if a.title != b.title)


def test_headings_stay_with_their_section_and_title_it() -> None:
    chunks = chunk_text(DOC, "Runbook", SETTINGS)
    assert not any(c.text.strip().startswith("#") and "\n" not in c.text.strip() for c in chunks)
    assert chunks[0].title == "Runbook"
    assert chunks[-1].title == "Contacts" and "IAM team" in chunks[-1].text


def test_a_short_document_is_one_chunk() -> None:
    chunks = chunk_text("Just one line.", "T", SETTINGS)
    assert [(c.char_start, c.char_end, c.title) for c in chunks] == [(0, 14, "T")]


@pytest.mark.parametrize("text", ["   leading spaces and unicode: café, 東京, emoji 🙂 end", "a" * 1000])
def test_unicode_and_unbroken_text(text: str) -> None:
    for c in chunk_text(text, "", SETTINGS):
        assert text[c.char_start : c.char_end] == c.text and len(c.text) <= SETTINGS.max_chars


def test_text_before_the_first_heading_takes_no_chapter_with_it() -> None:
    """Review: a short preamble with no heading is nobody's parent: each chapter after it is cut
    under its own heading."""
    from pgkgrag.ingest.inputs import SectionIn

    text = "Draft v2." + "\n\n" + "On call text. " * 5 + "\n\n" + "Changes text. " * 5
    first = len("Draft v2.")
    second = first + 2 + len("On call text. " * 5)
    sections = [
        SectionIn(start=0, end=first, page=None, headings=[]),
        SectionIn(start=first + 2, end=second, page=None, headings=["On call"]),
        SectionIn(start=second + 2, end=len(text), page=None, headings=["Changes"]),
    ]
    chunks = chunk_text(text, "doc", SETTINGS, sections)
    assert [c.headings for c in chunks] == [(), ("On call",), ("Changes",)]

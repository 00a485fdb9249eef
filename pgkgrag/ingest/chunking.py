"""Chunking: paragraph-, heading- and sentence-aware pieces with a size limit, a small overlap and
exact character offsets (chunk.text == document.text[char_start:char_end]).

The splitting itself is semantic-text-splitter's MarkdownSplitter (Rust): it cuts at the highest
semantic level that fits (sections, paragraphs, sentences, words). On top of it we only keep
headings with what follows them and give every chunk the title of its section. A document a reader
converted comes with its sections (the page and headings of each span): it is cut within them, a
chunk never spans two headings (sections too small to stand alone go with the ones after them,
under the headings they share), and each chunk keeps the page it starts on and its headings.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from semantic_text_splitter import MarkdownSplitter

from pgkgrag.ingest.inputs import SectionIn

# a Markdown heading line; its closing #s and spaces are stripped by heading_text (a pattern that
# stripped them itself took cubic time on a heading with a long run of spaces inside: minutes)
_HEADING = re.compile(r"^#{1,6}[ \t]+(\S.*)$", re.M)
SEGMENT_CHUNKS = 8  # the splitter is given pieces of at most this many chunks' length


def heading_text(line: str) -> str:
    """What a heading line matched by _HEADING says, without its closing sequence (`## Setup ##`)."""
    return line.rstrip(" \t").rstrip("#").rstrip(" \t") or line


def first_heading(text: str) -> str | None:
    """The text of the first Markdown heading of a text, if it has one."""
    found = _HEADING.search(text)
    return heading_text(found.group(1)) if found else None


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    char_start: int
    char_end: int
    title: str
    text: str
    page: int | None = None
    headings: tuple[str, ...] = ()

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass(frozen=True)
class ChunkSettings:
    """The tenant's settings chunk_max_chars, chunk_min_chars and chunk_overlap_chars."""

    max_chars: int
    min_chars: int
    overlap_chars: int

    def fingerprint(self) -> str:
        return f"chunker:md-v1:{self.min_chars}-{self.max_chars}-{self.overlap_chars}"


@lru_cache(maxsize=8)
def _splitter(settings: ChunkSettings) -> MarkdownSplitter:
    low = min(settings.min_chars, settings.max_chars)
    overlap = min(settings.overlap_chars, max(0, low - 1))
    return MarkdownSplitter((low, settings.max_chars), overlap=overlap)


def _segments(text: str, size: int) -> list[tuple[int, int]]:
    """(start, end) of consecutive pieces of at most `size` characters, cut at the last paragraph
    break, else line break, else space in the second half of each piece, else hard: the splitter
    takes time quadratic in the length of what it is given when that holds no boundary it likes,
    so it is given pieces of bounded size and the whole stays linear in the document's length."""
    cuts, start = [], 0
    while len(text) - start > size:
        window_start = start + size // 2
        end = start + size
        for boundary in ("\n\n", "\n", " "):
            found = text.rfind(boundary, window_start, end)
            if found >= 0:
                end = found + len(boundary)
                break
        cuts.append((start, end))
        start = end
    cuts.append((start, len(text)))
    return cuts


def _pieces(text: str, start: int, end: int, settings: ChunkSettings) -> list[tuple[int, int]]:
    """The splitter's pieces of text[start:end], as offsets into text."""
    splitter = _splitter(settings)
    return [
        (start + offset + at, start + offset + at + len(piece))
        for offset, stop in _segments(text[start:end], SEGMENT_CHUNKS * settings.max_chars)
        for at, piece in splitter.chunk_indices(text[start + offset : start + stop])
    ]


@dataclass(frozen=True)
class _Part:
    start: int
    end: int
    headings: tuple[str, ...]
    pages: tuple[int | None, int | None]  # the page it starts on and the page it ends on


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _joins(last: _Part, run: _Part, settings: ChunkSettings) -> bool:
    """Whether a part goes with the run after it: it is smaller than min_chars, they fit in
    max_chars together, on one page (a chunk cites the page it starts on), and the run is a
    subsection of it (never a sibling section or the next chapter: a chunk never spans two headings
    of the same or a higher level, and its headings are the part's own)."""
    return (
        last.end - last.start < settings.min_chars
        and run.end - last.start <= settings.max_chars
        and last.pages[1] == run.pages[0]
        and len(run.headings) > len(last.headings) > 0  # (text before any heading is nobody's parent)
        and _common(last.headings, run.headings) == last.headings
    )


def _parts(sections: Sequence[SectionIn], settings: ChunkSettings) -> list[_Part]:
    """The runs of sections under the same headings, a small one joined with the runs after it
    (see _joins) under the headings they share."""
    runs: list[_Part] = []
    for s in sections:
        headings = tuple(s.headings)
        if runs and runs[-1].headings == headings:
            runs[-1] = _Part(runs[-1].start, s.end, headings, (runs[-1].pages[0], s.page))
        else:
            runs.append(_Part(s.start, s.end, headings, (s.page, s.page)))
    merged: list[_Part] = []
    for run in runs:
        last = merged[-1] if merged else None
        if last and _joins(last, run, settings):
            merged[-1] = _Part(last.start, run.end, _common(last.headings, run.headings), (last.pages[0], run.pages[1]))
        else:
            merged.append(run)
    return merged


def chunk_sections(text: str, title: str, settings: ChunkSettings, sections: Sequence[SectionIn]) -> list[Chunk]:
    """Cut a converted document within its sections; each chunk keeps the page it starts on and
    the headings of its part."""
    starts = [s.start for s in sections]
    chunks: list[Chunk] = []
    for part in _parts(sections, settings):
        for start, end in _pieces(text, part.start, part.end, settings):
            page = sections[max(0, bisect.bisect_right(starts, start) - 1)].page
            chunk_title = part.headings[-1] if part.headings else title
            chunks.append(Chunk(len(chunks), start, end, chunk_title, text[start:end], page, part.headings))
    return chunks


def chunk_text(text: str, title: str, settings: ChunkSettings, sections: Sequence[SectionIn] = ()) -> list[Chunk]:
    """Cut a document into chunks; a document that fits is one chunk."""
    if sections:
        return chunk_sections(text, title, settings, sections)
    pieces = _pieces(text, 0, len(text), settings)
    merged: list[tuple[int, int]] = []
    for start, end in pieces:
        # A piece that is only a heading goes with the piece after it.
        if merged and _HEADING.fullmatch(text[merged[-1][0] : merged[-1][1]].strip()):
            start = merged.pop()[0]
        merged.append((start, end))
    headings = [(m.start(), heading_text(m.group(1))) for m in _HEADING.finditer(text)]
    positions = [pos for pos, _ in headings]
    chunks = []
    for ordinal, (start, end) in enumerate(merged):
        # the title is the heading of the section the chunk starts in (it may open with it)
        index = bisect.bisect_right(positions, start) - 1
        chunk_title = headings[index][1] if index >= 0 else title
        chunks.append(Chunk(ordinal, start, end, chunk_title, text[start:end]))
    return chunks

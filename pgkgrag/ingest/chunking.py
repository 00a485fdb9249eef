"""Chunking: paragraph-, heading- and sentence-aware pieces with a size limit, a small overlap and
exact character offsets (chunk.text == document.text[char_start:char_end]).

The splitting itself is semantic-text-splitter's MarkdownSplitter (Rust): it cuts at the highest
semantic level that fits (sections, paragraphs, sentences, words). On top of it we only keep
headings with what follows them and give every chunk the title of its section.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache

from semantic_text_splitter import MarkdownSplitter

_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
SEGMENT_CHUNKS = 8  # the splitter is given pieces of at most this many chunks' length


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    char_start: int
    char_end: int
    title: str
    text: str

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


def chunk_text(text: str, title: str, settings: ChunkSettings) -> list[Chunk]:
    """Cut a document into chunks; a document that fits is one chunk."""
    splitter = _splitter(settings)
    pieces = [
        (offset + start, offset + start + len(piece))
        for offset, end in _segments(text, SEGMENT_CHUNKS * settings.max_chars)
        for start, piece in splitter.chunk_indices(text[offset:end])
    ]
    merged: list[tuple[int, int]] = []
    for start, end in pieces:
        # A piece that is only a heading goes with the piece after it.
        if merged and _HEADING.fullmatch(text[merged[-1][0] : merged[-1][1]].strip()):
            start = merged.pop()[0]
        merged.append((start, end))
    headings = [(m.start(), m.group(1)) for m in _HEADING.finditer(text)]
    positions = [pos for pos, _ in headings]
    chunks = []
    for ordinal, (start, end) in enumerate(merged):
        # the title is the heading of the section the chunk starts in (it may open with it)
        index = bisect.bisect_right(positions, start) - 1
        chunk_title = headings[index][1] if index >= 0 else title
        chunks.append(Chunk(ordinal, start, end, chunk_title, text[start:end]))
    return chunks

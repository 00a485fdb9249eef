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


def chunk_text(text: str, title: str, settings: ChunkSettings) -> list[Chunk]:
    """Cut a document into chunks; a document that fits is one chunk."""
    pieces = [(start, start + len(piece)) for start, piece in _splitter(settings).chunk_indices(text)]
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

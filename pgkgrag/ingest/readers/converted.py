"""A document as a reader converts it: its own title, its text (blocks of plain text, no markup,
separated by blank lines) and where each block stands in it: the page (PDF, 1-based) and the path of
headings above it. The chunker cuts within sections, so a citation names the page and the section."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)*")


@dataclass(frozen=True)
class Section:
    """A run of the converted text under one heading path on one page: text[start:end]."""

    start: int
    end: int
    page: int | None
    headings: tuple[str, ...]


@dataclass(frozen=True)
class Converted:
    title: str | None
    text: str
    sections: tuple[Section, ...]


def clean(text: str) -> str:
    """A block's text: runs of spaces as one, lines trimmed, no blank line inside (a blank line
    separates blocks), no control character but the newline and the tab."""
    text = "".join(ch for ch in text if ch in "\n\t" or ch >= " ").replace("\r", "")
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n", "\n".join(line for line in lines if line)).strip()


@dataclass
class Builder:
    """Blocks appended in reading order; headings and pages change where the next blocks go."""

    page: int | None = None
    headings: tuple[str, ...] = ()
    levels: tuple[int, ...] = ()  # the level of each heading of the path, increasing
    parts: list[str] = field(default_factory=list)
    length: int = 0
    sections: list[Section] = field(default_factory=list)

    def heading(self, level: int, text: str) -> None:
        """A heading of level 0-6 (0: a document's title above its first level): the path above the
        blocks that follow keeps the headings of a higher level (a smaller number) and then this one."""
        text = clean(text).replace("\n", " ")
        if text:
            kept = sum(1 for above in self.levels if above < level)
            self.headings = (*self.headings[:kept], text)
            self.levels = (*self.levels[:kept], level)

    def block(self, text: str) -> None:
        text = clean(text)
        if not text:
            return
        separator = "\n\n" if self.parts else ""
        start = self.length + len(separator)
        self.parts.append(separator + text)
        self.length = start + len(text)
        last = self.sections[-1] if self.sections else None
        if last is not None and (last.page, last.headings) == (self.page, self.headings):
            self.sections[-1] = Section(last.start, self.length, last.page, last.headings)
        else:
            self.sections.append(Section(start, self.length, self.page, self.headings))

    def result(self, title: str | None) -> Converted:
        return Converted(clean(title).replace("\n", " ") if title else None, "".join(self.parts), tuple(self.sections))

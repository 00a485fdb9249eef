"""PDF: the text of each page (pypdfium2, PDFium's text layer), with its physical page number, and
the sections the document's outline (bookmarks) names, placed where their titles stand on their
pages. The title is the document's (its metadata), else the first line of its first page."""

from __future__ import annotations

import re
from pathlib import Path

from pgkgrag.ingest.readers.converted import Builder, Converted, clean
from pgkgrag.ingest.readers.errors import ReaderError

_HYPHENATED = re.compile(r"(?<=[a-z])-\n(?=[a-z])")  # a word cut at the end of a line
_PARAGRAPH = re.compile(r"\n[ \t]*\n")


def _outline(doc: object) -> list[tuple[int, str, int]]:
    """(level 1-6, title, page index) of each bookmark that points at a page, in outline order."""
    found = []
    try:
        for bookmark in doc.get_toc():  # type: ignore[attr-defined]
            dest = bookmark.get_dest()
            index = dest.get_index() if dest is not None else None
            title = clean(bookmark.get_title() or "").replace("\n", " ")
            if index is not None and title:
                found.append((min(bookmark.level + 1, 6), title, index))
    except Exception:
        return []
    return found


def _blocks(builder: Builder, text: str) -> None:
    for paragraph in _PARAGRAPH.split(_HYPHENATED.sub("", text)):
        builder.block(paragraph)


def _find(title: str, text: str, start: int) -> int:
    """Where a bookmark's title stands in the page text (spaces and case aside), or -1."""
    pattern = r"\s+".join(re.escape(word) for word in title.split())
    match = re.compile(pattern, re.I).search(text, start)
    return match.start() if match else -1


def read_pdf(path: Path) -> Converted:
    import pypdfium2 as pdfium

    try:
        doc = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise ReaderError("the PDF is encrypted: it cannot be read without its password") from exc
        raise ReaderError(f"not a readable PDF (damaged or truncated?): {exc}") from exc
    try:
        outline = _outline(doc)
        builder = Builder()
        first_line = ""
        for index in range(len(doc)):
            page = doc[index]
            text = page.get_textpage().get_text_range().replace("\r\n", "\n").replace("\r", "\n")
            builder.page = index + 1
            cursor = 0
            for level, title, _ in (mark for mark in outline if mark[2] == index):
                at = _find(title, text, cursor)
                if at >= 0:
                    _blocks(builder, text[cursor:at])
                    cursor = at + len(title)
                    line_end = text.find("\n", cursor)
                    cursor = line_end + 1 if line_end >= 0 and not text[cursor:line_end].strip() else cursor
                builder.heading(level, title)
            _blocks(builder, text[cursor:])
            if not first_line:
                first_line = next((line.strip() for line in text.split("\n") if line.strip()), "")
        metadata = doc.get_metadata_dict()
    finally:
        doc.close()
    if not builder.parts:
        raise ReaderError("the PDF has no text layer (a scanned document?): pgkgrag does not do OCR")
    title = (metadata.get("Title") or "").strip() or (first_line if len(first_line) <= 200 else "")
    return builder.result(title or None)

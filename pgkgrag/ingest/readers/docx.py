"""DOCX: the paragraphs and tables of the body in order (python-docx), headings (styles Title and
Heading 1-6) as the sections, each table as one block of rows. The title is the document's (its core
properties), else its first heading. A file whose parts would unzip past a limit is refused before
anything is unzipped (a zip bomb)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from pgkgrag.ingest.readers.converted import Builder, Converted
from pgkgrag.ingest.readers.errors import ReaderError

MAX_RATIO = 200  # unzipped / zipped size past which a part is taken for a bomb, not a document


def _check_zip(path: Path, max_bytes: int) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ReaderError(f"not a readable DOCX (damaged or truncated zip?): {exc}") from exc
    total = sum(part.file_size for part in parts)
    if total > max_bytes:
        raise ReaderError(f"the DOCX unzips to {total / 2**20:.0f} MB, above {max_bytes / 2**20:.0f} MB (a zip bomb?)")
    for part in parts:
        if part.compress_size and part.file_size / part.compress_size > MAX_RATIO and part.file_size > 2**20:
            raise ReaderError(
                f"part {part.filename} of the DOCX unzips {part.file_size // part.compress_size}-fold (a zip bomb?)"
            )


def _level(style: str) -> int | None:
    """The heading level a paragraph style stands for: Title 0 (above Heading 1), Heading N N, else None."""
    if style == "Title":
        return 0
    if style.startswith("Heading "):
        level = style.removeprefix("Heading ").strip()
        return int(level) if level.isdigit() and 1 <= int(level) <= 6 else None
    return None


def read_docx(path: Path, max_bytes: int) -> Converted:
    _check_zip(path, max_bytes)
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(str(path))
    except Exception as exc:
        raise ReaderError(f"not a readable DOCX: {exc}") from exc
    builder = Builder()
    first_heading = ""
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            rows = [" | ".join(cell.text.strip() for cell in row.cells) for row in item.rows]
            builder.block("\n".join(row for row in rows if row.strip(" |")))
        elif isinstance(item, Paragraph):
            level = _level(item.style.name if item.style is not None else "")
            if level is not None:
                builder.heading(level, item.text)
                first_heading = first_heading or item.text.strip()
            else:
                builder.block(item.text)
    if not builder.parts:
        raise ReaderError("the DOCX has no text")
    title = (document.core_properties.title or "").strip() or first_heading
    return builder.result(title or None)

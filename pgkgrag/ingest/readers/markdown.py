"""Markdown: read for its structure (markdown-it-py, CommonMark with tables): headings, ATX and
setext, are the sections and never part of the text; paragraphs, list items, code and each table
(as rows) are the blocks, with their markup (emphasis, links, fences, underlines) left out, so it
reaches neither the chunks nor entity names. The title is the first heading."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pgkgrag.ingest.readers.converted import Builder, Converted
from pgkgrag.ingest.readers.errors import ReaderError


def _inline(token: Any) -> str:
    """The plain text of an inline token: text, code and line breaks, without the markup."""
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content if child.type != "html_inline" else "")
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts)


def read_markdown(text: str) -> Converted:
    from markdown_it import MarkdownIt

    builder = Builder()
    title = ""
    heading_level = 0  # inside a heading of this level
    in_cell = False
    row: list[str] = []
    rows: list[str] = []
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.type == "heading_open":
            heading_level = int(token.tag[1])
        elif token.type in ("th_open", "td_open"):
            in_cell = True
        elif token.type == "inline" and heading_level:
            builder.heading(heading_level, _inline(token))
            title = title or _inline(token).strip()
            heading_level = 0
        elif token.type == "inline" and in_cell:
            row.append(_inline(token).strip())
            in_cell = False
        elif token.type == "inline":
            builder.block(_inline(token))
        elif token.type in ("fence", "code_block"):
            builder.block(token.content)
        elif token.type == "tr_close":
            rows.append(" | ".join(row))
            row = []
        elif token.type == "table_close":
            builder.block("\n".join(rows))
            rows = []
    return builder.result(title or None)


def read_markdown_file(path: Path) -> Converted:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ReaderError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise ReaderError(f"cannot read the file: {exc.strerror or exc}") from exc
    return read_markdown(text)

"""HTML: the text of the page in reading order (selectolax, the Lexbor HTML5 parser), headings as
the sections (a byline's heading is text), each table as one block of rows, without scripts,
styles, navigation (landmarks, the classes of navigation bars, a line of links to the previous,
next or upper page), headers, footers and forms. The title is the page's <title>, else its first
<h1>. A page that nests elements deeper than MAX_DEPTH is refused: before it is parsed when its
tags say so (nesting) and it has enough of them to keep the parser long, else by the walk of the
parsed page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pgkgrag.ingest.readers.converted import Builder, Converted
from pgkgrag.ingest.readers.errors import ReaderError
from pgkgrag.ingest.readers.nesting import too_deep

SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "svg", "iframe",
     "button", "select", "textarea", "head", "object", "canvas"}
)  # fmt: skip
BLOCKS = frozenset(
    {"p", "div", "li", "ul", "ol", "dl", "dd", "dt", "section", "article", "main", "body", "blockquote",
     "figure", "figcaption", "address", "details", "summary", "center", "hr", "caption", "html"}
)  # fmt: skip
HEADINGS = {f"h{level}": level for level in range(1, 7)}
# landmarks that are not the page's content, whatever their tag (ARIA roles)
SKIPPED_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary", "menu", "menubar"})
# classes documentation generators give what is not the page's content (DocBook's navigation bars,
# breadcrumbs), whatever the tag
SKIPPED_CLASSES = frozenset({"navheader", "navfooter", "navigation", "navbar", "breadcrumb", "breadcrumbs"})
# a heading of one of these classes is a byline, not a section (DocBook: <h3 class="author">)
BYLINE_CLASSES = frozenset({"author", "corpauthor", "editor", "othercredit", "byline"})
# links to the neighbouring pages (texinfo's "Previous: ..., Up: ..." line above and below a page)
NEIGHBOUR_LINKS = 'a[rel~="prev"], a[rel~="next"], a[rel~="up"]'
NAVIGATION_LINE = 300  # a paragraph or table holding them, at most this long, only links and labels: navigation
NAVIGATION_LABELS = frozenset({"previous", "prev", "next", "up", "top", "home", "index", "contents", "back"})
# without rel: only labels with a colon around the links, one of them to a neighbour ("Next: ..., Up: ...")
_LABELS = "|".join(sorted(NAVIGATION_LABELS))
_LABELLED_LINE = re.compile(rf"(?:[^\w:]*\b(?:{_LABELS})\s*:)*[^\w:]*", re.I)
_NEIGHBOUR_LABEL = re.compile(r"\b(?:previous|prev|next|up)\s*:", re.I)
_LABEL_WORD = re.compile(r"[^\W\d_]+")
PERMALINK = "\u00b6\u00a7#"  # the marks documentation generators put after a heading: ¶ § #
MAX_DEPTH = 512  # elements within elements: where browsers stop nesting them
# a page of fewer tags is parsed in half a second however it nests (the parser's time grows with
# the depth times the length; 20,000 divs, each in the one before: 0.5 s): its walk checks it
SCANNED_FROM = 20_000
TOO_DEEP = f"the page nests elements more than {MAX_DEPTH} deep (browsers stop nesting there): not read"


class _Walk:
    def __init__(self) -> None:
        self.builder = Builder()
        self.pending: list[str] = []

    def flush(self) -> None:
        if self.pending:
            self.builder.block("".join(self.pending))
            self.pending = []

    def visit(self, node: Any, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise ReaderError(TOO_DEEP)
        tag = node.tag
        if tag == "-text":
            self.pending.append(node.text_content or "")
        elif tag in SKIPPED or tag.startswith("-") or (node.attributes.get("role") or "") in SKIPPED_ROLES:
            return  # (a tag starting with "-": a comment, the doctype)
        elif _classes(node) & SKIPPED_CLASSES or _navigation_line(node):
            return
        elif tag in HEADINGS and _classes(node) & BYLINE_CLASSES:  # a byline: a line of text of its own
            self.flush()
            self.builder.block(node.text(deep=True, separator=" "))
        elif tag in HEADINGS:
            self.flush()
            self.builder.heading(HEADINGS[tag], node.text(deep=True, separator=" ").strip().rstrip(PERMALINK))
        elif tag == "table":
            self.flush()
            rows = [
                " | ".join(cell.text(deep=True, separator=" ").strip() for cell in row.css("th, td"))
                for row in node.css("tr")
            ]
            self.builder.block("\n".join(row for row in rows if row.strip(" |")))
        elif tag == "pre":
            self.flush()
            self.builder.block(node.text(deep=True))
        elif tag == "br":
            self.pending.append("\n")
        elif tag in BLOCKS:
            self.flush()
            for child in node.iter(include_text=True):
                self.visit(child, depth + 1)
            self.flush()
        else:  # inline: its text joins the paragraph around it
            for child in node.iter(include_text=True):
                self.visit(child, depth + 1)


def _classes(node: Any) -> set[str]:
    """(lower-cased: pages without a doctype, as DocBook's, match classes whatever their case)"""
    return set((node.attributes.get("class") or "").lower().split())


def _navigation_line(node: Any) -> bool:
    """A short paragraph or table of links to the previous, next or upper page, and nothing but
    links and their labels around them: a link to a neighbouring page (rel="prev") among labels
    ("Prev", "Up"), or, without rel (texinfo's copy below the text), labels with a colon, one of
    them a neighbour's ("Next: ..., Up: ..."): "Back up <a>the data</a>" is text."""
    links = node.css("a") if node.tag in ("p", "table") else []
    if not links:
        return False
    text = node.text(deep=True)
    if len(" ".join(text.split())) > NAVIGATION_LINE:
        return False
    for link in links:
        text = text.replace(link.text(deep=True), " ", 1)
    if node.css_first(NEIGHBOUR_LINKS) is not None:
        return set(_LABEL_WORD.findall(text.lower())) <= NAVIGATION_LABELS
    return _LABELLED_LINE.fullmatch(text) is not None and _NEIGHBOUR_LABEL.search(text) is not None


def read_html(path: Path) -> Converted:
    from selectolax.lexbor import LexborHTMLParser, SelectolaxError

    page = path.read_bytes()
    if page.count(b"<") >= SCANNED_FROM and too_deep(page, MAX_DEPTH):
        raise ReaderError(TOO_DEEP)
    try:
        tree = LexborHTMLParser(page)
    except SelectolaxError as exc:  # Lexbor gives up on no HTML but when it cannot allocate
        raise ReaderError("the HTML parser gave up on it (more memory than setting reader_memory_mb?)") from exc
    walk = _Walk()
    if tree.body is not None:
        walk.visit(tree.body)
        walk.flush()
    if not walk.builder.parts:
        raise ReaderError("the page has no text (only scripts, styles or markup?)")
    title_node = tree.css_first("title") or tree.css_first("h1")
    title = title_node.text(deep=True, separator=" ").strip() if title_node is not None else ""
    return walk.builder.result(title or None)

"""The readers on real files: the fixtures (tests/fixtures/documents, the same handbook as Markdown,
HTML, DOCX and PDF), the PDFs and web pages this machine's packages ship under /usr/share/doc, and
the bad files a folder holds (encrypted, scanned, truncated, a zip bomb, 500 MB, scripts only, an
unknown extension, a reader that hangs or eats memory). No database: what a reader makes of a file."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from documents import BAD_FILES, FIXTURES, add_bad_files

from pgkgrag.ingest.inputs import DocumentIn, InputItem
from pgkgrag.ingest.readers.errors import ReaderError
from pgkgrag.ingest.readers.files import DEFAULT_LIMITS, read_inputs
from pgkgrag.ingest.readers.isolation import IsolatedReaders, ReaderLimits

HANDBOOK = "Northwind Operations Handbook"
# the heading path of each section of the handbook, in order, and a sentence of it
SECTIONS = [
    ((HANDBOOK,), "How the Northwind platform team runs its services"),
    ((HANDBOOK, "Services and owners"), "The Ledger Service records every payment"),
    ((HANDBOOK, "Services and owners", "Dependencies"), "The Checkout Gateway depends on the Ledger Service."),
    ((HANDBOOK, "On call"), "Each week one engineer of the Platform Team is on call."),
    ((HANDBOOK, "On call", "Escalation"), "If the Quartz Database is unavailable"),
    ((HANDBOOK, "Changes"), "A change to the Ledger Service needs a review"),
]
SHARED_DOC = Path("/usr/share/doc")
REAL_PDFS = sorted(SHARED_DOC.glob("*/*.pdf"))
REAL_HTML = [SHARED_DOC / "python3" / "python-policy.html", SHARED_DOC / "bc" / "bc.html"]
# texinfo's manuals (a navigation line above and below each page) and DocBook's (bylines in <h3>)
MANUAL_PAGES = sorted(SHARED_DOC.glob("libffi*/html/*.html")) + sorted(SHARED_DOC.glob("base-passwd/*.html"))


def read(*paths: Path, limits: ReaderLimits = DEFAULT_LIMITS) -> dict[str, InputItem]:
    """What each file became, by doc_id."""
    items = {}
    for item in read_inputs(list(paths), limits):
        items[item.document.doc_id if item.document else str(item.doc_id)] = item
    return items


def document(path: Path) -> DocumentIn:
    (item,) = read_inputs([path])
    assert item.document is not None, item.error
    return item.document


def spans(doc: DocumentIn) -> list[tuple[tuple[str, ...], int | None, str]]:
    """(headings, page, text) of each section a reader found."""
    return [(tuple(s.headings), s.page, doc.text[s.start : s.end]) for s in doc.sections]


@pytest.mark.parametrize("name", ["handbook.md", "handbook.html", "handbook.docx", "handbook.pdf"])
def test_the_same_handbook_in_four_formats_gives_the_same_sections(name: str) -> None:
    doc = document(FIXTURES / name)
    assert doc.title == HANDBOOK and doc.doc_id == name
    found = spans(doc)
    assert [headings for headings, _, _ in found] == [headings for headings, _ in SECTIONS]
    for (headings, _, text), (_, sentence) in zip(found, SECTIONS, strict=True):
        assert " ".join(text.split()).find(sentence) >= 0, (headings, text)
    # the markup is not text: no heading marks, emphasis, table rules or fences
    for mark in ("##", "**", "|---", "```", "<h", "&amp;"):
        assert mark not in doc.text, mark
    # a table is one block of rows, cells kept apart (a PDF's text layer has no cells: its words)
    row = "Ledger Service Platform Team Harbor Cluster" if name.endswith(".pdf") else "Ledger Service | Platform Team"
    assert row in " ".join(doc.text.split())
    pages = [page for _, page, _ in found]
    if name.endswith(".pdf"):
        assert pages == [1, 2, 2, 3, 3, 4]  # the physical page each section starts on
    else:
        assert set(pages) == {None}


def test_setext_headings_and_lists_of_meeting_notes_stay_out_of_the_text() -> None:
    for name in ("meeting-notes.md", "meeting-notes.docx"):
        doc = document(FIXTURES / name)
        assert doc.title == "BUG REPORTS"  # its first heading, not its file name
        assert [s.headings for s in doc.sections] == [
            ["BUG REPORTS"],
            *(["BUG REPORTS", h] for h in ("Attendees", "Decision", "Risk", "Budget", "Action")),
        ]
        for word in ("===", "---", "Attendees", "Decision", "Budget", "- Lena"):
            assert word not in doc.text, (name, word)
        assert "Lena Fischer writes the migration plan." in doc.text


@pytest.mark.skipif(not REAL_PDFS, reason="no PDF under /usr/share/doc on this machine")
@pytest.mark.parametrize("path", REAL_PDFS, ids=lambda p: p.name)
def test_real_pdfs_of_this_machine(path: Path) -> None:
    import pypdfium2 as pdfium

    doc = document(path)
    pdf = pdfium.PdfDocument(str(path))
    try:
        count, title = len(pdf), pdf.get_metadata_dict().get("Title", "")
        third = pdf[min(2, count - 1)].get_textpage().get_text_range()
    finally:
        pdf.close()
    assert doc.title == (title.strip() or doc.title) and doc.title != path.stem
    pages = [s.page for s in doc.sections]
    assert pages == sorted(pages) and pages[0] == 1 and pages[-1] <= count and len(set(pages)) > count // 2
    # a line of a page is found in a section of that page
    line = max(third.split("\n"), key=len).strip()
    page = min(3, count)
    assert any(line[:40] in " ".join(doc.text[s.start : s.end].split()) for s in doc.sections if s.page == page) or (
        line[:40] in doc.text
    )


@pytest.mark.parametrize("path", REAL_HTML, ids=lambda p: p.name)
def test_real_web_pages_of_this_machine(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(path.read_bytes())
    doc = document(path)
    title = tree.css_first("title")
    assert title is not None and doc.title == " ".join(title.text().split())
    headings = {" ".join(h.text().split()).rstrip("¶§#").strip() for h in tree.css("h1, h2, h3, h4, h5, h6")}
    found = {h for s in doc.sections for h in s.headings}
    assert found and found <= headings
    assert len(found) >= len(headings) // 2  # most headings have text under them
    for script in tree.css("script"):
        code = (script.text() or "").strip()
        if len(code) > 30:
            assert code[:30] not in doc.text


def test_every_bad_file_is_named_with_why_and_the_good_one_is_read(tmp_path: Path) -> None:
    add_bad_files(tmp_path)
    shutil.copy(FIXTURES / "meeting-notes.docx", tmp_path)
    items = read(tmp_path)
    errors = {doc_id: item.error for doc_id, item in items.items() if item.document is None}
    assert sorted(errors) == list(BAD_FILES)
    assert "encrypted" in str(errors["encrypted.pdf"]) and "password" in str(errors["encrypted.pdf"])
    assert "no text layer" in str(errors["scanned.pdf"]) and "OCR" in str(errors["scanned.pdf"])
    assert "not a readable PDF" in str(errors["truncated.pdf"])
    assert "not a readable DOCX" in str(errors["corrupt.docx"])
    assert "zip bomb" in str(errors["bomb.docx"])
    assert "500 MB, above 200 MB (setting max_file_mb)" in str(errors["huge.pdf"])
    assert "no text" in str(errors["scripts.html"])
    assert str(errors["slides.key"]).startswith("unknown format .key")
    assert items["meeting-notes.docx"].document is not None
    # each failure carries what stands for the file's version: its size and time, not its bytes
    assert items["huge.pdf"].content_hash is not None and items["huge.pdf"].content_hash.startswith("file:524288000:")


def test_a_reader_that_hangs_or_eats_memory_is_stopped_and_the_next_file_is_read(tmp_path: Path) -> None:
    files = [FIXTURES / "handbook.pdf", FIXTURES / "handbook.html"]
    stopped = read(*files, limits=replace(DEFAULT_LIMITS, timeout_s=0.0001))
    assert all("setting reader_timeout_s" in str(item.error) for item in stopped.values()), stopped
    # 60 MB of address space: the interpreter starts, PDFium cannot map itself, the page's
    # parse runs out: each file is refused with the setting to raise
    big = tmp_path / "big.html"
    big.write_text("<p>" + "<b>w</b> " * 3_000_000 + "</p>")  # 27 MB, 3 million elements
    starved = read(*files, big, limits=replace(DEFAULT_LIMITS, timeout_s=30.0, memory_bytes=60 * 2**20))
    assert all("reader_memory_mb" in str(item.error) for item in starved.values()), starved
    # the worker stopped at a limit is started again for the next file
    with IsolatedReaders(replace(DEFAULT_LIMITS, timeout_s=0.0001)) as readers:
        with pytest.raises(ReaderError, match="reader_timeout_s"):
            readers.read("pdf", FIXTURES / "handbook.pdf")
        readers.limits = DEFAULT_LIMITS
        assert readers.read("pdf", FIXTURES / "handbook.pdf").title == HANDBOOK


def test_a_c_library_out_of_memory_is_named_as_memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Under the worker's address-space limit a C library may fail an allocation without raising
    MemoryError (SystemError: returned NULL without setting an exception, seen on a 27 MB page):
    the file is refused naming the setting to raise, as for a MemoryError."""
    from pgkgrag.ingest.readers import worker

    def out_of_memory(kind: str, path: Path, max_bytes: int) -> object:
        raise SystemError("<built-in method count of bytes object> returned NULL without setting an exception")

    monkeypatch.setattr(worker, "convert", out_of_memory)
    outcome, message = worker.answer("html", tmp_path / "big.html", 1)
    assert outcome == "refused" and "setting reader_memory_mb" in message, message


def test_a_docx_title_stays_above_its_heading_1_sections_and_no_chunk_spans_two(tmp_path: Path) -> None:
    """A Title, then two Heading 1 sections (the first short, with a Heading 2 under it): every
    chunk's headings start with the Title, and the short section takes its subsection with it but
    never the next Heading 1 (a chunk spans no two headings of the same or a higher level)."""
    import docx

    from pgkgrag.ingest.chunking import ChunkSettings, chunk_text

    made = docx.Document()
    made.add_paragraph("Team Handbook", style="Title")
    made.add_paragraph("On-call rotation", style="Heading 1")
    made.add_paragraph("Each week one engineer is on call.")
    made.add_paragraph("Escalation", style="Heading 2")
    made.add_paragraph("After ten minutes the on-call engineer calls the lead.")
    made.add_paragraph("Expenses", style="Heading 1")
    made.add_paragraph("Expenses are filed within thirty days with a receipt. " * 3)
    made.save(str(tmp_path / "handbook.docx"))
    items = list(read_inputs([tmp_path]))
    assert len(items) == 1 and items[0].document is not None, items
    document = items[0].document
    headings = [tuple(s.headings) for s in document.sections or []]
    assert headings == [
        ("Team Handbook", "On-call rotation"),
        ("Team Handbook", "On-call rotation", "Escalation"),
        ("Team Handbook", "Expenses"),
    ]
    chunks = chunk_text(document.text, document.title or "", ChunkSettings(1200, 400, 100), document.sections or [])
    assert [c.headings for c in chunks] == [("Team Handbook", "On-call rotation"), ("Team Handbook", "Expenses")]
    assert "Expenses" not in chunks[0].text and "Escalation" not in chunks[1].text


def test_html_navigation_lines_and_bylines_stay_out_of_the_sections(tmp_path: Path) -> None:
    """As texinfo and DocBook write manuals: a line of links to the previous and upper page above
    and below the text, a navigation bar by its class, an author's name in an <h3>: none is a
    section, and the page's own <h3> is."""
    page = """<html><head><title>Thread Safety</title></head><body>
<div class="navheader"><table><tr><td><a accesskey="p" href="a.html">Prev</a></td></tr></table></div>
<div class="header"><p>Previous: <a href="a.html" rel="prev">Closure Example</a>, Up: <a href="u.html" rel="up">Using
libffi</a> [<a href="i.html" rel="index">Index</a>]</p></div>
<h3 class="author">John Fleck</h3>
<H3 CLASS="AUTHOR">Joey Hess</H3><H3 CLASS="AUTHOR">Colin Watson</H3>
<h3 class="section">2.7 Thread Safety</h3>
<p>libffi is not completely thread-safe; see <a href="a.html" rel="prev">the example</a> for how
to prepare a call interface once per thread, which is the rule to follow in every program that
uses it from more than one thread at a time, as the next paragraphs explain in detail.</p>
<div class="header"><p>Next: <a href="n.html">Memory Usage</a>, Previous: <a href="a.html">Closure Example</a>,
Up: <a href="u.html">Using libffi</a> &nbsp; [<a href="i.html" rel="index">Index</a>]</p></div>
</body></html>"""
    (tmp_path / "thread-safety.html").write_text(page)
    (item,) = list(read_inputs([tmp_path]))
    assert item.document is not None, item.error
    text = item.document.text
    assert "Previous:" not in text and "Next:" not in text and "Prev" not in text, text
    assert "John Fleck" in text and "Joey Hess" in text and "Colin Watson" in text  # bylines are text, not headings
    assert [tuple(s.headings) for s in item.document.sections or []] == [(), ("2.7 Thread Safety",)]
    assert "see the example for how" in " ".join(text.split())  # a long paragraph with such a link stays


def test_a_content_line_with_a_link_to_the_next_page_stays() -> None:
    """Review: a short paragraph that says something beside its rel=next link is content, not
    navigation; two byline headings are two lines."""
    from selectolax.lexbor import LexborHTMLParser

    from pgkgrag.ingest.readers.html import _navigation_line

    page = LexborHTMLParser(
        '<p>Then read <a rel="next" href="c.html">Configuring the Acme server</a> before starting.</p>'
        '<p>Previous: <a rel="prev" href="a.html">Closure Example</a>, Up: <a rel="up" href="u.html">Using</a></p>'
    )
    content, navigation = page.css("p")
    assert not _navigation_line(content) and _navigation_line(navigation)
    # without rel, a line of links is navigation where its labels say so, not a list of links
    plain = LexborHTMLParser(
        '<p>Next: <a href="n.html">Memory Usage</a>, Up: <a href="u.html">Using</a></p>'
        '<p><a href="x.html">Closures</a>, <a href="y.html">Types</a></p>'
    )
    labelled, listed = plain.css("p")
    assert _navigation_line(labelled) and not _navigation_line(listed)
    # (review) text that only sounds like navigation stays: no colon after its words, no rel
    for prose in (
        '<p>Back up <a href="d.html">the data directory</a>.</p>',
        '<p>Next, <a href="c.html">configure the server</a>.</p>',
        '<p>Top up <a href="b.html">your prepaid balance</a>.</p>',
        '<table><tr><th>Previous</th><td><a href="1.html">The Fellowship</a></td><th>Next</th>'
        '<td><a href="3.html">The Return of the King</a></td></tr></table>',
        '<table><tr><th>Up</th><td><a href="a.html">2.4</a></td><td><a href="b.html">3.0</a></td></tr></table>',
        '<p><a href="r.html">Rationale</a> · next <a href="d.html">Design</a></p>',
    ):
        node = LexborHTMLParser(prose).css_first("p, table")
        assert node is not None and not _navigation_line(node), prose


@pytest.mark.skipif(not MANUAL_PAGES, reason="neither libffi's nor base-passwd's HTML manual is on this machine")
def test_real_manual_pages_keep_navigation_and_bylines_out() -> None:
    """On every page of the texinfo and DocBook manuals this machine ships: no line of the text is
    a navigation line, and no heading is an author's name (<h3 class="author"> in any case)."""
    from selectolax.lexbor import LexborHTMLParser

    for path in MANUAL_PAGES:
        doc = document(path)
        lines = [line.strip() for line in doc.text.splitlines()]
        assert not [line for line in lines if line.startswith(("Next:", "Previous:", "Up:"))], path
        tree = LexborHTMLParser(path.read_bytes())
        authors = {
            " ".join(h.text().split())
            for h in tree.css("h1, h2, h3, h4, h5, h6")
            if "author" in (h.attributes.get("class") or "").lower().split()
        }
        assert not authors & {h for s in doc.sections for h in s.headings}, path
        assert all(author in " ".join(doc.text.split()) for author in authors), path

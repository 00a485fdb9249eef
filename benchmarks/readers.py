"""Readers: files to text, on this machine's own files (the PDFs and web pages its packages ship
under /usr/share/doc, the DOCX fixtures), on 2 cores.

1. The candidates side by side, per format (those installed: `pip install pypdf pdfminer.six
   trafilatura beautifulsoup4` to compare them all): speed, and how much of a reference text each
   keeps (word counts: precision and recall). PDF reference: poppler's `pdftotext` where it is on
   PATH. HTML reference: lxml's text of the content elements (paragraphs, list items, cells, code,
   headings), scripts, styles and navigation removed; an independent parser, not a candidate.
2. pgkgrag's readers as ingestion runs them (the isolated worker): pages/s, MB/s, and the peak
   memory of a worker reading each file (a fresh one per file; the interpreter alone is shown).
3. The share of an ingestion's time the conversion takes: a folder of those files ingested end to
   end (default embedder and extractor) against reading them alone.

    python benchmarks/readers.py [--html 40]
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import ROOT, markdown_table, scratch_database, write_section

from pgkgrag.db.connections import connect
from pgkgrag.embed.embedders import get_embedder
from pgkgrag.ingest.extractors.choice import AutoExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.ingest.readers.files import DEFAULT_LIMITS, read_inputs
from pgkgrag.ingest.readers.isolation import IsolatedReaders

SHARED = Path("/usr/share/doc")
FIXTURES = ROOT / "tests" / "fixtures" / "documents"
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]")


def words(text: str) -> collections.Counter[str]:
    return collections.Counter(w.lower() for w in _WORD.findall(text))


def kept(got: collections.Counter[str], reference: collections.Counter[str]) -> tuple[float, float]:
    """(precision, recall) of a text's words against the reference's."""
    common = sum((got & reference).values())
    return common / max(1, sum(got.values())), common / max(1, sum(reference.values()))


def pdf_candidates() -> dict[str, Callable[[Path], list[str]]]:
    """The PDF readers installed: each gives a file's text, page by page."""

    def pdfium(path: Path) -> list[str]:
        import pypdfium2

        doc = pypdfium2.PdfDocument(str(path))
        try:
            return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
        finally:
            doc.close()

    def pypdf(path: Path) -> list[str]:
        import pypdf

        return [page.extract_text() or "" for page in pypdf.PdfReader(str(path)).pages]

    def pdfminer(path: Path) -> list[str]:
        from pdfminer.high_level import extract_pages
        from pdfminer.layout import LTTextContainer

        return ["".join(e.get_text() for e in page if isinstance(e, LTTextContainer)) for page in extract_pages(path)]

    return _installed(
        {"pypdfium2": (pdfium, "pypdfium2"), "pypdf": (pypdf, "pypdf"), "pdfminer.six": (pdfminer, "pdfminer")}
    )


def html_candidates() -> dict[str, Callable[[Path], str]]:
    """The HTML readers installed: each gives a page's text."""

    def ours(path: Path) -> str:
        from pgkgrag.ingest.readers.html import read_html

        return read_html(path).text

    def trafilatura(path: Path) -> str:
        import trafilatura

        return trafilatura.extract(path.read_text(errors="replace"), include_tables=True, favor_recall=True) or ""

    def soup(path: Path) -> str:
        import warnings

        from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

        warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)  # XHTML pages, read as HTML
        tree = BeautifulSoup(path.read_bytes(), "lxml")
        for tag in tree(["script", "style", "nav", "header", "footer", "noscript"]):
            tag.decompose()
        return tree.get_text("\n")

    return _installed(
        {"selectolax (pgkgrag's walk)": (ours, "selectolax"), "trafilatura": (trafilatura, "trafilatura"),
         "beautifulsoup4 + lxml": (soup, "bs4")}
    )  # fmt: skip


def _installed(candidates: dict[str, tuple[Callable, str]]) -> dict[str, Callable]:  # type: ignore[type-arg]
    import importlib.util

    found = {}
    for name, (reader, module) in candidates.items():
        if importlib.util.find_spec(module) is None:
            print(f"{name}: not installed, left out")
        else:
            found[name] = reader
    return found


def html_reference(path: Path) -> str:
    import lxml.html

    tree = lxml.html.fromstring(path.read_bytes())
    for tag in tree.xpath("//script|//style|//nav|//header|//footer|//noscript"):
        tag.drop_tree()
    content = "//p|//li|//td|//th|//pre|//dd|//dt|//h1|//h2|//h3|//h4|//h5|//h6|//blockquote"
    return " ".join(node.text_content() for node in tree.xpath(content))


def best_of(reader: Callable[[Path], object], path: Path, rounds: int = 3) -> tuple[float, object]:
    reader(path)  # warm
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        out = reader(path)
        times.append(time.perf_counter() - start)
    return min(times), out


def compare_pdf(pdfs: list[Path]) -> str:
    readers = pdf_candidates()
    pdftotext = shutil.which("pdftotext")
    rows = []
    for path in pdfs:
        reference = None
        if pdftotext:
            reference = words(subprocess.run([pdftotext, str(path), "-"], capture_output=True, text=True).stdout)
        for name, reader in readers.items():
            seconds, pages = best_of(reader, path)
            assert isinstance(pages, list)
            fidelity = "no pdftotext"
            if reference is not None:
                precision, recall = kept(words("\n".join(pages)), reference)
                fidelity = f"{precision:.3f} / {recall:.3f}"
            mb = path.stat().st_size / 2**20
            rows.append([path.name, name, len(pages), f"{len(pages) / seconds:.0f}", f"{mb / seconds:.2f}", fidelity])
    header = ["file", "reader", "pages", "pages/s", "MB/s", "words kept vs pdftotext (precision / recall)"]
    return markdown_table(header, rows)


def compare_html(pages: list[Path]) -> str:
    readers = html_candidates()
    rows = []
    totals: dict[str, list[float]] = {name: [0.0, 0.0, 0.0] for name in readers}  # seconds, kept words, ref words
    mb = sum(p.stat().st_size for p in pages) / 2**20
    for path in pages:
        reference = words(html_reference(path))
        for name, reader in readers.items():
            seconds, text = best_of(reader, path, rounds=1)
            got = words(str(text))
            totals[name][0] += seconds
            totals[name][1] += sum((got & reference).values())
            totals[name][2] += sum(reference.values())
            totals[name].append(sum(got.values()))
    for name, (seconds, common, reference_words, *got) in totals.items():
        precision = common / max(1, sum(got))
        rows.append(
            [
                name,
                len(pages),
                f"{mb:.1f}",
                f"{mb / seconds:.1f}",
                f"{precision:.3f}",
                f"{common / reference_words:.3f}",
            ]
        )
    header = ["reader", "pages", "MB", "MB/s", "words kept: precision", "recall"]
    return markdown_table(header, rows)


def peak_memory(kind: str, path: Path | None) -> float:
    """The peak resident memory (MB) of a fresh interpreter that imports the reader and reads the
    file: VmHWM, which exec resets (ru_maxrss would count the forked copy of this process)."""
    code = (
        "from pathlib import Path; from pgkgrag.ingest.readers.worker import convert;"
        f"import pgkgrag.ingest.readers.{kind};"
        + (f"convert({kind!r}, Path({str(path)!r}), 2**30);" if path else "")
        + "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return int(out.strip()) / 1024


def ours(files: dict[str, list[Path]]) -> tuple[str, float]:
    """pgkgrag's readers through the isolated worker: speed and peak memory per file; returns the
    table and the seconds reading every file took."""
    rows = []
    total = 0.0
    with IsolatedReaders(DEFAULT_LIMITS) as readers:
        for kind, paths in files.items():
            readers.read(kind, paths[0])  # the worker started, the reader imported
            seconds, pages, peaks = 0.0, 0, []
            for path in paths:
                start = time.perf_counter()
                converted = readers.read(kind, path)
                seconds += time.perf_counter() - start
                pages += len({s.page for s in converted.sections}) if kind == "pdf" else 0
                peaks.append(peak_memory(kind, path))
            total += seconds
            mb = sum(p.stat().st_size for p in paths) / 2**20
            rows.append([
                kind, len(paths), f"{mb:.1f}", f"{pages / seconds:.0f}" if pages else "", f"{mb / seconds:.1f}",
                f"{len(paths) / seconds:.0f}", f"{peak_memory(kind, None):.0f}", f"{max(peaks):.0f}",
            ])  # fmt: skip
    header = ["format", "files", "MB", "pages/s", "MB/s", "files/s", "worker alone MB", "worker peak MB (largest)"]
    return markdown_table(header, rows), total


def share_of_ingestion(folder: Path) -> str:
    start = time.perf_counter()
    items = list(read_inputs([folder]))
    reading = time.perf_counter() - start
    embedder = get_embedder("use", 512)
    with scratch_database("kgrag_bench_readers") as dsn, connect(dsn) as conn:
        start = time.perf_counter()
        summary = Ingestor(conn, "bench", AutoExtractor(), embedder).run([folder])
        whole = time.perf_counter() - start
    chunks = summary.counts.chunks
    refused = [f"{Path(where).name} ({why})" for where, why in summary.rejected_inputs + summary.failed]
    return (
        f"A folder of {len(items)} files ({summary.written} documents, {chunks} chunks) ingested end to end with the "
        f"defaults (`use` embedder, `auto` extractor): {whole:.1f} s; reading and converting the same files alone: "
        f"{reading:.1f} s, **{100 * reading / whole:.0f}%** of it."
        + (f" Refused: {'; '.join(refused)}." if refused else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=int, default=40, help="how many of the machine's web pages (largest first)")
    args = parser.parse_args()
    pdfs = sorted(SHARED.glob("**/*.pdf"))
    pages = sorted((p for p in SHARED.glob("**/*.html") if p.stat().st_size > 4096), key=lambda p: -p.stat().st_size)
    pages = sorted(pages[: args.html])
    docx = sorted(FIXTURES.glob("*.docx"))
    print(f"{len(pdfs)} PDFs, {len(pages)} web pages, {len(docx)} DOCX")
    pdf_table = compare_pdf(pdfs)
    print(pdf_table)
    html_table = compare_html(pages)
    print(html_table)
    our_table, _ = ours({"pdf": pdfs, "html": pages, "docx": docx})
    print(our_table)
    with tempfile.TemporaryDirectory() as tmp:
        for path in [*pdfs, *pages, *docx]:
            shutil.copy(path, Path(tmp) / f"{path.parent.name}-{path.name}")
        share = share_of_ingestion(Path(tmp))
    print(share)
    body = "\n\n".join(
        [
            f"This machine's files: {len(pdfs)} PDFs and the {len(pages)} largest web pages under /usr/share/doc, "
            f"and the {len(docx)} DOCX fixtures (tests/fixtures/documents). Best of 3 runs for PDF, one for HTML.",
            "**PDF candidates** (text with page numbers):",
            pdf_table,
            "**HTML candidates** (the page's text; reference: lxml's text of the content elements, scripts, styles "
            "and navigation removed):",
            html_table,
            "**pgkgrag's readers** as ingestion runs them (the isolated worker; pages/s counts the pages with text). "
            "Peak memory: a fresh interpreter that imports the reader and reads the file; 'alone' reads none.",
            our_table,
            share,
        ]
    )
    write_section("readers", "Readers: files to text", body, "python benchmarks/readers.py")


if __name__ == "__main__":
    main()

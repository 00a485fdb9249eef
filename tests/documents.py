"""The document fixtures (tests/fixtures/documents, see its README) and the bad files a team has,
made from them in a temporary folder."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "documents"
# the files add_bad_files() makes, which cannot be read
BAD_FILES = (
    "bomb.docx", "corrupt.docx", "encrypted.pdf", "huge.pdf", "scanned.pdf", "scripts.html", "slides.key",
    "truncated.pdf",
)  # fmt: skip


def _zip_bomb(source: Path, target: Path) -> Path:
    shutil.copy(source, target)
    with zipfile.ZipFile(target, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/media/padding.bin", bytes(64 * 2**20))  # 64 MB of zeros: ~64 kB zipped
    return target


def slow_docx(target: Path, paragraphs: int = 100_000) -> Path:
    """The handbook as Word with that many paragraphs more: small (1 MB for 100,000), under every
    limit, and about a minute of python-docx's time on this machine (0.5 ms a paragraph)."""
    with zipfile.ZipFile(FIXTURES / "handbook.docx") as archive:
        parts = {name: archive.read(name) for name in archive.namelist()}
    body = parts["word/document.xml"].decode()
    at = body.index("<w:body>") + len("<w:body>")
    words = ("ledger", "vault", "harbor", "quartz", "gateway", "platform", "review", "change")
    added = "".join(
        f"<w:p><w:r><w:t>{words[i % 8]} {words[i * 7 % 8]} {words[i * 3 % 8]} {i}</w:t></w:r></w:p>"
        for i in range(paragraphs)
    )
    parts["word/document.xml"] = (body[:at] + added + body[at:]).encode()
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return target


def add_bad_files(folder: Path) -> None:
    """The files a team has that cannot be read, one of each kind (BAD_FILES), put in the folder."""
    shutil.copy(FIXTURES / "encrypted.pdf", folder)
    shutil.copy(FIXTURES / "scanned.pdf", folder)
    pdf = (FIXTURES / "handbook.pdf").read_bytes()
    (folder / "truncated.pdf").write_bytes(pdf[: len(pdf) // 3])
    (folder / "corrupt.docx").write_bytes(b"PK\x03\x04" + bytes(range(256)) * 8)
    _zip_bomb(FIXTURES / "handbook.docx", folder / "bomb.docx")
    with (folder / "huge.pdf").open("wb") as handle:  # 500 MB, sparse: nothing is written
        handle.truncate(500 * 2**20)
    scripts = "".join(f"<script>var x{i} = {i};</script>" for i in range(2000))
    (folder / "scripts.html").write_text(f"<html><head><title>App</title></head><body>{scripts}</body></html>")
    (folder / "slides.key").write_bytes(b"\x00keynote")

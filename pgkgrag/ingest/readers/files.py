"""The input files of an ingestion and what each becomes: JSONL lines (a document each), Markdown
(read for its structure), plain text, and PDF, HTML and DOCX files converted by their readers in an
isolated worker. A file is a document whose doc_id is its path below the folder given (so a
renamed file is a new document). Every file of a folder is accounted for: one that cannot be read
(an unknown format, past a limit, damaged, encrypted, without text) is a failure that names the
file and says why; hidden files and folders (a name starting with a dot) are left alone."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from pgkgrag.errors import KgragError
from pgkgrag.ingest.inputs import MAX_DEPTH, InputItem, document_item
from pgkgrag.ingest.readers.converted import Converted
from pgkgrag.ingest.readers.errors import ReaderError
from pgkgrag.ingest.readers.isolation import IsolatedReaders, ReaderLimits

# the readers of converted formats and the extra that installs them
CONVERTED = {".pdf": "pdf", ".html": "html", ".htm": "html", ".xhtml": "html", ".docx": "docx"}
TEXT = {".md": "markdown", ".markdown": "markdown", ".txt": "text"}
KNOWN = (".jsonl", *TEXT, *CONVERTED)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
DEFAULT_LIMITS = ReaderLimits(max_file_bytes=200 * 2**20, timeout_s=120.0, memory_bytes=2048 * 2**20)


def input_files(paths: list[Path]) -> Iterator[tuple[Path, Path]]:
    """(file, the folder its doc_id is relative to) for every file of the given files and folders
    (folders recursively, hidden ones aside, in sorted order)."""
    for path in paths:
        if not path.exists():
            raise KgragError(f"{path}: no such file or folder")
        if not path.is_dir():
            yield path, path.parent
            continue
        # os.walk names what it cannot read (onerror) instead of stopping the whole folder
        unreadable: list[OSError] = []
        found = []
        for folder, folders, names in os.walk(path, onerror=unreadable.append):
            folders[:] = [name for name in folders if not name.startswith(".")]
            found += [Path(folder) / name for name in names if not name.startswith(".")]
        # an unreadable folder comes as itself: read_inputs reports it and goes on
        for file in sorted([*found, *(Path(e.filename) for e in unreadable if e.filename)]):
            yield file, path


def _doc_id(file: Path, root: Path) -> str:
    return file.relative_to(root).as_posix() if file != root else file.name


def _failed(file: Path, root: Path, reason: str) -> InputItem:
    """A file that could not be read, with the doc_id it would have had; its size and time stand
    for its content (a file past a limit is not read through to hash it)."""
    try:
        stat = file.stat()
        version = f"file:{stat.st_size}:{stat.st_mtime_ns}"
    except OSError:
        version = "file:unreadable"
    return InputItem(str(file), error=reason, doc_id=_doc_id(file, root), content_hash=version)


def _too_big(file: Path, limits: ReaderLimits) -> str | None:
    size = file.stat().st_size
    if size > limits.max_file_bytes:
        return f"the file is {size / 2**20:.0f} MB, above {limits.max_file_bytes / 2**20:.0f} MB (setting max_file_mb)"
    return None


def _item(file: Path, root: Path, converted: Converted, kind: str) -> InputItem:
    stem = file.stem.replace("_", " ").replace("-", " ")
    data = {
        "doc_id": _doc_id(file, root),
        "title": converted.title or stem,
        "text": converted.text,
        "source_uri": str(file),
        "metadata": {"format": kind},
        "sections": [
            {"start": s.start, "end": s.end, "page": s.page, "headings": list(s.headings)} for s in converted.sections
        ],
    }
    return document_item(str(file), data)


def _read_text(file: Path, root: Path, kind: str, limits: ReaderLimits) -> InputItem:
    try:
        if refused := _too_big(file, limits):
            return _failed(file, root, refused)
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return _failed(file, root, f"not UTF-8 ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        return _failed(file, root, f"cannot read the file: {exc.strerror or exc}")
    if kind == "markdown":
        from pgkgrag.ingest.readers.markdown import read_markdown

        return _item(file, root, read_markdown(text), kind)
    heading = _HEADING.search(text)  # a plain text's title: its first Markdown-like heading, else its name
    title = heading.group(1) if heading else file.stem.replace("_", " ").replace("-", " ")
    return document_item(
        str(file), {"doc_id": _doc_id(file, root), "title": title, "text": text, "source_uri": str(file)}
    )


def _read_converted(file: Path, root: Path, kind: str, readers: IsolatedReaders) -> InputItem:
    try:
        if refused := _too_big(file, readers.limits):
            return _failed(file, root, refused)
        return _item(file, root, readers.read(kind, file), kind)
    except ReaderError as exc:
        return _failed(file, root, str(exc))
    except OSError as exc:
        return _failed(file, root, f"cannot read the file: {exc.strerror or exc}")


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _read_jsonl(path: Path) -> Iterator[InputItem]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        yield InputItem(str(path), error=f"cannot read the file: {exc.strerror or exc}")
        return
    with handle:
        number = 0
        while True:
            number += 1
            where = f"{path}:{number}"
            try:
                raw = handle.readline()
            except OSError as exc:
                yield InputItem(where, error=f"cannot read the file from here on: {exc.strerror or exc}")
                return
            if not raw:
                return
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield InputItem(where, error=f"not UTF-8 ({exc.reason} at byte {exc.start})")
                continue
            if not line.strip():
                continue
            try:
                data = json.loads(line, parse_constant=_refuse_constant)
            except json.JSONDecodeError as exc:
                yield InputItem(where, error=f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            except ValueError as exc:  # NaN, Infinity
                yield InputItem(where, error=f"invalid JSON: {exc}")
                continue
            except RecursionError:
                yield InputItem(where, error=f"invalid JSON: nested deeper than Python can read (limit {MAX_DEPTH})")
                continue
            if not isinstance(data, dict):
                yield InputItem(where, error="a line must be a JSON object with at least doc_id and text")
                continue
            yield document_item(where, data)


def read_inputs(paths: list[Path], limits: ReaderLimits = DEFAULT_LIMITS) -> Iterator[InputItem]:
    """Every document of the given files and folders, and every file that could not be one."""
    with IsolatedReaders(limits) as readers:
        for file, root in input_files(paths):
            suffix = file.suffix.lower()
            if file.is_dir():
                yield InputItem(str(file), error="cannot read the folder (permission denied or I/O error): skipped")
            elif suffix == ".jsonl":
                yield from _read_jsonl(file)
            elif suffix in TEXT:
                yield _read_text(file, root, TEXT[suffix], limits)
            elif suffix in CONVERTED:
                yield _read_converted(file, root, CONVERTED[suffix], readers)
            else:
                known = ", ".join(KNOWN)
                yield _failed(file, root, f"unknown format {suffix or '(no extension)'}: pgkgrag reads {known}")


def count_inputs(paths: list[Path]) -> int | None:
    """How many documents the inputs hold at most (non-blank JSONL lines and other files), for a
    progress bar; None when there are none."""
    total = 0
    for file, _ in input_files(paths):
        try:
            if file.suffix.lower() == ".jsonl" and not file.is_dir():
                with file.open("rb") as handle:
                    total += sum(1 for line in handle if line.strip())
            else:
                total += 1
        except OSError:
            total += 1  # read_inputs will say what is wrong with it
    return total or None

"""The input files of an ingestion and what each becomes: JSONL lines (a document each), plain
text, and Markdown (read for its structure), PDF, HTML and DOCX files converted by their readers in
an isolated worker, within its time and memory limits. A file is a document whose doc_id is its
path below the folder given (so a renamed file is a new document). Every file of a folder is
accounted for: one that cannot be read (an unknown format, not a regular file, past a limit,
damaged, encrypted, without text, a symbolic link found in a folder) is a failure that names the
file and says why; hidden files and folders (a name starting with a dot) are left alone. What is
read in this process is read bounded: a plain text file up to max_document_mb (its bytes are its
document's text), a JSONL line up to 8 times that (at most max_file_mb); neither a growing file nor
a device named like one gets past."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pgkgrag.errors import KgragError
from pgkgrag.ingest.chunking import first_heading
from pgkgrag.ingest.inputs import MAX_DEPTH, InputItem, document_item
from pgkgrag.ingest.readers.converted import Converted
from pgkgrag.ingest.readers.errors import ReaderError
from pgkgrag.ingest.readers.isolation import IsolatedReaders, ReaderLimits

# the formats the worker converts, each with its reader
CONVERTED = {
    ".md": "markdown", ".markdown": "markdown", ".pdf": "pdf", ".html": "html", ".htm": "html", ".xhtml": "html",
    ".docx": "docx",
}  # fmt: skip
KNOWN = (".jsonl", ".txt", *CONVERTED)
DEFAULT_LIMITS = ReaderLimits(
    max_file_bytes=200 * 2**20, timeout_s=120.0, memory_bytes=2048 * 2**20, max_document_bytes=5 * 2**20
)
_SKIP = 2**20  # the rest of a JSONL line past its limit is read through this much at a time
_LINE_TIMES_DOCUMENT = 8  # a JSONL line may take this many times max_document_mb (see _line_limit)


def input_files(paths: list[Path]) -> Iterator[tuple[Path, Path, bool]]:
    """(file, the folder its doc_id is relative to, whether it is a symbolic link found in a folder
    given: refused, never opened) for every file of the given files and folders (folders
    recursively, hidden ones aside, in sorted order; a link named on its own is read: it was asked
    for)."""
    for path in paths:
        if not path.exists():
            raise KgragError(f"{path}: no such file or folder")
        if not path.is_dir():
            yield path, path.parent, False
            continue
        # os.walk names what it cannot read (onerror) instead of stopping the whole folder
        # (a link to a folder is not walked: os.walk leaves it, and it comes as itself, refused)
        unreadable: list[OSError] = []
        found = []
        for folder, folders, names in os.walk(path, onerror=unreadable.append):
            found += [
                Path(folder) / name
                for name in folders
                if not name.startswith(".") and (Path(folder) / name).is_symlink()
            ]
            folders[:] = [name for name in folders if not name.startswith(".")]
            found += [Path(folder) / name for name in names if not name.startswith(".")]
        # an unreadable folder comes as itself: read_inputs reports it and goes on
        for file in sorted([*found, *(Path(e.filename) for e in unreadable if e.filename)]):
            yield file, path, file.is_symlink()


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


def _mb(size: int) -> str:
    return f"{size / 2**20:.0f} MB"


NOT_REGULAR = "not a regular file (a device, a pipe or a socket): not read"
# a link inside a folder given: its target is read where it lives (once), never through the link
LINKED = "a symbolic link (to {target}): not followed; ingest its target where it lives"


def _refused_unread(file: Path, limits: ReaderLimits, *, text: bool = False) -> str | None:
    """Why a file is refused before it is read: not a regular file (a device or a pipe: a link to
    /dev/zero never ends), above max_file_mb, or (text: its bytes are the document) above
    max_document_mb."""
    info = file.stat()
    if not stat.S_ISREG(info.st_mode):
        return NOT_REGULAR
    if info.st_size > limits.max_file_bytes:
        return f"the file is {_mb(info.st_size)}, above {_mb(limits.max_file_bytes)} (setting max_file_mb)"
    if text and info.st_size > limits.max_document_bytes:
        return _above_document(f"the file is {_mb(info.st_size)}", limits)
    return None


def _above_document(what: str, limits: ReaderLimits) -> str:
    limit = limits.max_document_bytes / 2**20
    return f"{what}, above the limit of {limit:g} MB of a document's text (setting max_document_mb): not read"


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
    return _as_document(file, root, data)


def _as_document(file: Path, root: Path, data: dict[str, Any]) -> InputItem:
    """A file's document, or, when it is no document (no text left, a limit), its failure under the
    doc_id it would have had, as a file that could not be read."""
    item = document_item(str(file), data)
    return _failed(file, root, item.error) if item.error is not None else item


def _read_text(file: Path, root: Path, limits: ReaderLimits) -> InputItem:
    try:
        if refused := _refused_unread(file, limits, text=True):
            return _failed(file, root, refused)
        with file.open("rb") as handle:
            raw = handle.read(limits.max_document_bytes + 1)
        if len(raw) > limits.max_document_bytes:  # it grew since
            return _failed(file, root, _above_document("the file grew past it while read", limits))
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as exc:
        return _failed(file, root, f"not UTF-8 ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        return _failed(file, root, f"cannot read the file: {exc.strerror or exc}")
    heading = first_heading(text)  # a plain text's title: its first Markdown-like heading, else its name
    title = " ".join(heading.split()) if heading else ""
    return _as_document(
        file,
        root,
        {
            "doc_id": _doc_id(file, root),
            "title": title or file.stem.replace("_", " ").replace("-", " "),
            "text": text,
            "source_uri": str(file),
        },
    )


def _read_converted(file: Path, root: Path, kind: str, readers: IsolatedReaders) -> InputItem:
    try:
        if refused := _refused_unread(file, readers.limits):
            return _failed(file, root, refused)
        return _item(file, root, readers.read(kind, file), kind)
    except ReaderError as exc:
        return _failed(file, root, str(exc))
    except OSError as exc:
        return _failed(file, root, f"cannot read the file: {exc.strerror or exc}")


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _line(handle: BinaryIO, limit: int) -> bytes | None:
    """The next line of at most `limit` bytes (b"" at the end of the file), None for a longer one,
    read through to its end in small pieces, never held."""
    line = handle.readline(limit + 1)
    if len(line) <= limit:
        return line
    while not line.endswith(b"\n") and (line := handle.readline(_SKIP)):
        pass
    return None


def _line_limit(limits: ReaderLimits) -> int:
    """The most bytes a JSONL line may take: 8 times max_document_mb (its text JSON-escaped, up to 6
    bytes a byte, and its entities and relations), at most max_file_mb."""
    return min(limits.max_file_bytes, _LINE_TIMES_DOCUMENT * limits.max_document_bytes)


def _read_jsonl(path: Path, limits: ReaderLimits) -> Iterator[InputItem]:
    try:
        regular = stat.S_ISREG(path.stat().st_mode)
        handle = path.open("rb") if regular else None
    except OSError as exc:
        yield InputItem(str(path), error=f"cannot read the file: {exc.strerror or exc}")
        return
    if handle is None:
        yield InputItem(str(path), error=NOT_REGULAR)
        return
    with handle:
        number = 0
        while True:
            number += 1
            where = f"{path}:{number}"
            try:
                raw = _line(handle, _line_limit(limits))
            except OSError as exc:
                yield InputItem(where, error=f"cannot read the file from here on: {exc.strerror or exc}")
                return
            if raw == b"":
                return
            if (item := _jsonl_item(where, raw, limits)) is not None:
                yield item


def _jsonl_item(where: str, raw: bytes | None, limits: ReaderLimits) -> InputItem | None:
    """What a line of a JSONL file is: a document, why not, or None for a blank line."""
    if raw is None:
        limit = _line_limit(limits) / 2**20
        return InputItem(
            where,
            error=f"the line is above {limit:g} MB ({_LINE_TIMES_DOCUMENT} times setting max_document_mb, "
            "at most max_file_mb): not read",
        )
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputItem(where, error=f"not UTF-8 ({exc.reason} at byte {exc.start})")
    if not line.strip():
        return None
    try:
        data = json.loads(line, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        return InputItem(where, error=f"invalid JSON: {exc.msg} (column {exc.colno})")
    except ValueError as exc:  # NaN, Infinity
        return InputItem(where, error=f"invalid JSON: {exc}")
    except RecursionError:
        return InputItem(where, error=f"invalid JSON: nested deeper than Python can read (limit {MAX_DEPTH})")
    if not isinstance(data, dict):
        return InputItem(where, error="a line must be a JSON object with at least doc_id and text")
    return document_item(where, data)


def read_inputs(paths: list[Path], limits: ReaderLimits = DEFAULT_LIMITS) -> Iterator[InputItem]:
    """Every document of the given files and folders, and every file that could not be one."""
    with IsolatedReaders(limits) as readers:
        for file, root, linked in input_files(paths):
            suffix = file.suffix.lower()
            if linked:
                yield _failed(file, root, LINKED.format(target=os.readlink(file)))
            elif file.is_dir():
                yield InputItem(str(file), error="cannot read the folder (permission denied or I/O error): skipped")
            elif suffix == ".jsonl":
                yield from _read_jsonl(file, limits)
            elif suffix == ".txt":
                yield _read_text(file, root, limits)
            elif suffix in CONVERTED:
                yield _read_converted(file, root, CONVERTED[suffix], readers)
            else:
                known = ", ".join(KNOWN)
                yield _failed(file, root, f"unknown format {suffix or '(no extension)'}: pgkgrag reads {known}")


def _count_lines(handle: BinaryIO) -> int:
    """How many lines of a file hold more than blanks, read in pieces (a line may be huge)."""
    count, open_line = 0, False  # open_line: the line read so far holds more than blanks
    while piece := handle.read(_SKIP):
        *ended, rest = piece.split(b"\n")
        for line in ended:
            count += open_line or bool(line.strip())
            open_line = False
        open_line = open_line or bool(rest.strip())
    return count + open_line


def count_inputs(paths: list[Path]) -> int | None:
    """How many documents the inputs hold at most (non-blank JSONL lines and other files), for a
    progress bar; None when there are none."""
    total = 0
    for file, _, linked in input_files(paths):
        try:
            if linked:  # refused, never opened (read_inputs)
                total += 1
            elif file.suffix.lower() == ".jsonl" and stat.S_ISREG(file.stat().st_mode):
                with file.open("rb") as handle:
                    total += _count_lines(handle)
            else:
                total += 1
        except OSError:
            total += 1  # read_inputs will say what is wrong with it
    return total or None

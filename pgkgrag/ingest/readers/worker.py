"""The readers' worker process (see isolation): `python -m pgkgrag.ingest.readers.worker IN OUT
MEMORY` reads (kind, path, max unzipped bytes) requests from pipe IN and answers each on pipe OUT
with ("ok", Converted) or ("refused", why), within an address space of MEMORY bytes."""

from __future__ import annotations

import errno
import resource
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pgkgrag.extras import missing
from pgkgrag.ingest.readers.converted import Converted
from pgkgrag.ingest.readers.errors import ReaderError

OUT_OF_MEMORY = "the file needs more memory than the reader may use (setting reader_memory_mb)"


def convert(kind: str, path: Path, max_bytes: int) -> Converted:
    """The file read by the reader of its kind (pdf, html, docx), in this process."""
    if kind == "pdf":
        from pgkgrag.ingest.readers.pdf import read_pdf

        return read_pdf(path)
    if kind == "html":
        from pgkgrag.ingest.readers.html import read_html

        return read_html(path)
    if kind == "docx":
        from pgkgrag.ingest.readers.docx import read_docx

        return read_docx(path, max_bytes)
    raise ReaderError(f"no reader for {kind}")


def answer(kind: str, path: Path, max_bytes: int) -> tuple[str, Any]:
    try:
        return "ok", convert(kind, path, max_bytes)
    except ReaderError as exc:
        return "refused", str(exc)
    except ImportError:
        return "refused", str(missing("documents"))
    except MemoryError:
        return "refused", OUT_OF_MEMORY
    except Exception as exc:
        if isinstance(exc, OSError) and ("failed to map" in str(exc) or exc.errno == errno.ENOMEM):
            return "refused", OUT_OF_MEMORY  # a library could not even be loaded within the limit
        return "refused", f"the reader failed on it: {type(exc).__name__}: {exc}"


def serve(requests: Connection, replies: Connection) -> None:
    while True:
        try:
            kind, path, max_bytes = requests.recv()
        except EOFError:
            return
        replies.send(answer(kind, Path(path), max_bytes))


def main() -> None:
    fd_in, fd_out, memory = (int(arg) for arg in sys.argv[1:4])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    serve(Connection(fd_in, writable=False), Connection(fd_out, readable=False))


if __name__ == "__main__":
    main()

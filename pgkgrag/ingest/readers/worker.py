"""The readers' worker process (see isolation): `python -P -m pgkgrag.ingest.readers.worker IN OUT
MEMORY PARENT` reads (kind, path, max unzipped bytes, seconds) requests from pipe IN and answers each
on pipe OUT with ("ok", Converted) or ("refused", why), within an address space of MEMORY bytes and
the seconds given: past them the kernel ends it (SIGALRM, whose default action no reader can delay),
whether or not its parent is still there to stop it. It dies with its parent, process PARENT
(Linux: PR_SET_PDEATHSIG; elsewhere a read ends at its time limit and an idle worker on the closed
pipe)."""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import signal
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pgkgrag.extras import missing
from pgkgrag.ingest.readers.converted import Converted
from pgkgrag.ingest.readers.errors import ReaderError

OUT_OF_MEMORY = "the file needs more memory than the reader may use (setting reader_memory_mb)"
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def convert(kind: str, path: Path, max_bytes: int) -> Converted:
    """The file read by the reader of its kind (markdown, pdf, html, docx), in this process."""
    if kind == "markdown":
        from pgkgrag.ingest.readers.markdown import read_markdown_file

        return read_markdown_file(path)
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
    except SystemError as exc:  # a C library out of memory under the address-space limit, most likely
        return "refused", f"the reader failed on it ({exc}): more memory than it may use? (setting reader_memory_mb)"
    except Exception as exc:
        if isinstance(exc, OSError) and ("failed to map" in str(exc) or exc.errno == errno.ENOMEM):
            return "refused", OUT_OF_MEMORY  # a library could not even be loaded within the limit
        return "refused", f"the reader failed on it: {type(exc).__name__}: {exc}"


def serve(requests: Connection, replies: Connection) -> None:
    while True:
        try:
            kind, path, max_bytes, seconds = requests.recv()
        except EOFError:
            return
        signal.setitimer(signal.ITIMER_REAL, seconds)  # SIGALRM's default action: the process ends
        reply = answer(kind, Path(path), max_bytes)
        signal.setitimer(signal.ITIMER_REAL, 0)
        replies.send(reply)


def die_with(parent: int) -> None:
    """SIGKILL when the thread that started this process ends (Linux), and an end now if the parent
    is already gone (it died before the kernel was asked, and this process was adopted)."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        sys.exit(1)


def main() -> None:
    fd_in, fd_out, memory, parent = (int(arg) for arg in sys.argv[1:5])
    die_with(parent)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    serve(Connection(fd_in, writable=False), Connection(fd_out, readable=False))


if __name__ == "__main__":
    main()

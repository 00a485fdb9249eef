"""Readers run in a worker process of their own, with limits: a file that makes a reader hang is
stopped at its time limit (by this process, and by the worker itself if this one cannot: see
worker), one that makes it eat memory at its memory limit (the worker's address space), and a
reader that crashes takes only that file with it. The worker dies with this process (on Linux, with
the thread that started it: the one that reads the files). The worker is a fresh interpreter
(`python -P -m pgkgrag.ingest.readers.worker`, so nothing of the caller's program is re-run or
inherited: neither its threads nor its __main__, nor the current folder as a place to import
from), started once and used for every file until it has to be stopped; the next file starts a
new one. Requests and replies go over two pipes of its own (multiprocessing.connection framing),
not stdin and stdout, which a library may write to."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from pgkgrag.ingest.readers.converted import Converted
from pgkgrag.ingest.readers.errors import ReaderError


@dataclass(frozen=True)
class ReaderLimits:
    """The tenant's settings max_file_mb, reader_timeout_s, reader_memory_mb and max_document_mb,
    in bytes and seconds (the last bounds a plain text file, whose bytes are its document's text)."""

    max_file_bytes: int
    timeout_s: float
    memory_bytes: int
    max_document_bytes: int


class IsolatedReaders:
    """Files read in the worker process, each within the limits (a context manager: the worker
    stops when it ends)."""

    def __init__(self, limits: ReaderLimits) -> None:
        self.limits = limits
        self._process: subprocess.Popen[bytes] | None = None
        self._send: Connection | None = None
        self._receive: Connection | None = None

    def __enter__(self) -> IsolatedReaders:
        return self

    def __exit__(self, *_: object) -> None:
        self._stop()

    def _start(self) -> tuple[Connection, Connection]:
        if self._send is None or self._receive is None:
            to_worker, from_us = os.pipe()
            to_us, from_worker = os.pipe()
            # -P: not the current folder first on the module path, as -m puts it (a folder being
            # ingested could hold a package named pgkgrag)
            command = [sys.executable, "-P", "-m", "pgkgrag.ingest.readers.worker"]
            self._process = subprocess.Popen(
                [*command, str(to_worker), str(from_worker), str(self.limits.memory_bytes), str(os.getpid())],
                pass_fds=(to_worker, from_worker),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            os.close(to_worker)
            os.close(from_worker)
            self._send = Connection(from_us, readable=False)
            self._receive = Connection(to_us, writable=False)
        return self._send, self._receive

    def _stop(self) -> int | None:
        """Stop the worker; its exit status (negative: the signal that ended it), None if none ran."""
        status = None
        if self._process is not None:
            self._process.kill()  # not if it has ended already: its own status is kept
            status = self._process.wait()
        for conn in (self._send, self._receive):
            if conn is not None:
                conn.close()
        self._process, self._send, self._receive = None, None, None
        return status

    def read(self, kind: str, path: Path) -> Converted:
        send, receive = self._start()
        try:
            # the file, what it may unzip to (half the memory), the time the worker allows itself
            send.send((kind, str(path), self.limits.memory_bytes // 2, self.limits.timeout_s))
            answered = receive.poll(self.limits.timeout_s)
        except (BrokenPipeError, EOFError, OSError):
            answered = True  # the worker is gone: recv says so below
        if not answered:
            self._stop()
            raise self._too_long()
        try:
            status, value = receive.recv()
        except (EOFError, OSError) as exc:
            if self._stop() == -signal.SIGALRM:  # its own time limit came first
                raise self._too_long() from exc
            limit = self.limits.memory_bytes / 2**20
            raise ReaderError(
                f"the reader stopped on it (more than {limit:.0f} MB of memory? setting reader_memory_mb)"
            ) from exc
        if status != "ok":
            raise ReaderError(value)
        assert isinstance(value, Converted)
        return value

    def _too_long(self) -> ReaderError:
        return ReaderError(
            f"reading it took longer than {self.limits.timeout_s:g} s (setting reader_timeout_s): stopped"
        )

"""Why a file could not be read: said to the user and recorded in kgrag.ingest_failure."""

from __future__ import annotations


class ReaderError(Exception):
    """A file pgkgrag cannot turn into text (encrypted, damaged, no text, past a limit)."""

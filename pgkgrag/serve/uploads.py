"""Files uploaded to POST /v1/documents, converted to documents by pgkgrag's readers (the same as
pgkgrag ingest's, in their isolated process) within the tenant's limits (max_file_mb,
max_document_mb, the reader's time and memory): each file's document is named by its file name."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import psycopg

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.ingest.batch import TenantSettings
from pgkgrag.ingest.readers.files import read_inputs
from pgkgrag.ingest.readers.isolation import ReaderLimits
from pgkgrag.serve.errors import ApiError

MOST_FILES = 10  # files converted in one request: each may take the reader's time limit


def safe_name(name: str, index: int) -> str:
    """A file name to keep: its last part, without control characters, at most 200 characters,
    never hidden or empty (upload-N then)."""
    last = "".join(c for c in Path(name.replace("\\", "/")).name if c.isprintable()).strip()[-200:]
    return last if last and not last.startswith(".") else f"upload-{index}"


def reader_limits(conn: psycopg.Connection, tenant: str) -> ReaderLimits:
    """The tenant's limits of a file read (max_file_mb, max_document_mb, the reader's time and memory)."""
    with tenant_transaction(conn, tenant):
        return TenantSettings.load(conn).readers


def converted(limits: ReaderLimits, files: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
    """The documents of uploaded files (name, content), as a JSONL line would give them; 400 naming
    the first file that is no document (its reader's reason). Holds no database connection."""
    if len(files) > MOST_FILES:
        raise ApiError(400, f"send at most {MOST_FILES} files a request, got {len(files)}", "files")
    names = [safe_name(name, i) for i, (name, _) in enumerate(files)]
    if len(set(names)) != len(names):
        raise ApiError(400, "two files of the request have one name: each file's document is named by it", "files")
    documents = []
    with tempfile.TemporaryDirectory(prefix="pgkgrag-upload-") as folder:
        for name, (_, content) in zip(names, files, strict=True):
            path = Path(folder) / name
            path.write_bytes(content)
            (item,) = list(read_inputs([path], limits))
            if item.document is None:
                raise ApiError(400, f"files: {name}: {item.error}", "files", "invalid_value")
            document = item.document.model_dump(mode="json", exclude_none=True)
            document["source_uri"] = name
            documents.append(document)
    return documents

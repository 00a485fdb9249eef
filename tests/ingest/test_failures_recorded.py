"""Every input an ingestion could not take is a row of kgrag.ingest_failure with its file, line,
document and reason (revision 0039): a line with NUL, NaN, bad UTF-8, JSON nested too deep or a
duplicate doc_id, a document past a limit, and a relation to an entity its document does not
give; the lines' rows go when the file is read again without them, a document's when it is
ingested, and nothing of the good lines is lost."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import psycopg

from pgkgrag.db.connections import WRITER, connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor

GOOD = {"doc_id": "good", "title": "Good", "text": "The Payment Service calls the Ledger."}
STRAY = {  # a relation whose target its document does not give
    "doc_id": "stray",
    "title": "Stray",
    "text": "The Payment Service calls the Vault.",
    "entities": [{"name": "Payment Service", "type": "Service"}],
    "relations": [{"source": "Payment Service", "target": "Vault", "type": "CALLS"}],
}
BIG = {"doc_id": "big", "title": "Big", "text": "word " * 300_000}  # 1.4 MB, above a 1 MB limit
LINES = [
    json.dumps(GOOD).encode(),
    b'{"doc_id": "nul", "text": "a\\u0000b"}',
    b'{"doc_id": "nan", "text": "x", "metadata": {"n": NaN}}',
    b'{"doc_id": "utf", "text": "\xff\xfe"}',
    b'{"doc_id": "deep", "text": "x", "metadata": ' + b'{"a": ' * 40 + b"1" + b"}" * 40 + b"}",
    json.dumps({**GOOD, "text": "A second good?"}).encode(),  # line 6: duplicate doc_id
    json.dumps(STRAY).encode(),
    json.dumps(BIG).encode(),
]


def failures(conn: psycopg.Connection) -> list[tuple[str, str | None, int | None, str]]:
    with tenant_transaction(conn, "t1"):
        rows = conn.execute(
            "SELECT doc_id, regexp_replace(source, '.*/', ''), line, reason FROM kgrag.ingest_failure"
            " ORDER BY line, doc_id"
        ).fetchall()
    return [(d, s, n, r) for d, s, n, r in rows]


def ingest_lines(conn: psycopg.Connection, path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"\n".join(lines) + b"\n")
    Ingestor(conn, "t1", ProvidedExtractor(), HashEmbedder(512)).run([path])


def test_every_rejected_input_is_a_row_with_its_file_and_line(
    dsn: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    with connect(dsn, role=WRITER) as conn:
        with tenant_transaction(conn, "t1"):
            conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'max_document_mb', '1')")
        path = tmp_path / "docs.jsonl"
        ingest_lines(conn, path, LINES)
        rows = failures(conn)
        keys = [(d, s, n) for d, s, n, _ in rows]
        where = f"#{path}"
        assert keys == [
            (f"{where}:2", "docs.jsonl", 2),
            (f"{where}:3", "docs.jsonl", 3),
            (f"{where}:4", "docs.jsonl", 4),
            (f"{where}:5", "docs.jsonl", 5),
            (f"{where}:6", "docs.jsonl", 6),
            (f"{where}:7", "docs.jsonl", 7),
            ("big", "docs.jsonl", 8),
        ], rows
        reasons = {n: r for _, _, n, r in rows}
        assert (
            "NUL" in reasons[2]
            and "NaN" in reasons[3]
            and "UTF-8" in reasons[4]
            and "nests deeper than 32 levels" in reasons[5]
        )
        assert "duplicate doc_id 'good'" in reasons[6]
        assert (
            reasons[7]
            == "relation Payment Service -[CALLS]-> Vault dropped: its target is not an entity of the document"
        )
        assert "above the limit of 1 MB" in reasons[8]
        with tenant_transaction(conn, "t1"):  # the good lines are in, whole
            docs = conn.execute("SELECT doc_id FROM kgrag.document ORDER BY 1").fetchall()
        assert docs == [("good",), ("stray",)]
        record_property("inputs tried", len(LINES))
        record_property("rejected inputs recorded in kgrag.ingest_failure", len(rows))
        record_property("good documents lost", 0)
        ingest_lines(conn, path, LINES)  # read again unchanged: the same rows (the dropped relation's too)
        assert failures(conn) == rows

        # fixed: the same file without its bad lines, the relation's target given, the big one cut
        fixed = {**STRAY, "entities": [*STRAY["entities"], {"name": "Vault", "type": "Service"}]}  # type: ignore[list-item]
        ingest_lines(conn, path, [LINES[0], json.dumps(fixed).encode(), json.dumps({**BIG, "text": "small"}).encode()])
        assert failures(conn) == []

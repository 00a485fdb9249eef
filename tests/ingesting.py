"""Helpers for ingestion tests: write JSONL, run the real pipeline, fingerprint the tables."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import psycopg
from catalog import tables as catalog_tables

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder, HashEmbedder
from pgkgrag.ingest.extractors.base import Extractor, ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.ingest.summary import IngestSummary

OPS = [
    {
        "doc_id": "d1",
        "title": "Auth",
        "text": "The Auth Service depends on the Session Store. The IAM Team owns the Auth Service.",
        "entities": [
            {"name": "Auth Service", "type": "Service", "aliases": ["auth"]},
            {"name": "Session Store", "type": "Service"},
            {"name": "IAM Team", "type": "Team"},
        ],
        "relations": [
            {
                "source": "Auth Service",
                "target": "Session Store",
                "type": "DEPENDS_ON",
                "quote": "The Auth Service depends on the Session Store.",
            },
            {"source": "IAM Team", "target": "Auth Service", "type": "owns"},
            {"source": "Auth Service", "target": "Nobody", "type": "DEPENDS_ON"},
        ],
    },
    {
        "doc_id": "d2",
        "title": "Payments",
        "text": "The Payment Module calls the Auth Service. It runs on the Alpha Cluster.",
        "entities": [
            {"name": "Payment Module", "type": "Service"},
            {"name": "Auth Service", "type": "Service"},
            {"name": "Alpha Cluster", "type": "Infrastructure"},
        ],
        "relations": [
            {
                "source": "Payment Module",
                "target": "Auth Service",
                "type": "DEPENDS_ON",
                "quote": "The Payment Module calls the Auth Service.",
                "confidence": 0.8,
            }
        ],
    },
    {
        "doc_id": "d3",
        "title": "Sessions",
        "text": "The Session Store does not run on the Alpha Cluster.",
        "entities": [{"name": "Session Store", "type": "Service"}, {"name": "Alpha Cluster", "type": "Infrastructure"}],
        "relations": [
            {
                "source": "Session Store",
                "target": "Alpha Cluster",
                "type": "RUNS_ON",
                "negated": True,
                "quote": "The Session Store does not run on the Alpha Cluster.",
            }
        ],
    },
    {
        "doc_id": "d4",
        "title": "Billing",
        "text": "Billing (the team) runs Billing (the service). Ledger Sync feeds it.",
        "entities": [
            {"name": "Billing", "type": "Team"},
            {"name": "Billing", "type": "Service"},
            {"name": "Ledger Sync", "type": "Service"},
        ],
    },
    {
        "doc_id": "d5",
        "title": "Tokens",
        "text": "Token Vault backs the Auth Service and the Session Store.",
        "entities": [
            {"name": "Token Vault", "type": "Service"},
            {"name": "Auth Service", "type": "Service"},
            {"name": "Session Store", "type": "Service"},
        ],
    },
]


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it is asked to embed."""

    def __init__(self, dim: int = 512) -> None:
        super().__init__(dim)
        self.calls: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.extend(texts)
        return super().embed(texts)


def write_jsonl(path: Path, docs: Sequence[object]) -> Path:
    path.write_text("".join((d if isinstance(d, str) else json.dumps(d)) + "\n" for d in docs))
    return path


def ingest(
    conn: psycopg.Connection,
    tmp_path: Path,
    docs: Sequence[object],
    *,
    tenant: str = "t1",
    extractor: Extractor | None = None,
    embedder: Embedder | None = None,
    batch_size: int = 100,
) -> IngestSummary:
    path = write_jsonl(tmp_path / f"input-{len(list(tmp_path.iterdir()))}.jsonl", docs)
    ingestor = Ingestor(
        conn, tenant, extractor or ProvidedExtractor(), embedder or HashEmbedder(512), batch_size=batch_size
    )
    return ingestor.run([path])


# What records the history for a person, not the graph: the answer an entity had before it changed
# (kgrag.review_queue, item answer_changed) differs by history by design.
HISTORY_COLUMNS = ("answer_before", "answer_before_doc")
# A failed line is kept under '#' || its file || ':' || its line: the file's name, not its folder.
READ_FROM = {("ingest_failure", "doc_id"): "regexp_replace(doc_id, '^#.*/', '#')"}


def checksums(conn: psycopg.Connection, tenant: str, leave_out: Sequence[str] = ()) -> dict[str, str]:
    """md5 of each kgrag table's rows for one tenant (the columns the role may read), leaving out
    timestamps, HISTORY_COLUMNS and where a failed input was read from (its folder, and its file and
    line, which a downgrade drops), and the columns named in leave_out."""
    tables = catalog_tables(conn)
    out = {}
    conn.execute("SELECT kgrag.use_tenant(%s)", [tenant])
    for table in tables:
        cols = [
            READ_FROM.get((table, r[0]), r[0])
            for r in conn.execute(
                "SELECT quote_ident(attname) FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
                " AND NOT attisdropped AND atttypid <> 'timestamptz'::regtype AND attname <> ALL (%s)"
                " AND has_column_privilege(attrelid, attnum, 'SELECT') ORDER BY attnum",
                [f"kgrag.{table}", [*HISTORY_COLUMNS, *leave_out]],
            )
            if (table, r[0]) not in (("ingest_failure", "source"), ("ingest_failure", "line"))
        ]
        if not cols:  # a table the role reads nothing of (the queue's counts)
            continue
        query = (
            f"SELECT md5(COALESCE(string_agg(r, E'\\n' ORDER BY r), '')) FROM (SELECT ROW({', '.join(cols)})::text"
            f" AS r FROM kgrag.{table} WHERE tenant_id = %s) x"
        )
        out[table] = conn.execute(query, [tenant]).fetchone()[0]  # type: ignore[index]
    conn.rollback()
    return out


def q(conn: psycopg.Connection, query: str, *params: object) -> list[tuple]:
    """One statement in a transaction acting for tenant t1 (the tenant ingest() writes by default)."""
    with tenant_transaction(conn, "t1"):
        return conn.execute(query, list(params)).fetchall()  # type: ignore[arg-type]

"""One ingestion batch: its documents read and checked against the tenant's limits and languages,
chunked, extracted, their missing chunk embeddings computed, then written in one transaction
(staged with COPY and applied by kgrag_private.ingest_apply, the whole transaction retried on a
deadlock or a serialization failure). pgkgrag.ingest.ingestor schedules the batches."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import psycopg
from psycopg.rows import dict_row

from pgkgrag.db.connections import tenant_transaction, transaction_retry
from pgkgrag.embed.embedders import Embedder
from pgkgrag.ingest import staging
from pgkgrag.ingest.chunking import ChunkSettings, chunk_text
from pgkgrag.ingest.extractors.base import Extractor, PreparedDocument
from pgkgrag.ingest.extractors.choice import document_fingerprint
from pgkgrag.ingest.inputs import InputItem
from pgkgrag.ingest.readers.isolation import ReaderLimits
from pgkgrag.ingest.summary import AppliedCounts, IngestSummary
from pgkgrag.queries import Q


@dataclass(frozen=True)
class TenantSettings:
    chunking: ChunkSettings
    max_document_bytes: int
    readers: ReaderLimits

    @classmethod
    def load(cls, conn: psycopg.Connection) -> TenantSettings:
        with conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(Q["ingest_settings"]).fetchone()
        assert row is not None
        chunking = ChunkSettings(row["chunk_max_chars"], row["chunk_min_chars"], row["chunk_overlap"])
        max_document_bytes = int(row["max_document_mb"] * 2**20)
        readers = ReaderLimits(
            int(row["max_file_mb"] * 2**20),
            float(row["reader_timeout_s"]),
            int(row["reader_memory_mb"] * 2**20),
            max_document_bytes,
        )
        return cls(chunking, max_document_bytes, readers)


@dataclass
class Staged:
    """A batch read, chunked and extracted, waiting for its chunk embeddings and its write."""

    batch: list[InputItem]
    summary: IngestSummary
    changed: int  # documents whose content hash is not the stored one
    extracted: list[staging.ExtractedDocument] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # content hash -> chunk text without a vector


class BatchWork:
    """What every batch of one ingestion run shares (the tenant, its settings and languages, the
    extractor and the embedder) and the steps of a batch. The steps take the connection to use,
    so batches can be staged and written on several at once."""

    def __init__(
        self,
        conn: psycopg.Connection,
        tenant: str,
        extractor: Extractor,
        embedder: Embedder,
        progress: Callable[[str, int], None],
    ) -> None:
        self.tenant = tenant
        self.extractor = extractor
        self.embedder = embedder
        self.progress = progress
        self._embedding = threading.Lock()  # embedders need not be thread-safe; USE uses every core anyway
        self._languages: dict[str | None, str | None] = {}
        with tenant_transaction(conn, tenant):
            self.settings = TenantSettings.load(conn)
        self.chunking_fingerprint = self.settings.chunking.fingerprint()

    def ready(self, conn: psycopg.Connection, batch: list[InputItem]) -> tuple[Staged, dict[str, np.ndarray]]:
        """A batch staged on `conn` and embedded: all it needs to be written."""
        return self.with_vectors(self.stage(conn, batch))

    def with_vectors(self, staged: Staged) -> tuple[Staged, dict[str, np.ndarray]]:
        return staged, self.embed(staged)

    def _languages_of(self, conn: psycopg.Connection, batch: list[InputItem]) -> dict[str | None, str | None]:
        """The text search configuration of each language the batch names (kgrag.text_search_config)."""
        wanted = sorted({item.document.language for item in batch if item.document} - set(self._languages), key=str)
        if wanted:
            with tenant_transaction(conn, self.tenant):
                self._languages.update(conn.execute(Q["text_search_configs"], [wanted]).fetchall())
        return self._languages

    def _prepare(
        self, item: InputItem, languages: dict[str | None, str | None], summary: IngestSummary
    ) -> tuple[PreparedDocument, str, str] | None:
        doc = item.document
        assert doc is not None
        size = len(doc.text.encode("utf-8"))
        if size > self.settings.max_document_bytes:
            limit = self.settings.max_document_bytes / 2**20
            summary.rejected_doc_ids[item.where] = doc.doc_id  # its failure is kept under it
            summary.rejected_inputs.append(
                (
                    item.where,
                    f"document {doc.doc_id!r} is {size / 2**20:.1f} MB, above the "
                    f"limit of {limit:g} MB (setting max_document_mb)",
                )
            )
            return None
        lang = languages.get(doc.language)
        if lang is None:
            summary.rejected_doc_ids[item.where] = doc.doc_id  # its failure is kept under it
            summary.rejected_inputs.append(
                (
                    item.where,
                    f"unknown language {doc.language!r}: use a code of the setting language_codes (en, pt, ...) "
                    "or a PostgreSQL text search configuration name",
                )
            )
            return None
        chunks = chunk_text(doc.text, doc.title, self.settings.chunking, doc.sections)
        salt = f"{self.chunking_fingerprint}|{document_fingerprint(self.extractor, doc)}"
        return PreparedDocument(doc, chunks, lang), lang, doc.content_hash(salt)

    def one(self, conn: psycopg.Connection, batch: list[InputItem]) -> IngestSummary:
        """Prepare, extract, embed and write one batch on `conn`; what it did is the result."""
        return self.finish(conn, *self.ready(conn, batch))

    def stage(self, conn: psycopg.Connection, batch: list[InputItem]) -> Staged:
        """Read, chunk and extract a batch, and find its chunk texts without a vector."""
        summary = IngestSummary()
        start = time.perf_counter()
        languages = self._languages_of(conn, batch)
        prepared = [p for p in (self._prepare(item, languages, summary) for item in batch) if p is not None]
        with tenant_transaction(conn, self.tenant):
            stored: dict[str, str] = dict(
                conn.execute(Q["stored_documents"], [[p.document.doc_id for p, _, _ in prepared]]).fetchall()
            )
        todo = [(p, lang, h) for p, lang, h in prepared if stored.get(p.document.doc_id) != h]
        at = {item.document.doc_id: item.where for item in batch if item.document is not None}
        summary.unchanged_at += [at[p.document.doc_id] for p, _, h in prepared if stored.get(p.document.doc_id) == h]
        summary.unchanged += len(prepared) - len(todo)
        summary.seconds["read and chunk"] += time.perf_counter() - start
        self.progress("documents", len(batch) - len(todo))
        staged = Staged(batch, summary, len(todo))
        if not todo:
            return staged

        start = time.perf_counter()
        with tenant_transaction(conn, self.tenant):
            results = self.extractor.extract(conn, [p for p, _, _ in todo])
        where = {item.document.doc_id: item.where for item in batch if item.document is not None}
        for p, lang, content_hash in todo:
            result = results[p.document.doc_id]
            if isinstance(result, Exception):
                summary.failed.append((p.document.doc_id, str(result)))
                with tenant_transaction(conn, self.tenant):
                    conn.execute(
                        Q["record_ingest_failure"], [p.document.doc_id, content_hash, str(result), p.document.access]
                    )
                continue
            summary.rejected_extractions.update(result.rejected)
            summary.dropped_relations += [(where[p.document.doc_id], why) for why in result.dropped]
            staged.extracted.append(staging.ExtractedDocument(p, lang, content_hash, result))
        summary.seconds["extract"] += time.perf_counter() - start
        # the chunk texts the tenant has no embedding of yet, by content hash
        texts = {c.content_hash: c.text for d in staged.extracted for c in d.prepared.chunks}
        if texts:
            with tenant_transaction(conn, self.tenant):
                have = {r[0] for r in conn.execute(Q["chunk_texts_with_vectors"], [list(texts)])}
            staged.missing = {h: texts[h] for h in sorted(texts) if h not in have}
        return staged

    def embed(self, staged: Staged) -> dict[str, np.ndarray]:
        """The staged batch's missing chunk embeddings (no connection used: may run in a thread)."""
        if not staged.missing:
            return {}
        start = time.perf_counter()
        with self._embedding:
            vectors = self.embedder.embed(list(staged.missing.values()))
        staged.summary.seconds["embed chunks"] += time.perf_counter() - start
        return dict(zip(staged.missing, vectors, strict=True))

    def finish(self, conn: psycopg.Connection, staged: Staged, vectors: dict[str, np.ndarray]) -> IngestSummary:
        """Write a staged batch with its chunk embeddings; what the batch did is the result."""
        summary = staged.summary
        if not staged.extracted:
            self.progress("documents", staged.changed)
            return summary
        start = time.perf_counter()
        applied = self._write(conn, staged.extracted, vectors, summary)
        summary.seconds["write"] += time.perf_counter() - start
        where = {item.document.doc_id: item.where for item in staged.batch if item.document is not None}
        summary.rejected_inputs += [
            (where[doc_id], f"document {doc_id!r}: {why}") for doc_id, why in applied.refused.items()
        ]
        summary.rejected_doc_ids.update({where[doc_id]: doc_id for doc_id in applied.refused})
        summary.dropped_relations += [
            (where[d["doc_id"]], f"relation {d['relation']} dropped: {d['reason']}")
            for d in applied.dropped
            if d["doc_id"] in where
        ]
        summary.written += len(staged.extracted) - len(applied.refused)
        summary.counts.add(applied)
        summary.rejected_extractions.update(applied.rejected)
        self.progress("documents", staged.changed)
        return summary

    def _write(
        self,
        conn: psycopg.Connection,
        extracted: list[staging.ExtractedDocument],
        vectors: dict[str, np.ndarray],
        summary: IngestSummary,
    ) -> AppliedCounts:
        def count_retry() -> None:
            summary.retries += 1

        @transaction_retry(count_retry)
        def attempt() -> AppliedCounts:
            with tenant_transaction(conn, self.tenant):
                staging.begin(conn)
                staging.stage_documents(conn, extracted, vectors)
                conn.execute(Q["batch_embedder"], [self.embedder.name])
                row = conn.execute(Q["ingest_apply"]).fetchone()
                assert row is not None
                return AppliedCounts.model_validate(row[0])

        return attempt()

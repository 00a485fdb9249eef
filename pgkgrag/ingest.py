"""Ingestion batches: read, chunk, extract, embed, write.

Python orchestrates and SQL does the set work: each batch is COPYed into staging tables
(pgkgrag.staging) and applied by kgrag_private.ingest_apply() in one transaction, retried whole on a
deadlock or serialization failure. A document whose content hash is unchanged is skipped; a
document whose extraction failed is recorded in kgrag.ingest_failure and nothing of it is written.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import psycopg
from pydantic import BaseModel, ConfigDict
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from pgkgrag import staging
from pgkgrag.chunking import ChunkSettings, chunk_text
from pgkgrag.db import tenant_transaction
from pgkgrag.documents import InputItem, read_inputs
from pgkgrag.embedders import Embedder
from pgkgrag.embedding import ProgressCallback, embed_pending, use_embedder
from pgkgrag.extraction_setup import document_fingerprint
from pgkgrag.extractors import Extractor, PreparedDocument
from pgkgrag.queries import Q

BATCH_STEPS = ("read and chunk", "extract", "embed chunks", "write")  # timed per batch, summed over writers


class AppliedCounts(BaseModel):
    """What kgrag_private.ingest_apply() returns (and kgrag.delete_documents() part of), typed."""

    model_config = ConfigDict(extra="forbid")
    documents: int = 0
    chunks: int = 0
    mentions: int = 0
    relations: int = 0
    rejected: dict[str, int] = {}
    refused: dict[str, str] = {}  # doc_id -> why: past a limit of what one document may carry
    affected_entities: int = 0
    removed_entities: int = 0


@dataclass
class GraphCounts:
    """What the written batches added or changed."""

    chunks: int = 0
    mentions: int = 0
    relations: int = 0
    affected_entities: int = 0
    removed_entities: int = 0
    entity_embeddings: int = 0

    def add(self, other: GraphCounts | AppliedCounts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name, 0))


@dataclass
class IngestSummary:
    """What an ingestion run did: the CLI prints it, a caller checks `ok`."""

    read: int = 0
    unchanged: int = 0
    written: int = 0
    rejected_inputs: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    counts: GraphCounts = field(default_factory=GraphCounts)
    rejected_extractions: Counter[str] = field(default_factory=Counter)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    retries: int = 0

    @property
    def ok(self) -> bool:
        return not self.rejected_inputs and not self.failed

    def merge(self, part: IngestSummary) -> None:
        """Add what one batch did (a batch reports into its own IngestSummary)."""
        self.read += part.read
        self.unchanged += part.unchanged
        self.written += part.written
        self.rejected_inputs += part.rejected_inputs
        self.failed += part.failed
        self.counts.add(part.counts)
        self.rejected_extractions.update(part.rejected_extractions)
        for step, seconds in part.seconds.items():
            self.seconds[step] += seconds
        self.retries += part.retries


@dataclass(frozen=True)
class TenantSettings:
    chunking: ChunkSettings
    max_document_bytes: int

    @classmethod
    def load(cls, conn: psycopg.Connection) -> TenantSettings:
        row = conn.execute(Q["ingest_settings"]).fetchone()
        assert row is not None
        max_chars, min_chars, overlap, max_mb = row
        return cls(ChunkSettings(max_chars, min_chars, overlap), int(max_mb * 1024 * 1024))


def _batches(items: Iterable[InputItem], size: int, summary: IngestSummary) -> Iterator[list[InputItem]]:
    seen: dict[str, str] = {}
    batch: list[InputItem] = []
    for item in items:
        if item.document is None:
            summary.rejected_inputs.append((item.where, item.error or "invalid"))
            continue
        summary.read += 1
        first = seen.setdefault(item.document.doc_id, item.where)
        if first != item.where:
            summary.rejected_inputs.append(
                (item.where, f"duplicate doc_id {item.document.doc_id!r} (first at {first})")
            )
            continue
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class _Staged:
    """A batch read, chunked and extracted, waiting for its chunk embeddings and its write."""

    batch: list[InputItem]
    summary: IngestSummary
    changed: int  # documents whose content hash is not the stored one
    extracted: list[staging.ExtractedDocument] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # content hash -> chunk text without a vector


class Ingestor:
    def __init__(
        self,
        conn: psycopg.Connection,
        tenant: str,
        extractor: Extractor,
        embedder: Embedder,
        *,
        batch_size: int = 200,
        progress: ProgressCallback | None = None,
        workers: Sequence[psycopg.Connection] = (),
        embed_ahead: bool = True,
        stage_conn: psycopg.Connection | None = None,
    ) -> None:
        """With `workers` (more connections to the same database), batches are written by
        1 + len(workers) threads at once, each batch still in its own transaction. With one
        writer and embed_ahead, a batch's chunks are embedded while the batch before it is written
        (False: each batch embedded, then written); given `stage_conn` too (another connection to
        the same database, as the same role), the batch is also chunked and extracted there
        meanwhile, so the writer only reads the input and writes. progress hears ("documents", how many were just done)
        and ("entity embeddings", ...)."""
        self.conn = conn
        self.tenant = tenant
        self.extractor = extractor
        self.embedder = embedder
        self.batch_size = batch_size
        self.progress = progress or (lambda step, n: None)
        self.workers = list(workers)
        self.embed_ahead = embed_ahead
        self.stage_conn = stage_conn
        self._embedding = threading.Lock()  # embedders need not be thread-safe; USE uses every core anyway
        self._languages: dict[str | None, str | None] = {}
        with tenant_transaction(conn, tenant):
            self.settings = TenantSettings.load(conn)
        self.chunking_fingerprint = self.settings.chunking.fingerprint()

    def run(self, paths: list[Path]) -> IngestSummary:
        summary = IngestSummary()
        use_embedder(self.conn, self.tenant, self.embedder)
        self._write_batches(_batches(read_inputs(paths), self.batch_size, summary), summary)
        # New and re-described entities are embedded once, after the batches and outside their
        # transactions (no entity lock held while a model runs). An entity without an embedding
        # (say the run was stopped here) is found by lexical linking and embedded by the next
        # ingest or build.
        start = time.perf_counter()
        summary.counts.entity_embeddings += embed_pending(
            self.conn, self.tenant, self.embedder, "entity", progress=self.progress
        )
        summary.seconds["embed entities"] += time.perf_counter() - start
        return summary

    def _write_batches(self, batches: Iterator[list[InputItem]], summary: IngestSummary) -> None:
        if not self.workers and not self.embed_ahead:
            for batch in batches:
                summary.merge(self._batch(self.conn, batch))
            return
        if not self.workers:
            self._pipeline(batches, summary)
            return
        free: queue.SimpleQueue[psycopg.Connection] = queue.SimpleQueue()
        for conn in [self.conn, *self.workers]:
            free.put(conn)

        def write(batch: list[InputItem]) -> IngestSummary:
            conn = free.get()
            try:
                return self._batch(conn, batch)
            finally:
                free.put(conn)

        jobs = 1 + len(self.workers)
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="pgkgrag-ingest") as pool:
            pending: set[Future[IngestSummary]] = set()
            try:
                for batch in batches:  # read ahead by one batch per writer, no more
                    while len(pending) >= 2 * jobs:
                        done, pending = wait(pending, return_when=FIRST_COMPLETED)
                        for future in done:
                            summary.merge(future.result())
                    pending.add(pool.submit(write, batch))
                for future in as_completed(pending):
                    summary.merge(future.result())
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)  # batches being written finish or roll back
                raise

    def _pipeline(self, batches: Iterator[list[InputItem]], summary: IngestSummary) -> None:
        """One writer: a batch's chunks are embedded in a thread while this one writes the batch
        before it (at most two batches held). The thread chunks and extracts the batch too when it
        has a connection of its own (stage_conn); else this one does, between writes."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pgkgrag-ahead") as pool:
            ahead: Future[tuple[_Staged, dict[str, np.ndarray]]] | None = None
            try:
                for batch in batches:
                    if self.stage_conn is not None:
                        job = pool.submit(self._ready, self.stage_conn, batch)
                    else:
                        job = pool.submit(self._embedded, self._stage(self.conn, batch))
                    if ahead is not None:
                        summary.merge(self._finish(self.conn, *ahead.result()))
                    ahead = job
                if ahead is not None:
                    summary.merge(self._finish(self.conn, *ahead.result()))
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)  # a batch under way is staged; nothing of it is written
                raise

    def _ready(self, conn: psycopg.Connection, batch: list[InputItem]) -> tuple[_Staged, dict[str, np.ndarray]]:
        """A batch staged on `conn` and embedded: all it needs to be written."""
        return self._embedded(self._stage(conn, batch))

    def _embedded(self, staged: _Staged) -> tuple[_Staged, dict[str, np.ndarray]]:
        return staged, self._embed(staged)

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
            summary.rejected_inputs.append(
                (
                    item.where,
                    f"unknown language {doc.language!r}: use a code of the setting language_codes (en, pt, ...) "
                    "or a PostgreSQL text search configuration name",
                )
            )
            return None
        chunks = chunk_text(doc.text, doc.title, self.settings.chunking)
        salt = f"{self.chunking_fingerprint}|{document_fingerprint(self.extractor, doc)}"
        return PreparedDocument(doc, chunks), lang, doc.content_hash(salt)

    def _batch(self, conn: psycopg.Connection, batch: list[InputItem]) -> IngestSummary:
        """Prepare, extract, embed and write one batch on `conn`; what it did is the result."""
        return self._finish(conn, *self._ready(conn, batch))

    def _stage(self, conn: psycopg.Connection, batch: list[InputItem]) -> _Staged:
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
        summary.unchanged += len(prepared) - len(todo)
        summary.seconds["read and chunk"] += time.perf_counter() - start
        self.progress("documents", len(batch) - len(todo))
        staged = _Staged(batch, summary, len(todo))
        if not todo:
            return staged

        start = time.perf_counter()
        with tenant_transaction(conn, self.tenant):
            results = self.extractor.extract(conn, [p for p, _, _ in todo])
        for p, lang, content_hash in todo:
            result = results[p.document.doc_id]
            if isinstance(result, Exception):
                summary.failed.append((p.document.doc_id, str(result)))
                with tenant_transaction(conn, self.tenant):
                    conn.execute(Q["record_ingest_failure"], [p.document.doc_id, content_hash, str(result)])
                continue
            summary.rejected_extractions.update(result.rejected)
            staged.extracted.append(staging.ExtractedDocument(p, lang, content_hash, result))
        summary.seconds["extract"] += time.perf_counter() - start
        # the chunk texts the tenant has no embedding of yet, by content hash
        texts = {c.content_hash: c.text for d in staged.extracted for c in d.prepared.chunks}
        if texts:
            with tenant_transaction(conn, self.tenant):
                have = {r[0] for r in conn.execute(Q["embedded_chunk_texts"], [list(texts)])}
            staged.missing = {h: texts[h] for h in sorted(texts) if h not in have}
        return staged

    def _embed(self, staged: _Staged) -> dict[str, np.ndarray]:
        """The staged batch's missing chunk embeddings (no connection used: may run in a thread)."""
        if not staged.missing:
            return {}
        start = time.perf_counter()
        with self._embedding:
            vectors = self.embedder.embed(list(staged.missing.values()))
        staged.summary.seconds["embed chunks"] += time.perf_counter() - start
        return dict(zip(staged.missing, vectors, strict=True))

    def _finish(self, conn: psycopg.Connection, staged: _Staged, vectors: dict[str, np.ndarray]) -> IngestSummary:
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
        @retry(
            retry=retry_if_exception_type((psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)),
            stop=stop_after_attempt(6),
            wait=wait_random_exponential(multiplier=0.05, max=2),
            reraise=True,
            before_sleep=lambda _: summary.__setattr__("retries", summary.retries + 1),
        )
        def attempt() -> AppliedCounts:
            with tenant_transaction(conn, self.tenant):
                staging.begin(conn)
                staging.stage_documents(conn, extracted, vectors)
                row = conn.execute(Q["ingest_apply"]).fetchone()
                assert row is not None
                return AppliedCounts.model_validate(row[0])

        return attempt()


def delete_documents(conn: psycopg.Connection, tenant: str, doc_ids: list[str]) -> AppliedCounts:
    """Delete documents and everything derived from them (kgrag.delete_documents)."""
    with tenant_transaction(conn, tenant):
        row = conn.execute(Q["delete_documents"], [doc_ids]).fetchone()
    assert row is not None
    return AppliedCounts.model_validate(row[0])

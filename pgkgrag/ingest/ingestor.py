"""Ingestion batches: read, chunk, extract, embed, write.

Python orchestrates and SQL does the set work: each batch is COPYed into staging tables
(pgkgrag.ingest.staging) and applied by kgrag_private.ingest_apply() in one transaction, retried whole on a
deadlock or serialization failure. A document whose content hash is unchanged is skipped; a
document whose extraction failed is recorded in kgrag.ingest_failure and nothing of it is written.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from pathlib import Path

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import ProgressCallback, embed_pending, use_embedder
from pgkgrag.ingest.batch import BatchWork, Staged
from pgkgrag.ingest.extractors.base import Extractor
from pgkgrag.ingest.inputs import InputItem, with_access
from pgkgrag.ingest.readers.files import read_inputs
from pgkgrag.ingest.summary import AppliedCounts, IngestSummary, split_where
from pgkgrag.queries import Q

BATCH_STEPS = ("read and chunk", "extract", "embed chunks", "write")  # timed per batch, summed over writers
FAILURES_PAGE = 10_000  # failures recorded per call (kgrag_private.record_input_failures takes 100,000)


def _batches(items: Iterable[InputItem], size: int, summary: IngestSummary) -> Iterator[list[InputItem]]:
    seen: dict[str, str] = {}
    batch: list[InputItem] = []
    for item in items:
        summary.sources.add(split_where(item.where)[0])
        if item.document is None:
            summary.rejected_inputs.append((item.where, item.error or "invalid"))
            if item.doc_id is not None:  # a file that could not be read: recorded under its doc_id
                summary.unreadable.append((item.doc_id, item.content_hash or "", item.error or "invalid"))
                summary.rejected_doc_ids[item.where] = item.doc_id
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
        access: Sequence[str] = (),
    ) -> None:
        """With `workers` (more connections to the same database), batches are written by
        1 + len(workers) threads at once, each batch still in its own transaction. With one
        writer and embed_ahead, a batch's chunks are embedded while the batch before it is written
        (False: each batch embedded, then written); given `stage_conn` too (another connection to
        the same database, as the same role), the batch is also chunked and extracted there
        meanwhile, so the writer only reads the input and writes. `access` names the groups the
        documents are for where they name none themselves. progress hears ("documents", how many were just done)
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
        self.access = sorted(set(access)) or None
        self.work = BatchWork(conn, tenant, extractor, embedder, self.progress)

    def run(self, paths: list[Path]) -> IngestSummary:
        items = (with_access(item, self.access) for item in read_inputs(paths, self.work.settings.readers))
        summary = self.write_items(items, embed_entities=False)
        with tenant_transaction(self.conn, self.tenant):
            for doc_id, version, why in summary.unreadable:  # each file that could not be read, with its version
                self.conn.execute(Q["record_ingest_failure"], [doc_id, version, why, self.access])
            # every input it could not take, with its file and line; the lines of the files read
            # that failed before and not now are cleared
            failed_before = set(self.conn.execute(Q["failed_sources"]).fetchone()[0])  # type: ignore[index]
            read_again = sorted(failed_before & summary.sources)
            kept = [key for key in summary.kept_lines() if split_where(key[1:])[0] in failed_before]
            failures = summary.input_failures()
            for first in range(0, max(len(failures), 1), FAILURES_PAGE):  # the clearing with the first page
                page = failures[first : first + FAILURES_PAGE]
                clear, keep = (read_again, kept) if first == 0 else ([], [])
                self.conn.execute(Q["record_input_failures"], [clear, keep, Jsonb(page), self.access])
        self.embed_entities(summary)
        return summary

    def write_items(self, items: Iterable[InputItem], *, embed_entities: bool = True) -> IngestSummary:
        """Ingest documents already read (a document, or why an input is none), in batches; what
        was done is the result (pgkgrag ingest's files, pgkgrag worker's tickets)."""
        summary = IngestSummary()
        use_embedder(self.conn, self.tenant, self.embedder)
        self._write_batches(_batches(items, self.batch_size, summary), summary)
        if embed_entities:
            self.embed_entities(summary)
        return summary

    def embed_entities(self, summary: IngestSummary) -> None:
        """New and re-described entities are embedded once, after the batches and outside their
        transactions (no entity lock held while a model runs). An entity without an embedding (say
        the run was stopped here) is found by lexical linking and embedded by the next ingest or
        build."""
        start = time.perf_counter()
        summary.counts.entity_embeddings += embed_pending(
            self.conn, self.tenant, self.embedder, "entity", progress=self.progress
        )
        summary.seconds["embed entities"] += time.perf_counter() - start

    def _write_batches(self, batches: Iterator[list[InputItem]], summary: IngestSummary) -> None:
        if not self.workers and not self.embed_ahead:
            for batch in batches:
                summary.merge(self.work.one(self.conn, batch))
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
                return self.work.one(conn, batch)
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
            ahead: Future[tuple[Staged, dict[str, np.ndarray]]] | None = None
            try:
                for batch in batches:
                    if self.stage_conn is not None:
                        job = pool.submit(self.work.ready, self.stage_conn, batch)
                    else:
                        job = pool.submit(self.work.with_vectors, self.work.stage(self.conn, batch))
                    if ahead is not None:
                        summary.merge(self.work.finish(self.conn, *ahead.result()))
                    ahead = job
                if ahead is not None:
                    summary.merge(self.work.finish(self.conn, *ahead.result()))
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)  # a batch under way is staged; nothing of it is written
                raise


def delete_documents(conn: psycopg.Connection, tenant: str, doc_ids: list[str]) -> AppliedCounts:
    """Delete documents and everything derived from them (kgrag.delete_documents)."""
    with tenant_transaction(conn, tenant):
        row = conn.execute(Q["delete_documents"], [doc_ids]).fetchone()
    assert row is not None
    return AppliedCounts.model_validate(row[0])

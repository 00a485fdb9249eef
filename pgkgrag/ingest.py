"""Ingestion batches: read, chunk, extract, embed, write.

Python orchestrates and SQL does the set work: each batch is COPYed into staging tables and
applied by kgrag.ingest_apply() in one transaction, retried whole on a deadlock or serialization
failure. A document whose content hash is unchanged is skipped; a document whose extraction
failed is recorded in kgrag.ingest_failure and nothing of it is written.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from pgkgrag.chunking import ChunkSettings, chunk_text
from pgkgrag.db import tenant_transaction
from pgkgrag.documents import DocumentIn, InputItem, read_inputs
from pgkgrag.embedders import Embedder
from pgkgrag.errors import KgragError
from pgkgrag.extractors import Extraction, Extractor, PreparedDocument

LANGUAGES = {"en": "english", "pt": "portuguese", "es": "spanish", "fr": "french", "de": "german", "it": "italian"}
BATCH_STEPS = ("read and chunk", "extract", "embed chunks", "write")  # timed per batch, summed over writers
Progress = Callable[[str, int], None]  # (step, items done in this call): "documents" or "entity embeddings"


@dataclass
class IngestReport:
    read: int = 0
    unchanged: int = 0
    written: int = 0
    rejected_inputs: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    rejected_extractions: Counter[str] = field(default_factory=Counter)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    retries: int = 0

    @property
    def ok(self) -> bool:
        return not self.rejected_inputs and not self.failed

    def merge(self, part: IngestReport) -> None:
        """Add what one batch did (a batch reports into its own IngestReport)."""
        self.read += part.read
        self.unchanged += part.unchanged
        self.written += part.written
        self.rejected_inputs += part.rejected_inputs
        self.failed += part.failed
        self.counts.update(part.counts)
        self.rejected_extractions.update(part.rejected_extractions)
        for step, seconds in part.seconds.items():
            self.seconds[step] += seconds
        self.retries += part.retries


@dataclass(frozen=True)
class TenantSettings:
    chunking: ChunkSettings
    max_document_bytes: int
    default_language: str
    text_search_configs: frozenset[str]

    @classmethod
    def load(cls, conn: psycopg.Connection) -> TenantSettings:
        row = conn.execute(
            "SELECT kgrag.setting('chunk_max_chars')::int, kgrag.setting('chunk_min_chars')::int,"
            " kgrag.setting('chunk_overlap_chars')::int, kgrag.setting('max_document_mb')::float8,"
            " kgrag.setting('text_search_config') #>> '{}',"
            " (SELECT array_agg(cfgname::text) FROM pg_ts_config)"
        ).fetchone()
        assert row is not None
        return cls(
            ChunkSettings(max_chars=row[0], min_chars=row[1], overlap_chars=row[2]),
            int(row[3] * 1024 * 1024),
            row[4],
            frozenset(row[5]),
        )

    def language(self, doc: DocumentIn) -> str:
        lang = (doc.language or self.default_language).strip().lower()
        lang = LANGUAGES.get(lang.split("-")[0], lang)
        if lang not in self.text_search_configs:
            raise ValueError(
                f"unknown language {doc.language!r}: use a code ({', '.join(sorted(LANGUAGES))}) "
                "or a PostgreSQL text search configuration name"
            )
        return lang


def check_embedder(conn: psycopg.Connection, tenant: str, embedder: Embedder) -> None:
    """A tenant keeps the embedder it started with: vectors of two models do not compare. The
    choice is recorded at the first ingestion and can change only while nothing is embedded."""
    with tenant_transaction(conn, tenant):
        row = conn.execute(
            "SELECT kgrag.setting('embedder') #>> '{}', EXISTS (SELECT 1 FROM kgrag.chunk"
            " WHERE tenant_id = kgrag.current_tenant() AND embedding IS NOT NULL)"
        ).fetchone()
        assert row is not None
        recorded, embedded = row
        if recorded == embedder.name:
            return
        if recorded and embedded:
            raise KgragError(
                f"tenant {tenant!r} was embedded with {recorded!r}, not {embedder.name!r}: use --embedder {recorded} "
                "(or delete the tenant's documents first to start over with another embedder)"
            )
        conn.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value, description)"
            " VALUES (%s, 'embedder', to_jsonb(%s::text),"
            " 'The embedder of this tenant''s vectors; questions must be embedded with it.')"
            " ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value",
            [tenant, embedder.name],
        )


def _batches(items: Iterable[InputItem], size: int, report: IngestReport) -> Iterator[list[InputItem]]:
    seen: dict[str, str] = {}
    batch: list[InputItem] = []
    for item in items:
        if item.document is None:
            report.rejected_inputs.append((item.where, item.error or "invalid"))
            continue
        report.read += 1
        first = seen.setdefault(item.document.doc_id, item.where)
        if first != item.where:
            report.rejected_inputs.append((item.where, f"duplicate doc_id {item.document.doc_id!r} (first at {first})"))
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
        progress: Progress | None = None,
        workers: Sequence[psycopg.Connection] = (),
    ) -> None:
        """With `workers` (more connections to the same database), batches are written by
        1 + len(workers) threads at once, each batch still in its own transaction."""
        self.conn = conn
        self.tenant = tenant
        self.extractor = extractor
        self.embedder = embedder
        self.batch_size = batch_size
        self.progress = progress or (lambda step, n: None)
        self.workers = list(workers)
        self._embedding = threading.Lock()  # embedders need not be thread-safe; USE uses every core anyway
        with tenant_transaction(conn, tenant):
            self.settings = TenantSettings.load(conn)
        self.salt = f"{self.settings.chunking.fingerprint()}|{extractor.fingerprint()}"

    def run(self, paths: list[Path]) -> IngestReport:
        report = IngestReport()
        check_embedder(self.conn, self.tenant, self.embedder)
        self._write_batches(_batches(read_inputs(paths), self.batch_size, report), report)
        # New and re-described entities are embedded once, after the batches and outside their
        # transactions (no entity lock held while a model runs). An entity without an embedding
        # (say the run was stopped here) is found by lexical linking and embedded by the next
        # ingest or build.
        start = time.perf_counter()
        with tenant_transaction(self.conn, self.tenant):
            report.counts["entity embeddings"] += embed_missing(
                self.conn, self.embedder, "entity", progress=self.progress
            )
        report.seconds["embed entities"] += time.perf_counter() - start
        return report

    def _write_batches(self, batches: Iterator[list[InputItem]], report: IngestReport) -> None:
        if not self.workers:
            for batch in batches:
                report.merge(self._batch(self.conn, batch))
            return
        free: queue.SimpleQueue[psycopg.Connection] = queue.SimpleQueue()
        for conn in [self.conn, *self.workers]:
            free.put(conn)

        def write(batch: list[InputItem]) -> IngestReport:
            conn = free.get()
            try:
                return self._batch(conn, batch)
            finally:
                free.put(conn)

        jobs = 1 + len(self.workers)
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="pgkgrag-ingest") as pool:
            pending: set[Future[IngestReport]] = set()
            try:
                for batch in batches:  # read ahead by one batch per writer, no more
                    while len(pending) >= 2 * jobs:
                        done, pending = wait(pending, return_when=FIRST_COMPLETED)
                        for future in done:
                            report.merge(future.result())
                    pending.add(pool.submit(write, batch))
                for future in as_completed(pending):
                    report.merge(future.result())
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)  # batches being written finish or roll back
                raise

    def _prepare(self, item: InputItem, report: IngestReport) -> tuple[PreparedDocument, str, str] | None:
        doc = item.document
        assert doc is not None
        size = len(doc.text.encode("utf-8"))
        if size > self.settings.max_document_bytes:
            limit = self.settings.max_document_bytes / 2**20
            report.rejected_inputs.append(
                (
                    item.where,
                    f"document {doc.doc_id!r} is {size / 2**20:.1f} MB, above the "
                    f"limit of {limit:g} MB (setting max_document_mb)",
                )
            )
            return None
        try:
            lang = self.settings.language(doc)
        except ValueError as exc:
            report.rejected_inputs.append((item.where, str(exc)))
            return None
        chunks = chunk_text(doc.text, doc.title, self.settings.chunking)
        return PreparedDocument(doc, chunks), lang, doc.content_hash(self.salt)

    def _batch(self, conn: psycopg.Connection, batch: list[InputItem]) -> IngestReport:
        """Prepare, extract, embed and write one batch on `conn`; what it did is the result."""
        report = IngestReport()
        start = time.perf_counter()
        prepared = [p for p in (self._prepare(item, report) for item in batch) if p is not None]
        with tenant_transaction(conn, self.tenant):
            known: dict[str, str] = dict(
                conn.execute(
                    "SELECT doc_id, content_hash FROM kgrag.document WHERE tenant_id = kgrag.current_tenant()"
                    " AND doc_id = ANY(%s)",
                    [[p.document.doc_id for p, _, _ in prepared]],
                ).fetchall()
            )
        todo = [(p, lang, h) for p, lang, h in prepared if known.get(p.document.doc_id) != h]
        report.unchanged += len(prepared) - len(todo)
        report.seconds["read and chunk"] += time.perf_counter() - start
        self.progress("documents", len(batch) - len(todo))
        if not todo:
            return report

        start = time.perf_counter()
        with tenant_transaction(conn, self.tenant):
            results = self.extractor.extract(conn, [p for p, _, _ in todo])
        extracted: list[tuple[PreparedDocument, str, str, Extraction]] = []
        for p, lang, content_hash in todo:
            result = results[p.document.doc_id]
            if isinstance(result, Exception):
                report.failed.append((p.document.doc_id, str(result)))
                with tenant_transaction(conn, self.tenant):
                    conn.execute(
                        "SELECT kgrag.record_ingest_failure(%s, %s, %s)", [p.document.doc_id, content_hash, str(result)]
                    )
                continue
            report.rejected_extractions.update(result.rejected)
            extracted.append((p, lang, content_hash, result))
        report.seconds["extract"] += time.perf_counter() - start
        if not extracted:
            self.progress("documents", len(todo))
            return report

        start = time.perf_counter()
        vectors = self._chunk_embeddings(conn, [p for p, _, _, _ in extracted])
        report.seconds["embed chunks"] += time.perf_counter() - start

        start = time.perf_counter()
        counts = self._write(conn, extracted, vectors, report)
        report.seconds["write"] += time.perf_counter() - start
        report.written += len(extracted)
        report.counts.update({k: v for k, v in counts.items() if isinstance(v, int)})
        report.rejected_extractions.update(counts.get("rejected", {}))
        self.progress("documents", len(todo))
        return report

    def _chunk_embeddings(self, conn: psycopg.Connection, docs: list[PreparedDocument]) -> dict[str, np.ndarray]:
        """Embeddings of the chunk texts the tenant does not have yet, by content hash."""
        by_hash = {c.content_hash: c.text for p in docs for c in p.chunks}
        with tenant_transaction(conn, self.tenant):
            have = {
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT content_hash FROM kgrag.chunk WHERE tenant_id = kgrag.current_tenant()"
                    " AND content_hash = ANY(%s) AND embedding IS NOT NULL",
                    [list(by_hash)],
                )
            }
        missing = sorted(h for h in by_hash if h not in have)
        if not missing:
            return {}
        with self._embedding:
            vectors = self.embedder.embed([by_hash[h] for h in missing])
        return dict(zip(missing, vectors, strict=True))

    def _write(
        self,
        conn: psycopg.Connection,
        extracted: list[tuple[PreparedDocument, str, str, Extraction]],
        vectors: dict[str, np.ndarray],
        report: IngestReport,
    ) -> dict[str, Any]:
        @retry(
            retry=retry_if_exception_type((psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)),
            stop=stop_after_attempt(6),
            wait=wait_random_exponential(multiplier=0.05, max=2),
            reraise=True,
            before_sleep=lambda _: report.__setattr__("retries", report.retries + 1),
        )
        def attempt() -> dict[str, Any]:
            with tenant_transaction(conn, self.tenant):
                conn.execute("SELECT kgrag.stage_begin()")
                self._copy(conn, extracted, vectors)
                row = conn.execute("SELECT kgrag.ingest_apply()").fetchone()
                assert row is not None
                counts: dict[str, Any] = row[0]
                return counts

        return attempt()

    def _copy(
        self,
        conn: psycopg.Connection,
        extracted: list[tuple[PreparedDocument, str, str, Extraction]],
        vectors: dict[str, np.ndarray],
    ) -> None:
        with conn.cursor() as cur:
            with cur.copy(
                "COPY pg_temp.kgrag_stage_document (doc_id, title, source_uri, metadata, lang, content_hash) FROM STDIN"
            ) as copy:
                for p, lang, content_hash, _ in extracted:
                    doc = p.document
                    copy.write_row((doc.doc_id, doc.title, doc.source_uri, _json(doc.metadata), lang, content_hash))
            with cur.copy(
                "COPY pg_temp.kgrag_stage_chunk (doc_id, ordinal, char_start, char_end, title, text,"
                " content_hash, embedding) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "int4", "int4", "int4", "text", "text", "text", "vector"])
                for p, _, _, _ in extracted:
                    for c in p.chunks:
                        copy.write_row(
                            (
                                p.document.doc_id,
                                c.ordinal,
                                c.char_start,
                                c.char_end,
                                c.title,
                                c.text,
                                c.content_hash,
                                vectors.get(c.content_hash),
                            )
                        )
            with cur.copy(
                "COPY pg_temp.kgrag_stage_entity (doc_id, name, type, description, answer, answer_ordinal,"
                " aliases, ordinals) FROM STDIN"
            ) as copy:
                for p, _, _, found in extracted:
                    for e in found.entities:
                        copy.write_row(
                            (
                                p.document.doc_id,
                                e.name,
                                e.type,
                                e.description,
                                e.answer,
                                e.answer_ordinal,
                                e.aliases,
                                e.ordinals,
                            )
                        )
            with cur.copy(
                "COPY pg_temp.kgrag_stage_relation (doc_id, ordinal, source, source_type, target, target_type,"
                " rel, quote, confidence, negated, extractor, valid_from, valid_to) FROM STDIN"
            ) as copy:
                for p, _, _, found in extracted:
                    for r in found.relations:
                        copy.write_row(
                            (
                                p.document.doc_id,
                                r.ordinal,
                                r.source,
                                r.source_type,
                                r.target,
                                r.target_type,
                                r.rel,
                                r.quote,
                                r.confidence,
                                r.negated,
                                r.extractor,
                                r.valid_from,
                                r.valid_to,
                            )
                        )


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def embed_missing(
    conn: psycopg.Connection, embedder: Embedder, kind: str, batch: int = 256, progress: Progress | None = None
) -> int:
    """Embed the entities (name and description) or reports that have no embedding yet; progress
    hears ("entity embeddings" or "report embeddings", how many were just stored)."""
    if kind == "entity":
        rows = conn.execute(
            "SELECT entity_id, CASE WHEN description <> '' THEN name || ': ' || description ELSE name END"
            " FROM kgrag.entity WHERE tenant_id = kgrag.current_tenant() AND embedding IS NULL ORDER BY entity_id"
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT community_id, report FROM kgrag.community_report"
            " WHERE tenant_id = kgrag.current_tenant() AND embedding IS NULL ORDER BY community_id"
        ).fetchall()
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        vectors = embedder.embed([text for _, text in part])
        conn.execute(
            "SELECT kgrag.store_embeddings(%s, %s, %s, %s)",
            [
                kind,
                [i for i, _ in part],
                list(vectors),
                [hashlib.sha256(text.encode()).hexdigest()[:16] for _, text in part],
            ],
        )
        if progress is not None:
            progress(f"{kind} embeddings", len(part))
    return len(rows)


def delete_documents(conn: psycopg.Connection, tenant: str, doc_ids: list[str]) -> dict[str, Any]:
    with tenant_transaction(conn, tenant):
        row = conn.execute("SELECT kgrag.delete_documents(%s)", [doc_ids]).fetchone()
        assert row is not None
        result: dict[str, Any] = row[0]
        return result

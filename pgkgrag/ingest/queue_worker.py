"""pgkgrag worker: the documents submitted to the ingestion queue (kgrag.submit_document), ingested
with the same batches as pgkgrag ingest.

A worker claims a page of a tenant's queued tickets (kgrag_private.claim_tickets: FOR UPDATE SKIP
LOCKED, so any number of workers share the queue), ingests them, and settles each ticket
(kgrag_private.settle_tickets): stored, unchanged, failed with its reason, or tried again later. A
worker killed at any point leaves its claims to the next claim of any worker (its session held
their key); what it had written is unchanged when tried again, so nothing is stored twice. When an
endpoint (the embedder, the LLM) fails a whole page, the page waits, longer each time, and the
next claim after the wait probes it: a circuit breaker held in the queue itself, for every worker
of the tenant. Communities, reports and answers are built after a quiet period, not per document.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.vectors import embed_pending
from pgkgrag.graph.build import BuildSummary, build
from pgkgrag.ingest.extractors.base import Extractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.ingest.inputs import InputItem, document_item
from pgkgrag.ingest.summary import IngestSummary
from pgkgrag.queries import Q

log = logging.getLogger("pgkgrag.worker")
CHANNEL = "kgrag_ingest"
QUEUE_STATES = (
    "queued",
    "waiting",
    "working",
    "stored",
    "unchanged",
    "failed",
)  # (kgrag.ingest_queue's, and waiting)  # kgrag.submit_document notifies it


class FailedAlone(Exception):
    """A document tried alone failed outside the database; its cause says how."""


@dataclass
class WorkerCounts:
    """What a worker did, by ticket state, and the builds it ran."""

    settled: dict[str, int] = field(default_factory=dict)
    pages: int = 0
    endpoint_failures: int = 0
    builds: list[BuildSummary] = field(default_factory=list)

    def add(self, counts: dict[str, int]) -> None:
        for state, n in counts.items():
            self.settled[state] = self.settled.get(state, 0) + n


def read_claims(rows: list[Any]) -> tuple[list[tuple[int, str, Any]], list[dict[str, Any]]]:
    """The claimed tickets' documents (ticket, doc_id, document), and the settlement of those whose
    JSON this process cannot read (a number past Python's digits, nesting past its recursion)."""
    readable, unreadable = [], []
    for ticket, doc_id, text, _ in rows:
        try:
            readable.append((int(ticket), str(doc_id), json.loads(text)))
        except (ValueError, RecursionError) as exc:
            unreadable.append(
                {"ticket": int(ticket), "state": "failed", "reason": f"the document cannot be read: {exc}"}
            )
    return readable, unreadable


def outcomes(claimed: Sequence[tuple[int, str]], summary: IngestSummary) -> list[dict[str, Any]]:
    """How each claimed ticket ((ticket, doc_id)) ends after its page was ingested: unchanged,
    failed (the document is at fault: it is no document, or past a limit), retry (its extraction
    failed: it may pass later) or stored."""
    tickets = {f"ticket:{ticket}": ticket for ticket, _ in claimed}
    by_doc = {doc_id: ticket for ticket, doc_id in claimed}
    ends: dict[int, dict[str, Any]] = {}
    for where in summary.unchanged_at:
        ends[tickets[where]] = {"state": "unchanged"}
    for where, why in summary.rejected_inputs:
        ends[tickets[where]] = {"state": "failed", "reason": why}
    for doc_id, why in summary.failed:
        ends[by_doc[doc_id]] = {"state": "retry", "reason": f"extraction failed: {why}"}
    return [{"ticket": ticket, **ends.get(ticket, {"state": "stored"})} for ticket, _ in claimed]


class QueueWorker:
    """Drains the ingestion queue of some tenants on one connection of its own (LISTENing on
    another), building each tenant's communities, reports and answers once its queue was quiet
    for `quiet_s` seconds."""

    def __init__(
        self,
        conn: psycopg.Connection,
        listen: psycopg.Connection | None,
        tenants: Sequence[str],
        extractor_for: Callable[[str], Extractor],
        embedder_for: Callable[[str], Embedder],
        *,
        page: int = 200,
        batch_size: int = 200,
        quiet_s: float = 5.0,
        wait_s: float = 15.0,
        progress: Callable[[str, int], None] | None = None,
        stage_conn: psycopg.Connection | None = None,
    ) -> None:
        self.conn = conn
        self.stage_conn = stage_conn  # (as pgkgrag ingest's: the next batch chunked and extracted meanwhile)
        self.listen = listen
        self.tenants = list(tenants)
        self.extractor_for = extractor_for
        self.embedder_for = embedder_for
        self.page = page
        self.batch_size = batch_size
        self.quiet_s = quiet_s
        self.wait_s = wait_s  # a page whose endpoint failed waits this long (doubled by each wait in a row)
        self.progress = progress or (lambda step, n: None)
        self.counts = WorkerCounts()
        self.waiting = False  # whether it waits for a submission (nothing under way)
        self._stop: Callable[[], bool] = lambda: False
        # (what, label, how many): the worker's metrics hear of it (pgkgrag.ingest.worker_metrics)
        self.observe: Callable[[str, str, int], None] = lambda what, label, n: None
        self._unbuilt: dict[str, float] = {}  # tenant -> when it last stored something not built yet

    def drain(self, tenant: str) -> int:
        """Claim, ingest and settle the tenant's queued tickets until none is left to claim now;
        returns how many were settled."""
        done = 0
        while not self._stop():  # (a stop asked ends the page under way, not the queue)
            with tenant_transaction(self.conn, tenant):
                rows = self.conn.execute(Q["claim_tickets"], [self.page]).fetchall()
            if not rows:
                break
            self.counts.pages += 1
            self.observe("pages", "", 1)
            readable, unreadable = read_claims(rows)
            if unreadable:
                self._settle(tenant, unreadable)
                done += len(unreadable)
            if readable:
                done += self._ingest(tenant, readable)
        if done and not self._stop():
            # new entities embedded once the queue is empty, not after every page: an entity row
            # with a vector costs its index an entry at each later write (linking finds one
            # without a vector by its names meanwhile, as after pgkgrag ingest; the next drain or
            # build embeds what an endpoint failed here)
            try:
                embed_pending(self.conn, tenant, self.embedder_for(tenant), "entity", progress=self.progress)
            except Exception as exc:
                self._rollback()
                log.warning("tenant %s: entities not embedded (%s: %s)", tenant, type(exc).__name__, exc)
        return done

    def _ingest(self, tenant: str, rows: list[tuple[int, str, Any]], *, alone: bool = False) -> int:
        claimed = [(ticket, doc_id) for ticket, doc_id, _ in rows]
        items: list[InputItem] = [document_item(f"ticket:{ticket}", doc) for ticket, _, doc in rows]
        try:
            ingestor = Ingestor(
                self.conn,
                tenant,
                self.extractor_for(tenant),
                self.embedder_for(tenant),
                batch_size=self.batch_size,
                stage_conn=self.stage_conn,
            )
            summary = ingestor.write_items(items, embed_entities=False)
        except psycopg.Error as exc:  # the database refused something of the page: each document alone
            if self.conn.broken or self.conn.closed:
                raise  # the connection itself: nothing can be settled on it (another worker takes the claims)
            self._rollback()
            if len(rows) > 1:
                return sum(self._ingest(tenant, [row]) for row in rows)
            why = f"the database refused it ({type(exc).__name__}: {str(exc)[:300]})"
            self._settle(tenant, [{"ticket": claimed[0][0], "state": "retry", "reason": why}])
            return 1
        except Exception as exc:  # an endpoint (the embedder, the LLM), or one document, failed the page
            self._rollback()
            if len(rows) == 1 and alone:
                raise FailedAlone(exc) from exc
            return self._split(tenant, rows, exc)
        ends = outcomes(claimed, summary)
        self._settle(tenant, ends)
        if any(end["state"] == "stored" for end in ends):
            self._unbuilt[tenant] = time.monotonic()
        self.progress("documents", len(ends))
        return len(ends)

    def _split(self, tenant: str, rows: list[tuple[int, str, Any]], exc: Exception) -> int:
        """A page that failed outside the database, taken one document at a time: those that fail
        alone while another goes through are at fault (an attempt counted, then failed); while none
        goes through, two failing in a row say the endpoint is down, and the rest of the page waits
        with them (no attempt counted, longer each time: a breaker every worker obeys)."""
        failed: list[tuple[int, BaseException]] = []
        passed = 0
        rest: list[tuple[int, str, Any]] = []
        for index, row in enumerate(rows if len(rows) > 1 else []):
            try:
                self._ingest(tenant, [row], alone=True)
                passed += 1
            except FailedAlone as failure:
                failed.append((row[0], failure.__cause__ or failure))
                if not passed and len(failed) >= 2:
                    rest = rows[index + 1 :]
                    break
        if len(rows) == 1:
            failed = [(rows[0][0], exc)]
        state = "retry" if passed else "wait"
        if not passed:
            self.counts.endpoint_failures += 1
            self.observe("endpoint_failures", "", 1)
        said = "the page failed" if state == "wait" else "it failed alone while others went through"
        ends = [
            {"ticket": ticket, "state": state, "reason": f"{said} ({type(why).__name__}: {str(why)[:300]})",
             "delay": self.wait_s}
            for ticket, why in failed
        ]  # fmt: skip
        ends += [
            {"ticket": ticket, "state": "wait", "delay": self.wait_s,
             "reason": f"the page failed ({type(exc).__name__}: {str(exc)[:300]})"}
            for ticket, _, _ in rest
        ]  # fmt: skip
        self._settle(tenant, ends)
        return len(rows)

    def _rollback(self) -> None:
        for conn in (self.conn, self.stage_conn):
            if conn is not None and not conn.closed:
                conn.rollback()

    def _settle(self, tenant: str, ends: list[dict[str, Any]]) -> None:
        with tenant_transaction(self.conn, tenant):
            row = self.conn.execute(Q["settle_tickets"], [Jsonb(ends)]).fetchone()
        settled = row[0] if row else {}
        self.counts.add(settled)
        for state, n in settled.items():
            self.observe("settled", state, n)

    def build_quiet(self, *, now: bool = False) -> None:
        """Build the tenants that stored something and have been quiet for quiet_s (now: all of them)."""
        for tenant, last in sorted(self._unbuilt.items()):
            if now or time.monotonic() - last >= self.quiet_s:
                try:
                    self.counts.builds.append(build(self.conn, tenant, self.embedder_for(tenant)))
                except Exception as exc:
                    self._rollback()
                    log.warning("tenant %s: build failed (%s: %s)", tenant, type(exc).__name__, exc)
                    self._unbuilt[tenant] = time.monotonic()
                    continue
                del self._unbuilt[tenant]

    def run(self, *, drain_only: bool, stop: Callable[[], bool] = lambda: False, poll_s: float = 30.0) -> WorkerCounts:
        """Drain every tenant; with drain_only, build and return; else wait for a submission
        (LISTEN, or poll_s at most: a notification missed is found then), build the tenants that
        went quiet, and go on until stop() (checked between pages too)."""
        self._stop = stop
        while True:
            for tenant in self.tenants:
                self.drain(tenant)
                for state, n in ({s: 0 for s in QUEUE_STATES} | queue_states(self.conn, tenant)).items():
                    self.observe(f"queue:{tenant}", state, n)
            if stop():  # (stopping: no build; the next worker or pgkgrag build does it)
                return self.counts
            if drain_only:
                self.build_quiet(now=True)
                return self.counts
            self.build_quiet()
            self._wait(min(poll_s, self.quiet_s if self._unbuilt else poll_s))

    def _wait(self, seconds: float) -> None:
        self.waiting = True  # (a stop asked now may interrupt: nothing is under way)
        try:
            if self.listen is None:
                time.sleep(seconds)
                return
            for _ in self.listen.notifies(timeout=seconds, stop_after=1):
                pass  # a submission: drain again
        finally:
            self.waiting = False


def start_listening(conn: psycopg.Connection) -> None:
    """LISTEN on the queue's channel (conn in autocommit)."""
    conn.execute(f"LISTEN {CHANNEL}")


def queue_states(conn: psycopg.Connection, tenant: str) -> dict[str, int]:
    """The tenant's tickets by state (kgrag.ingest_queue); "waiting": queued, held back after an
    endpoint failed them."""
    with tenant_transaction(conn, tenant):
        return {str(state): int(n) for state, n in conn.execute(Q["queue_states"]).fetchall()}

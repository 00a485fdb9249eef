"""What an ingestion run did, batch by batch: the counts SQL returns for a batch, what the batches
added to the graph, and the run's summary (the CLI prints it, a caller checks `ok`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, fields

from pydantic import BaseModel, ConfigDict


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
    namesakes_moved: int = 0  # documents whose namesake changed entity (kgrag_private.resolve_namesakes)


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
    # files that could not be read: (doc_id, a hash of their version, why), for kgrag.ingest_failure
    unreadable: list[tuple[str, str, str]] = field(default_factory=list)

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
        self.unreadable += part.unreadable

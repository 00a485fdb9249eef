"""What an ingestion run did, batch by batch: the counts SQL returns for a batch, what the batches
added to the graph, and the run's summary (the CLI prints it, a caller checks `ok`)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, fields
from typing import Any

from pydantic import BaseModel, ConfigDict


class AppliedCounts(BaseModel):
    """What kgrag_private.ingest_apply() returns (and kgrag.delete_documents() part of), typed."""

    model_config = ConfigDict(extra="forbid")
    documents: int = 0
    chunks: int = 0
    mentions: int = 0
    relations: int = 0
    rejected: dict[str, int] = {}
    dropped: list[dict[str, str]] = []  # the relations rejected, with their doc_id (the first 1,000)
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
    # the document a rejected input was, where known (where -> doc_id): its failure is kept under it
    rejected_doc_ids: dict[str, str] = field(default_factory=dict)
    # relations dropped from documents that were written: (where, why)
    dropped_relations: list[tuple[str, str]] = field(default_factory=list)
    sources: set[str] = field(default_factory=set)  # the files read
    unchanged_at: list[str] = field(default_factory=list)  # where the documents skipped as unchanged are

    def kept_lines(self) -> list[str]:
        """The failed-line keys a run leaves as they were: the lines of the documents it skipped as
        unchanged (their dropped relations were not looked at again)."""
        return sorted(f"#{where}" for where in self.unchanged_at)

    def input_failures(self) -> list[dict[str, Any]]:
        """Every input this run could not take, for kgrag_private.record_input_failures: its file,
        line (None for a whole file), document (None where it had none) and why."""
        failures = [(where, why, self.rejected_doc_ids.get(where)) for where, why in self.rejected_inputs]
        failures += [(where, why, None) for where, why in self.dropped_relations]
        return [
            {
                "source": storable(split_where(where)[0]),
                "line": split_where(where)[1],
                "doc_id": storable(doc_id) if doc_id is not None else None,
                "reason": storable(why),
            }
            for where, why, doc_id in failures
        ]

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
        self.rejected_doc_ids.update(part.rejected_doc_ids)
        self.dropped_relations += part.dropped_relations
        self.sources |= part.sources
        self.unchanged_at += part.unchanged_at


def storable(text: str) -> str:
    """The text as PostgreSQL can store it: a NUL or a lone surrogate (what a hostile line may carry
    into a name or a reason) written as its escape."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def split_where(where: str) -> tuple[str, int | None]:
    """An input's place as readers name it ("file.jsonl:7", or a file alone): (file, line or None)."""
    match = re.fullmatch(r"(.+):(\d+)", where)
    return (match[1], int(match[2])) if match else (where, None)

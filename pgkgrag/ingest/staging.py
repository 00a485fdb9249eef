"""Staging: the rows a batch COPYs into the temporary tables of kgrag_private.stage_begin().

Each staging table's columns are declared here once, in the order the rows are written;
tests/schema/test_driver_sql.py checks them against the tables kgrag_private.stage_begin() creates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from pgkgrag.ingest.extractors.base import Extraction, PreparedDocument
from pgkgrag.queries import Q


@dataclass(frozen=True)
class StagedTable:
    name: str
    columns: tuple[str, ...]
    binary_types: tuple[str, ...] = ()  # COPY in binary with these types (vectors go faster so)


DOCUMENTS = StagedTable(
    "kgrag_stage_document", ("doc_id", "title", "source_uri", "metadata", "lang", "content_hash", "access")
)
CHUNKS = StagedTable(
    "kgrag_stage_chunk",
    ("doc_id", "ordinal", "char_start", "char_end", "title", "text", "content_hash", "embedding", "page", "headings"),
    ("text", "int4", "int4", "int4", "text", "text", "text", "vector", "int4", "text[]"),
)
ENTITIES = StagedTable(
    "kgrag_stage_entity",
    ("doc_id", "name", "type", "description", "answer", "answer_ordinal", "aliases", "ordinals", "identifier"),
)
RELATIONS = StagedTable(
    "kgrag_stage_relation",
    (
        "doc_id",
        "ordinal",
        "source",
        "source_type",
        "target",
        "target_type",
        "rel",
        "quote",
        "confidence",
        "negated",
        "extractor",
        "valid_from",
        "valid_to",
    ),
)
CLUSTERS = StagedTable("kgrag_stage_cluster", ("entity_id", "level", "cluster", "parent_cluster"))
SET_ASIDE = StagedTable("kgrag_stage_set_aside", ("doc_id", "ordinal", "what", "reason", "quote", "extractor"))
STAGED = (DOCUMENTS, CHUNKS, ENTITIES, RELATIONS, CLUSTERS, SET_ASIDE)


@dataclass(frozen=True)
class ExtractedDocument:
    """A document ready to be written: its chunks, its text search configuration, its content
    hash and what the extractor found in it."""

    prepared: PreparedDocument
    lang: str
    content_hash: str
    found: Extraction


def begin(conn: psycopg.Connection) -> None:
    """Create (or empty) the staging tables of this transaction."""
    conn.execute(Q["stage_begin"])


def copy_rows(conn: psycopg.Connection, table: StagedTable, rows: Iterable[Sequence[Any]]) -> None:
    statement = sql.SQL(Q["copy_binary"] if table.binary_types else Q["copy_text"]).format(
        table=sql.Identifier("pg_temp", table.name),
        columns=sql.SQL(", ").join(sql.Identifier(c) for c in table.columns),
    )
    with conn.cursor() as cur, cur.copy(statement) as copy:
        if table.binary_types:
            copy.set_types(list(table.binary_types))
        for row in rows:
            copy.write_row(row)


def stage_documents(
    conn: psycopg.Connection, docs: Sequence[ExtractedDocument], vectors: dict[str, np.ndarray]
) -> None:
    """COPY a batch's documents, chunks (with the vectors of new chunk texts, by content hash),
    entities and relations into the staging tables."""
    copy_rows(
        conn,
        DOCUMENTS,
        (
            (
                d.prepared.document.doc_id,
                d.prepared.document.title,
                d.prepared.document.source_uri,
                json.dumps(d.prepared.document.metadata, ensure_ascii=False, sort_keys=True),
                d.lang,
                d.content_hash,
                d.prepared.document.access,
            )
            for d in docs
        ),
    )
    copy_rows(
        conn,
        CHUNKS,
        (
            (
                d.prepared.document.doc_id,
                c.ordinal,
                c.char_start,
                c.char_end,
                c.title,
                c.text,
                c.content_hash,
                vectors.get(c.content_hash),
                c.page,
                list(c.headings),
            )
            for d in docs
            for c in d.prepared.chunks
        ),
    )
    copy_rows(
        conn,
        ENTITIES,
        (
            (
                d.prepared.document.doc_id,
                e.name,
                e.type,
                e.description,
                e.answer,
                e.answer_ordinal,
                e.aliases,
                e.ordinals,
                e.identifier,
            )
            for d in docs
            for e in d.found.entities
        ),
    )
    copy_rows(
        conn,
        RELATIONS,
        (
            (
                d.prepared.document.doc_id,
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
            for d in docs
            for r in d.found.relations
        ),
    )
    copy_rows(
        conn,
        SET_ASIDE,
        (
            (d.prepared.document.doc_id, s.ordinal, s.what, s.reason, s.quote, s.extractor)
            for d in docs
            for s in d.found.set_aside
        ),
    )

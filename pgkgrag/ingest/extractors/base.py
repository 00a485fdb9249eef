"""Extraction: what entities a document's chunks mention and what relations they state.

Implementations of one small interface:
- `provided` (here): the entities and relations given in the JSONL;
- `keyphrases` (pgkgrag.ingest.extractors.keyphrases): names and YAKE! keyphrases found in any text, offline;
- `auto` (pgkgrag.ingest.extractors.choice, the default): provided for a document that carries entities or
  relations, keyphrases for one that does not;
- `gazetteer` (pgkgrag.ingest.extractors.gazetteer): known names (a file, or the tenant's entities) found in the text;
- `llm` (pgkgrag.ingest.extractors.llm): any OpenAI-compatible chat endpoint, validated.

Names are compared in their canonical form, which only SQL computes (kgrag.canonical_name):
Python asks the database for it in one call per batch rather than keeping a second copy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

import psycopg
from psycopg import sql

from pgkgrag.ingest.chunking import Chunk
from pgkgrag.ingest.inputs import DocumentIn
from pgkgrag.queries import Q

EXTRACTORS = ("auto", "provided", "keyphrases", "gazetteer", "llm")


@dataclass
class FoundEntity:
    name: str
    type: str
    description: str = ""
    aliases: list[str] = field(default_factory=list)
    answer: str | None = None
    answer_ordinal: int | None = None
    ordinals: list[int] | None = None  # the chunks that cite it
    identifier: str | None = None  # verified: the input or the text states it


@dataclass
class FoundRelation:
    source: str
    target: str
    rel: str
    extractor: str
    ordinal: int | None = None  # the chunk that states it
    source_type: str | None = None
    target_type: str | None = None
    quote: str = ""
    confidence: float = 1.0
    negated: bool = False
    valid_from: datetime | None = None
    valid_to: datetime | None = None


@dataclass(frozen=True)
class SetAside:
    """What an extractor found in a chunk and did not take, for a person to check
    (kgrag.review_queue): a relation or an entity of a type outside the ontology."""

    ordinal: int  # the chunk
    what: str  # "Ana Costa -[FRIEND_OF]-> Bruno Lima", "Mars (Planet)"
    reason: str
    quote: str = ""
    extractor: str = ""


@dataclass
class Extraction:
    entities: list[FoundEntity] = field(default_factory=list)
    relations: list[FoundRelation] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    set_aside: list[SetAside] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # each relation rejected, and why (the driver names its line)


@dataclass(frozen=True)
class PreparedDocument:
    document: DocumentIn
    chunks: list[Chunk]
    config: str  # the text search configuration its language stands for (kgrag.text_search_config)


class ExtractionFailed(Exception):
    """A document could not be extracted at all (e.g. the LLM endpoint kept failing)."""


class Extractor(Protocol):
    name: str

    def fingerprint(self) -> str:
        """Name and version: part of every document's content hash."""
        ...

    def extract(self, conn: psycopg.Connection, docs: list[PreparedDocument]) -> dict[str, Extraction | Exception]:
        """Per doc_id: what was found, or why the document could not be extracted."""
        ...


def _each(conn: psycopg.Connection, function: str, texts: list[str]) -> list[Any]:
    """kgrag.<function>(text) of every text, in order, in one round trip."""
    if not texts:
        return []
    query = sql.SQL(Q["map_texts"]).format(function=sql.Identifier(function))
    return [r[0] for r in conn.execute(query, [texts]).fetchall()]


def cased_names(conn: psycopg.Connection, names: list[str]) -> list[bool]:
    """kgrag.is_cased_name of every name, in order: whether the case rule of one-word names applies."""
    return [bool(cased) for cased in _each(conn, "is_cased_name", names)]


def capitalized_words(conn: psycopg.Connection, texts: list[str]) -> list[frozenset[str]]:
    """kgrag.capitalized_words of every text, in order: the words each capitalizes, canonical."""
    return [frozenset(words or ()) for words in _each(conn, "capitalized_words", texts)]


def normalized(conn: psycopg.Connection, form: Literal["canonical_name", "squash"], texts: list[str]) -> list[str]:
    """kgrag.canonical_name or kgrag.squash of every text, in order."""
    return [value or "" for value in _each(conn, form, texts)]


def ontology_types(conn: psycopg.Connection, kind: Literal["entity", "relation"], types: list[str]) -> list[str | None]:
    """The type of the tenant's ontology each given type names, or None (kgrag.ontology_entity_type,
    kgrag.ontology_relation_type)."""
    return _each(conn, f"ontology_{kind}_type", types)


def _chunk_of(chunks: list[Chunk], position: int) -> int | None:
    for chunk in chunks:
        if chunk.char_start <= position < chunk.char_end:
            return chunk.ordinal
    return None


class ProvidedExtractor:
    """Entities and relations as the JSONL gives them, located in the chunks.

    An entity is mentioned by the chunks whose text contains its name or an alias (word-bounded,
    case and accent insensitive: canonical forms), or by every chunk of its document when none
    does. A relation's endpoints are entities of the same document, by name or alias (and type
    when given); it is stated in the chunk holding its quote, else in the first chunk citing both.
    """

    name = "provided"

    def fingerprint(self) -> str:
        return "provided:v2"

    def extract(self, conn: psycopg.Connection, docs: list[PreparedDocument]) -> dict[str, Extraction | Exception]:
        texts: list[str] = []
        for prepared in docs:
            texts += [c.text for c in prepared.chunks]
            for e in prepared.document.entities:
                texts += [e.type, e.name, *e.aliases]
            for r in prepared.document.relations:
                texts += [r.source, r.target, r.source_type or "", r.target_type or ""]
        canon = iter(normalized(conn, "canonical_name", texts))
        return {prepared.document.doc_id: self._one(prepared, canon) for prepared in docs}

    def _one(self, prepared: PreparedDocument, canon: Iterator[str]) -> Extraction:
        doc, chunks = prepared.document, prepared.chunks
        out = Extraction()
        haystacks = [f" {next(canon)} " for _ in chunks]
        by_name: dict[str, list[FoundEntity]] = {}
        types: dict[int, str] = {}
        for entity in doc.entities:
            type_key = next(canon)
            keys = {next(canon) for _ in range(1 + len(entity.aliases))} - {""}
            ordinals = [
                c.ordinal for c, hay in zip(chunks, haystacks, strict=True) if any(f" {key} " in hay for key in keys)
            ]
            answer_ordinal = None
            if entity.answer:
                answer_ordinal = next((c.ordinal for c in chunks if entity.answer in c.text), None)
            found = FoundEntity(
                entity.name,
                entity.type,
                entity.description,
                list(entity.aliases),
                entity.answer,
                answer_ordinal,
                ordinals or [c.ordinal for c in chunks],
                entity.identifier,
            )
            out.entities.append(found)
            types[id(found)] = type_key
            for key in keys:
                by_name.setdefault(key, []).append(found)
        for rel in doc.relations:
            source_key, target_key, source_type, target_type = next(canon), next(canon), next(canon), next(canon)
            src = next((e for e in by_name.get(source_key, []) if not source_type or types[id(e)] == source_type), None)
            dst = next((e for e in by_name.get(target_key, []) if not target_type or types[id(e)] == target_type), None)
            stated = f"relation {rel.source} -[{rel.type}]-> {rel.target} dropped"
            if src is None or dst is None:
                out.rejected["relation endpoint is not an entity of the document"] += 1
                end = "source" if src is None else "target"
                out.dropped.append(f"{stated}: its {end} is not an entity of the document")
                continue
            ordinal = None
            if rel.quote:
                position = doc.text.find(rel.quote)
                if position < 0:
                    out.rejected["quote not found in the document"] += 1
                    out.dropped.append(f"{stated}: its quote is not in the document")
                    continue
                ordinal = _chunk_of(chunks, position)
            if ordinal is None:
                assert src.ordinals is not None and dst.ordinals is not None
                both = sorted(set(src.ordinals) & set(dst.ordinals))
                ordinal = both[0] if both else min(src.ordinals + dst.ordinals)
            out.relations.append(
                FoundRelation(
                    src.name,
                    dst.name,
                    rel.type,
                    self.name,
                    ordinal,
                    src.type,
                    dst.type,
                    rel.quote,
                    rel.confidence,
                    rel.negated,
                    rel.valid_from,
                    rel.valid_to,
                )
            )
        return out

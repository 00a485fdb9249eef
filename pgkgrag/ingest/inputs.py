"""Input documents as pgkgrag takes them (a JSONL line, or what a reader made of a file),
validated with pydantic: a bad one is reported with where it is and why, and skipped; the rest goes
on. Reading the files is pgkgrag.ingest.readers'."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")  # a date without a time
GROUP_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")  # as kgrag_private.checked_groups takes them


MAX_DEPTH = 32  # how deeply a line's JSON may nest (metadata included)


def _sound(value: object, at: str = "", depth: int = 0) -> None:
    """Refuse what PostgreSQL or the JSON it stores cannot hold, anywhere in a line: NUL in a text
    (keys included), a lone surrogate (not UTF-8), a number that is not finite, deep nesting."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{at or 'the line'} nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{at or 'a text'} contains NUL (\\u0000), which PostgreSQL text cannot hold")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"{at or 'a text'} holds a lone surrogate ({exc.reason}): not UTF-8") from exc
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{at or 'a number'} is {value}, which JSON cannot hold")
    elif isinstance(value, dict):
        for key, item in value.items():
            _sound(key, f"{at}.{key!s}"[:80].lstrip(".") + " (a key)", depth + 1)
            _sound(item, f"{at}.{key!s}"[:80].lstrip("."), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _sound(item, f"{at}[{i}]", depth + 1)


class EntityIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # how long a name, an alias or a type may be is SQL's rule (setting max_alias_chars)
    name: str = Field(min_length=1)
    type: str = Field(default="Concept", min_length=1)
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    answer: str | None = None
    # a verified identifier (an employee number, a tax id, a URL): it decides the entity's identity
    identifier: str | None = None

    @field_validator("identifier")
    @classmethod
    def _identifier(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("name", "type")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str]) -> list[str]:
        return [a.strip() for a in value if a.strip()]


class RelationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1)
    target: str = Field(min_length=1)
    type: str = Field(min_length=1)
    source_type: str | None = None
    target_type: str | None = None
    quote: str = ""
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    negated: bool = False
    valid_from: datetime | None = None
    valid_to: datetime | None = None

    @field_validator("valid_from", "valid_to", mode="before")
    @classmethod
    def _day(cls, value: object) -> object:
        """A date alone ("2015-01-01") is that day's midnight UTC."""
        if isinstance(value, str) and _DAY.fullmatch(value.strip()):
            return value.strip() + "T00:00:00Z"
        return value

    @field_validator("valid_from", "valid_to")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("needs a time zone (e.g. 2026-01-31T00:00:00Z) or no time at all (2026-01-31)")
        return value

    @model_validator(mode="after")
    def _validity(self) -> RelationIn:
        if self.valid_from and self.valid_to and self.valid_to < self.valid_from:
            raise ValueError("valid_to is before valid_from")
        return self


class SectionIn(BaseModel):
    """Where a span of the text stands in its source: text[start:end] is on page `page` (1-based,
    a PDF's physical page) under the headings `headings` (outermost first)."""

    model_config = ConfigDict(extra="forbid")

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    page: int | None = Field(default=None, ge=1)
    headings: list[str] = Field(default_factory=list, max_length=12)

    @model_validator(mode="after")
    def _span(self) -> SectionIn:
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    doc_id: str = Field(min_length=1, max_length=256)
    text: str
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    language: str | None = None
    source_uri: str | None = None
    entities: list[EntityIn] = Field(default_factory=list)
    relations: list[RelationIn] = Field(default_factory=list)
    # the pages and headings of spans of the text (what a reader found in a PDF, HTML, DOCX or
    # Markdown file): chunks are cut within them and cite them
    sections: list[SectionIn] = Field(default_factory=list)
    # the groups the document is for (any one of them sees it); None: everyone of the tenant. The
    # database decides who sees what (kgrag.current_groups); these are only checked for shape here.
    access: list[str] | None = Field(default=None, min_length=1, max_length=32)

    @field_validator("access")
    @classmethod
    def _access(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        bad = [g for g in value if not GROUP_NAME.fullmatch(g)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a group name (1-63 lower-case letters, digits or _.-)")
        return sorted(set(value))

    @field_validator("doc_id")
    @classmethod
    def _doc_id(cls, value: str) -> str:
        value = value.strip()
        if not value or "#" in value or _CONTROL.search(value):
            raise ValueError("must be non-blank, without '#' and without control characters")
        return value

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is empty")
        return value

    @model_validator(mode="after")
    def _sections(self) -> DocumentIn:
        for i, section in enumerate(self.sections):
            if section.end > len(self.text):
                raise ValueError(f"sections[{i}] ends at {section.end}, past the text ({len(self.text)} characters)")
            if i and section.start < self.sections[i - 1].end:
                raise ValueError(f"sections[{i}] starts before the section ahead of it ends")
        return self

    def content_hash(self, salt: str) -> str:
        """Identity of this input for re-ingestion: the document plus how it is processed (a
        document without sections hashes as it did before they existed)."""
        # (a field left empty is left out, so a document hashes as it did before the field existed)
        left_out = {name for name in ("sections", "access") if not getattr(self, name)}
        dumped = self.model_dump(mode="json", exclude=left_out or None)
        canonical = json.dumps(dumped, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256((salt + "\0" + canonical).encode()).hexdigest()


@dataclass(frozen=True)
class InputItem:
    """One document read from the input, or why that piece of input was rejected; a file that
    could not be read keeps the doc_id it would have had (and its size and time as a hash), so its
    failure is recorded in kgrag.ingest_failure under it."""

    where: str
    document: DocumentIn | None = None
    error: str | None = None
    doc_id: str | None = None
    content_hash: str | None = None


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "document"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = f"unknown field (expected {', '.join(DocumentIn.model_fields)})"
        parts.append(f"{loc}: {message}")
    return "; ".join(parts)


def document_item(where: str, data: dict[str, Any]) -> InputItem:
    try:
        _sound(data)
        return InputItem(where, document=DocumentIn.model_validate(data))
    except ValueError as exc:  # pydantic's ValidationError is one too
        return InputItem(where, error=_describe(exc) if isinstance(exc, ValidationError) else str(exc))


def with_access(item: InputItem, access: list[str] | None) -> InputItem:
    """The item with its document for these groups, unless it names its own (a JSONL line's
    "access" wins over `pgkgrag ingest --access`)."""
    if not access or item.document is None or item.document.access is not None:
        return item
    return replace(item, document=item.document.model_copy(update={"access": sorted(set(access))}))

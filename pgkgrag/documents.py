"""Input documents: JSONL lines, .txt/.md files or folders of them, validated with pydantic.

A bad line or file is reported with where it is and why, and skipped; the rest goes on.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pgkgrag.errors import KgragError

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
INPUT_SUFFIXES = (".jsonl", *TEXT_SUFFIXES)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _clean(value: str, field: str) -> str:
    if "\x00" in value:
        raise ValueError(f"{field} contains NUL (\\u0000) characters, which PostgreSQL text cannot hold")
    return value


class EntityIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=500)
    type: str = Field(default="Concept", min_length=1, max_length=100)
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    answer: str | None = None

    @field_validator("name", "type", "description", "answer")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        return None if value is None else _clean(value, "entity field")

    @field_validator("name", "type")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str]) -> list[str]:
        return [_clean(a, "alias").strip() for a in value if a.strip()]


class RelationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1)
    target: str = Field(min_length=1)
    type: str = Field(min_length=1, max_length=100)
    source_type: str | None = None
    target_type: str | None = None
    quote: str = ""
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    negated: bool = False
    valid_from: datetime | None = None
    valid_to: datetime | None = None

    @model_validator(mode="after")
    def _validity(self) -> RelationIn:
        if self.valid_from and self.valid_to and self.valid_to < self.valid_from:
            raise ValueError("valid_to is before valid_from")
        _clean(self.quote, "quote")
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
        _clean(value, "text")
        if not value.strip():
            raise ValueError("is empty")
        return value

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        return _clean(value, "title")

    def content_hash(self, salt: str) -> str:
        """Identity of this input for re-ingestion: the document plus how it is processed."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256((salt + "\0" + canonical).encode()).hexdigest()


@dataclass(frozen=True)
class InputItem:
    """One document read from the input, or why that piece of input was rejected."""

    where: str
    document: DocumentIn | None = None
    error: str | None = None


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "document"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = f"unknown field (expected {', '.join(DocumentIn.model_fields)})"
        parts.append(f"{loc}: {message}")
    return "; ".join(parts)


def _read_jsonl(path: Path) -> Iterator[InputItem]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield InputItem(where, error=f"not UTF-8 ({exc.reason} at byte {exc.start})")
                continue
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                yield InputItem(where, error=f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            if not isinstance(data, dict):
                yield InputItem(where, error="a line must be a JSON object with at least doc_id and text")
                continue
            try:
                yield InputItem(where, document=DocumentIn.model_validate(data))
            except ValidationError as exc:
                yield InputItem(where, error=_describe(exc))


def _read_text(path: Path, root: Path) -> InputItem:
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return InputItem(where, error=f"not UTF-8 ({exc.reason} at byte {exc.start})")
    heading = _HEADING.search(text)
    doc_id = path.relative_to(root).as_posix() if root != path else path.name
    title = heading.group(1) if heading else path.stem.replace("_", " ").replace("-", " ")
    try:
        return InputItem(where, document=DocumentIn(doc_id=doc_id, title=title, text=text, source_uri=str(path)))
    except ValidationError as exc:
        return InputItem(where, error=_describe(exc))


def input_files(paths: list[Path]) -> Iterator[tuple[Path, Path]]:
    """(file, the folder its doc_id is relative to) for every input file of the given files and
    folders (folders recursively, in sorted order)."""
    for path in paths:
        if not path.exists():
            raise KgragError(f"{path}: no such file or folder")
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in INPUT_SUFFIXES):
                yield file, path
        elif path.suffix.lower() in INPUT_SUFFIXES:
            yield path, path.parent
        else:
            raise KgragError(f"{path}: expected a .jsonl, .txt or .md file, or a folder of them")


def read_inputs(paths: list[Path]) -> Iterator[InputItem]:
    """Every document of the given files and folders."""
    for file, root in input_files(paths):
        if file.suffix.lower() == ".jsonl":
            yield from _read_jsonl(file)
        else:
            yield _read_text(file, root)


def count_inputs(paths: list[Path]) -> int | None:
    """How many documents the inputs hold at most (non-blank JSONL lines and text files), for a
    progress bar; None when there are none."""
    total = 0
    for file, _ in input_files(paths):
        if file.suffix.lower() == ".jsonl":
            with file.open("rb") as handle:
                total += sum(1 for line in handle if line.strip())
        else:
            total += 1
    return total or None

"""Input documents: JSONL lines, .txt/.md files or folders of them, validated with pydantic.

A bad line or file is reported with where it is and why, and skipped; the rest goes on.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
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


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


class EntityIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # how long a name, an alias or a type may be is SQL's rule (setting max_alias_chars)
    name: str = Field(min_length=1)
    type: str = Field(default="Concept", min_length=1)
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    answer: str | None = None

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

    @field_validator("valid_from", "valid_to")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("needs a time zone (e.g. 2026-01-31T00:00:00Z)")
        return value

    @model_validator(mode="after")
    def _validity(self) -> RelationIn:
        if self.valid_from and self.valid_to and self.valid_to < self.valid_from:
            raise ValueError("valid_to is before valid_from")
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
        if not value.strip():
            raise ValueError("is empty")
        return value

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


def _document(where: str, data: dict[str, Any]) -> InputItem:
    try:
        _sound(data)
        return InputItem(where, document=DocumentIn.model_validate(data))
    except ValueError as exc:  # pydantic's ValidationError is one too
        return InputItem(where, error=_describe(exc) if isinstance(exc, ValidationError) else str(exc))


def _read_jsonl(path: Path) -> Iterator[InputItem]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        yield InputItem(str(path), error=f"cannot read the file: {exc.strerror or exc}")
        return
    with handle:
        number = 0
        while True:
            number += 1
            where = f"{path}:{number}"
            try:
                raw = handle.readline()
            except OSError as exc:
                yield InputItem(where, error=f"cannot read the file from here on: {exc.strerror or exc}")
                return
            if not raw:
                return
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield InputItem(where, error=f"not UTF-8 ({exc.reason} at byte {exc.start})")
                continue
            if not line.strip():
                continue
            try:
                data = json.loads(line, parse_constant=_refuse_constant)
            except json.JSONDecodeError as exc:
                yield InputItem(where, error=f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            except ValueError as exc:  # NaN, Infinity
                yield InputItem(where, error=f"invalid JSON: {exc}")
                continue
            except RecursionError:
                yield InputItem(where, error=f"invalid JSON: nested deeper than Python can read (limit {MAX_DEPTH})")
                continue
            if not isinstance(data, dict):
                yield InputItem(where, error="a line must be a JSON object with at least doc_id and text")
                continue
            yield _document(where, data)


def _read_text(path: Path, root: Path) -> InputItem:
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return InputItem(where, error=f"not UTF-8 ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        return InputItem(where, error=f"cannot read the file: {exc.strerror or exc}")
    heading = _HEADING.search(text)
    doc_id = path.relative_to(root).as_posix() if root != path else path.name
    title = heading.group(1) if heading else path.stem.replace("_", " ").replace("-", " ")
    return _document(where, {"doc_id": doc_id, "title": title, "text": text, "source_uri": str(path)})


def input_files(paths: list[Path]) -> Iterator[tuple[Path, Path]]:
    """(file, the folder its doc_id is relative to) for every input file of the given files and
    folders (folders recursively, in sorted order)."""
    for path in paths:
        if not path.exists():
            raise KgragError(f"{path}: no such file or folder")
        if path.is_dir():
            # os.walk names what it cannot read (onerror) instead of stopping the whole folder
            unreadable: list[OSError] = []
            found = [
                Path(folder) / name
                for folder, _, names in os.walk(path, onerror=unreadable.append)
                for name in names
                if Path(name).suffix.lower() in INPUT_SUFFIXES
            ]
            # an unreadable folder comes as itself: read_inputs reports it and goes on
            for file in sorted([*found, *(Path(e.filename) for e in unreadable if e.filename)]):
                yield file, path
        elif path.suffix.lower() in INPUT_SUFFIXES:
            yield path, path.parent
        else:
            raise KgragError(f"{path}: expected a .jsonl, .txt or .md file, or a folder of them")


def read_inputs(paths: list[Path]) -> Iterator[InputItem]:
    """Every document of the given files and folders."""
    for file, root in input_files(paths):
        if file.is_dir():
            yield InputItem(str(file), error="cannot read the folder (permission denied or I/O error): skipped")
        elif file.suffix.lower() == ".jsonl":
            yield from _read_jsonl(file)
        else:
            yield _read_text(file, root)


def count_inputs(paths: list[Path]) -> int | None:
    """How many documents the inputs hold at most (non-blank JSONL lines and text files), for a
    progress bar; None when there are none."""
    total = 0
    for file, _ in input_files(paths):
        try:
            if file.suffix.lower() == ".jsonl" and not file.is_dir():
                with file.open("rb") as handle:
                    total += sum(1 for line in handle if line.strip())
            else:
                total += 1
        except OSError:
            total += 1  # read_inputs will say what is wrong with it
    return total or None

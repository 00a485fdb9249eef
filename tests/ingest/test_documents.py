"""Reading input: JSONL lines with line numbers in every error, .txt/.md files, folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgkgrag.errors import KgragError
from pgkgrag.ingest.readers.files import read_inputs


def write(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_bad_lines_are_named_and_skipped(tmp_path: Path) -> None:
    path = write(
        tmp_path / "in.jsonl",
        [
            {"doc_id": "a", "text": "fine"},
            "{not json",
            {"doc_id": "b"},
            {"doc_id": "c#1", "text": "x"},
            {"doc_id": "d", "text": "x", "titel": "typo"},
            {"doc_id": "e", "text": "bad \u0000 byte"},
            ["not", "an", "object"],
            {"doc_id": "f", "text": "x", "entities": [{"type": "Service"}]},
            {"doc_id": "g", "text": "x", "relations": [{"source": "a", "target": "b", "type": "T", "confidence": 2}]},
            "",
            {"doc_id": "h", "text": "   "},
        ],
    )
    items = list(read_inputs([path]))
    assert [i.document.doc_id for i in items if i.document] == ["a"]
    errors = {i.where.rsplit(":", 1)[1]: i.error for i in items if i.error}
    assert "invalid JSON" in errors["2"]
    assert "text: Field required" in errors["3"]
    assert "doc_id" in errors["4"] and "#" in errors["4"]
    assert "titel: unknown field" in errors["5"]
    assert "NUL" in errors["6"]
    assert "JSON object" in errors["7"]
    assert "entities.0.name" in errors["8"]
    assert "relations.0.confidence" in errors["9"]
    assert "text: is empty" in errors["11"]


def test_text_and_markdown_files_and_folders(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Alpha Runbook\n\nSteps **in bold**.")
    (tmp_path / "notes" / "b_file.txt").write_text("Plain text.")
    (tmp_path / "notes" / "skip.pdf").write_bytes(b"%PDF")
    (tmp_path / "notes" / "bad.txt").write_bytes(b"\xff\xfe not utf8")
    (tmp_path / "notes" / ".hidden.txt").write_text("left alone")
    items = list(read_inputs([tmp_path / "notes"]))
    docs = {i.document.doc_id: i.document for i in items if i.document}
    assert set(docs) == {"a.md", "b_file.txt"}
    assert docs["a.md"].title == "Alpha Runbook" and docs["b_file.txt"].title == "b file"
    assert docs["a.md"].text == "Steps in bold."  # Markdown read for its structure, markup left out
    failed = {i.doc_id: i.error for i in items if i.error}
    assert failed["bad.txt"].startswith("not UTF-8") and failed["skip.pdf"].startswith("not a readable PDF")
    assert set(failed) == {"bad.txt", "skip.pdf"}


def test_missing_or_unsupported_paths(tmp_path: Path) -> None:
    with pytest.raises(KgragError, match="no such file"):
        list(read_inputs([tmp_path / "nope.jsonl"]))
    (tmp_path / "x.xyz").write_bytes(b"what")
    (item,) = read_inputs([tmp_path / "x.xyz"])
    assert item.document is None and item.doc_id == "x.xyz" and item.error is not None
    assert item.error.startswith("unknown format .xyz: pgkgrag reads .jsonl, .txt, .md")

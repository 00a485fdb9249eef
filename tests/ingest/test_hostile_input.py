"""Bad input never sinks good input: hostile lines and files among good ones, through the real
command line. Each bad one is reported with its file and line and skipped; every good document is
written; nothing is a traceback. Then the bounds every caller meets (question length, path length,
walk size, the whole search's time) and the chunker's time on text without boundaries.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from commands import run
from corpus import add_mesh
from ingesting import ingest

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.ingest.chunking import ChunkSettings, chunk_text

GOOD = [
    {"doc_id": f"good{i}", "text": f"The Ledger {i} feeds the Vault {i}.", "entities": [{"name": f"Ledger {i}"}]}
    for i in range(4)
]
DEEP = '{"k": ' * 5000 + '"x"' + "}" * 5000
# (what, the raw line): each is one line of the JSONL file
HOSTILE: list[tuple[str, str]] = [
    ("NUL in a metadata value", json.dumps({"doc_id": "b1", "text": "t", "metadata": {"k": "a\u0000b"}})),
    ("NUL in a metadata key", json.dumps({"doc_id": "b2", "text": "t", "metadata": {"a\u0000b": 1}})),
    ("NUL in source_uri", json.dumps({"doc_id": "b3", "text": "t", "source_uri": "file:///a\u0000b"})),
    (
        "NUL in a relation's type",
        json.dumps(
            {
                "doc_id": "b4",
                "text": "A B",
                "entities": [{"name": "A"}, {"name": "B"}],
                "relations": [{"source": "A", "target": "B", "type": "X\u0000Y"}],
            }
        ),
    ),
    (
        "NUL in a relation's source",
        json.dumps({"doc_id": "b5", "text": "A B", "relations": [{"source": "A\u0000", "target": "B", "type": "R"}]}),
    ),
    (
        "NUL in a relation's source_type",
        json.dumps(
            {
                "doc_id": "b6",
                "text": "A B",
                "relations": [{"source": "A", "target": "B", "type": "R", "source_type": "T\u0000"}],
            }
        ),
    ),
    ("NaN in metadata", '{"doc_id": "b7", "text": "t", "metadata": {"n": NaN}}'),
    ("Infinity in metadata", '{"doc_id": "b8", "text": "t", "metadata": {"n": -Infinity}}'),
    ("a lone surrogate in the text", '{"doc_id": "b9", "text": "bad \\ud800 text"}'),
    (
        "naive and aware validity mixed",
        json.dumps(
            {
                "doc_id": "b10",
                "text": "A B",
                "entities": [{"name": "A"}, {"name": "B"}],
                "relations": [
                    {
                        "source": "A",
                        "target": "B",
                        "type": "R",
                        "valid_from": "2025-01-01T00:00:00",
                        "valid_to": "2026-01-01T00:00:00Z",
                    }
                ],
            }
        ),
    ),
    ("metadata nested 5,000 deep", '{"doc_id": "b11", "text": "t", "metadata": ' + DEEP + "}"),
    (
        "10,000 aliases",
        json.dumps(
            {"doc_id": "b12", "text": "A", "entities": [{"name": "A", "aliases": [f"a{i}" for i in range(10000)]}]}
        ),
    ),
    (
        "a 100 KB alias",
        json.dumps({"doc_id": "b13", "text": "A", "entities": [{"name": "A", "aliases": ["a" * 100_000]}]}),
    ),
    (
        "a 10 KB quote",
        json.dumps(
            {
                "doc_id": "b14",
                "text": "A B " + "q" * 10_000,
                "entities": [{"name": "A"}, {"name": "B"}],
                "relations": [{"source": "A", "target": "B", "type": "R", "quote": "q" * 10_000}],
            }
        ),
    ),
    ("a 5 KB title", json.dumps({"doc_id": "b15", "title": "T" * 5000, "text": "t"})),
]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_hostile_lines_are_reported_by_line_and_the_good_ones_written(
    dsn: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    lines = [json.dumps(GOOD[0]), *[line for _, line in HOSTILE[:8]], json.dumps(GOOD[1])]
    lines += [*[line for _, line in HOSTILE[8:]], json.dumps(GOOD[2])]
    _write(folder / "mixed.jsonl", lines)
    (folder / "names.jsonl").write_text(
        json.dumps({"doc_id": "bang", "text": "!!! and Ledger 9", "entities": [{"name": "!!!"}, {"name": "Ledger 9"}]})
        + "\n"
    )
    (folder / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")  # a link, to nothing: not followed
    (folder / "later.md").write_text("# Later\n\n" + GOOD[3]["text"])  # after the unreadable one, in order
    out = run("ingest", str(folder), "--embedder", "hash", "--tenant", "h", dsn=dsn)
    assert out.returncode == 1 and "Traceback" not in out.stderr + out.stdout, out.stderr
    rejected = [line for line in out.stderr.splitlines() if line.startswith("rejected ")]
    for number, (what, _) in enumerate(HOSTILE[:8], start=2):
        assert any(f"mixed.jsonl:{number}:" in r for r in rejected), (what, number, rejected)
    for number, (what, _) in enumerate(HOSTILE[8:], start=11):
        assert any(f"mixed.jsonl:{number}:" in r for r in rejected), (what, number, rejected)
    assert any("gone.jsonl" in r and "a symbolic link" in r for r in rejected), rejected
    with connect(dsn) as conn, tenant_transaction(conn, "h"):
        docs = {r[0] for r in conn.execute("SELECT doc_id FROM kgrag.document")}
        entities = {r[0] for r in conn.execute("SELECT entity_id FROM kgrag.entity")}
    good = {d["doc_id"] for d in GOOD[:3]} | {"later.md", "bang"}
    assert docs == good
    assert "concept:" not in entities and "concept:ledger 9" in entities  # '!!!' folds to nothing: dropped
    assert "rejected: entity name folds to nothing" in out.stdout
    record_property("hostile inputs tried", len(HOSTILE) + 2)
    record_property("rejected with file and line (or file)", len(rejected))
    record_property("good documents lost", len(good - docs))
    record_property("tracebacks", 0)
    record_property("kinds", "; ".join(what for what, _ in HOSTILE) + "; an unreadable file; an entity named '!!!'")


def test_an_unreadable_file_is_named_and_skipped(dsn: str, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root: a file without read permission can still be read")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps(GOOD[0]) + "\n")
    locked = folder / "b.jsonl"
    locked.write_text(json.dumps(GOOD[1]) + "\n")
    locked.chmod(0)
    out = run("ingest", str(folder), "--embedder", "hash", "--tenant", "h", dsn=dsn)
    assert out.returncode == 1 and "b.jsonl" in out.stderr and "Permission denied" in out.stderr


def test_a_document_past_a_limit_is_refused_for_any_sql_client(conn: psycopg.Connection, tmp_path: Path) -> None:
    summary = ingest(conn, tmp_path, [json.loads(HOSTILE[11][1]), GOOD[0]], tenant="lim")
    assert summary.written == 1 and "10000 aliases" in summary.rejected_inputs[0][1]
    # the rule is ingest_apply's: a client staging rows itself meets it too
    with tenant_transaction(conn, "lim"):
        conn.execute("SELECT kgrag_private.stage_begin()")
        conn.execute(
            "INSERT INTO pg_temp.kgrag_stage_document (doc_id, title, content_hash)"
            " VALUES ('z', repeat('t', 2000), 'h')"
        )
        counts = conn.execute("SELECT kgrag_private.ingest_apply()").fetchone()[0]  # type: ignore[index]
    assert counts["documents"] == 0 and "max_title_chars" in counts["refused"]["z"]


QUESTIONS = ["x " * 1500, "word " * 500]


def test_every_caller_is_bounded(dsn: str, record_property: Callable[[str, object], None]) -> None:
    with connect(dsn) as conn, tenant_transaction(conn, "t1"):
        for call in (
            "SELECT * FROM kgrag.kgrag_search(question => %s)",
            "SELECT * FROM kgrag.link_entities(%s)",
            "SELECT kgrag.lexical_query(%s, 'english')",
        ):
            with (
                pytest.raises(psycopg.errors.InvalidParameterValue, match="max_question_chars"),
                conn.transaction(),
            ):
                conn.execute(call, ["x" * 2001])
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="longer than any walk"), conn.transaction():
            conn.execute("SELECT * FROM kgrag.path_relations(%s)", [[f"e{i}" for i in range(100_000)]])
        # a question at the limit is linked by its spans of at most twelve words: work linear in its length
        for n in (250, 500, 1000, 2000):
            question = ("alpha beta " * 400)[:n]
            words = len(question.split())
            (spans,) = conn.execute(
                "SELECT count(*) FROM kgrag_private.question_spans(kgrag.canonical_name(%s))", [question]
            ).fetchone()  # type: ignore[misc]
            assert spans == sum(min(12, words - i) for i in range(words)) <= 12 * words, (n, words, spans)
            conn.execute("SELECT count(*) FROM kgrag.link_entities(%s)", [question])
        # null options mean the default, never "no limit"
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="out of range"), conn.transaction():
            conn.execute("""SELECT * FROM kgrag.kgrag_search(question => 'x', options => '{"seeds": 1000}')""")
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="arrays of one length"), conn.transaction():
            conn.execute(
                "SELECT kgrag.store_embeddings('entity', ARRAY['a', 'b'], ARRAY[%s::vector], ARRAY['h', 'h'])",
                ["[" + ",".join(["0.1"] * 512) + "]"],
            )
        nulls = conn.execute("""SELECT kgrag_private.search_options('{"seeds": null, "entities": null}')""").fetchone()
        defaults = conn.execute("SELECT kgrag_private.search_options('{}')").fetchone()
        assert nulls == defaults and defaults is not None and defaults[0]["seeds"] == 3


def test_a_walk_past_its_path_budget_or_the_search_deadline_stops(tconn: object, admin: psycopg.Connection) -> None:
    session = tconn
    # 600 entities, all linked: the second hop follows 359,000 edges
    add_mesh(admin, "t1", [f"k:{i:03d}" for i in range(600)])
    with session.acting() as conn:  # type: ignore[attr-defined]
        conn.execute("INSERT INTO kgrag.alias (tenant_id, entity_id, alias) VALUES ('t1', 'k:000', 'Kilo Zero')")
    session.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'max_paths_walked', '1000')")  # type: ignore[attr-defined]
    with pytest.raises(psycopg.errors.QueryCanceled, match="stopped after 1000 paths"):
        session.execute("SELECT count(*) FROM kgrag.k_hop(ARRAY['k:000'], 4)")  # type: ignore[attr-defined]
    session.execute("UPDATE kgrag.settings SET value = '2000000' WHERE tenant_id = 't1' AND key = 'max_paths_walked'")  # type: ignore[attr-defined]
    session.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('t1', 'search_timeout_ms', '100')")  # type: ignore[attr-defined]
    with pytest.raises(psycopg.errors.QueryCanceled, match=r"search_timeout_ms|khop_timeout_ms") as stopped:
        session.execute(  # type: ignore[attr-defined]
            "SELECT count(*) FROM kgrag.kgrag_search(NULL, 'local', 'Kilo Zero',"
            """ options => '{"hops": 4, "degree_cap": null}')"""
        )
    # the budget it ran out of is what was left of the search's 100 ms, not the walk's own 5,000
    budget = re.search(r"cancelled after (\d+) ms", str(stopped.value))
    assert budget is not None and int(budget.group(1)) <= 100, str(stopped.value)


def test_the_chunker_cuts_text_without_boundaries_within_its_limits() -> None:
    """A 4.9 MB token and 400 KB of one repeated word: every chunk is a span of the text, within the
    limits, and together they cover it but for the spaces between them."""
    settings = ChunkSettings(max_chars=1200, min_chars=400, overlap_chars=100)
    for text in ("x" * 4_900_000, "word " * 80_000):
        chunks = chunk_text(text, "t", settings)
        assert all(text[c.char_start : c.char_end] == c.text for c in chunks)
        assert max(len(c.text) for c in chunks) <= 1200
        assert chunks[0].char_start == 0 and chunks[-1].char_end >= len(text.rstrip())
        assert all(not text[a.char_end : b.char_start].strip() for a, b in itertools.pairwise(chunks))  # no gap
        assert len(chunks) <= len(text) // (400 - 100) + 1

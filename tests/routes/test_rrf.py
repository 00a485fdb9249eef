"""Reciprocal Rank Fusion: hand-computed scores, kept per-list ranks, and bad input."""

from __future__ import annotations

import json

import psycopg
import pytest


def rrf(conn: psycopg.Connection, lists: dict[str, list[str] | None], k: int = 60) -> list[tuple]:
    return conn.execute("SELECT * FROM kgrag.rrf(%s::jsonb, %s)", [json.dumps(lists), k]).fetchall()


def test_scores_are_sums_of_reciprocal_ranks(conn: psycopg.Connection) -> None:
    rows = rrf(conn, {"vector": ["a", "b", "c"], "lexical": ["c", "a"]})
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("a", 1, {"vector": 1, "lexical": 2}),
        ("c", 2, {"vector": 3, "lexical": 1}),
        ("b", 3, {"vector": 2}),
    ]
    assert rows[0][2] == pytest.approx(1 / 61 + 1 / 62)
    assert rows[1][2] == pytest.approx(1 / 63 + 1 / 61)
    assert rows[2][2] == pytest.approx(1 / 62)


def test_k_changes_the_balance(conn: psycopg.Connection) -> None:
    # With k = 0 a single first place (1/1) beats two third places (1/3 + 1/3).
    rows = rrf(conn, {"x": ["top", "m", "both"], "y": ["n", "o", "both"]}, k=0)
    assert rows[0][0] in {"top", "n"} and rows[0][2] == pytest.approx(1.0)
    assert rrf(conn, {"x": ["top", "m", "both"], "y": ["n", "o", "both"]}, k=60)[0][0] == "both"


def test_ties_and_duplicates(conn: psycopg.Connection) -> None:
    rows = rrf(conn, {"x": ["b", "a", "b"], "y": ["a", "b"], "z": None})
    # b: 1/61 (first occurrence) + 1/62; a: 1/62 + 1/61: a tie, broken by id
    assert [r[0] for r in rows] == ["a", "b"]
    assert rows[1][3] == {"x": 1, "y": 2}


@pytest.mark.parametrize("bad", ['["a"]', '{"x": "a"}', "null"])
def test_bad_lists_are_named(conn: psycopg.Connection, bad: str) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"lists must be|every list"):
        conn.execute("SELECT * FROM kgrag.rrf(%s::jsonb)", [bad])

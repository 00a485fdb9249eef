"""Evaluation per route: a golden set of questions with the route and chunks they expect.

The aggregate hides the router's failures, so every figure is given per expected route:
questions, route accuracy, coverage@k (an expected chunk among the evidence of the first k
rows), the empty rate on negatives, mean rows and mean milliseconds.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pgkgrag.embed.embedders import Embedder
from pgkgrag.errors import KgragError
from pgkgrag.retrieval.search import routes, run_search


class GoldenQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1)
    route: str
    expect_chunks: list[str] = Field(default_factory=list)
    expect_empty: bool = False


def read_golden(path: Path, known_routes: list[str]) -> list[GoldenQuestion]:
    """The questions of a golden file; every route must be one of known_routes (kgrag.routes)."""
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = GoldenQuestion.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise KgragError(f"{path}:{number}: {exc}") from exc
        if item.route not in known_routes:
            raise KgragError(f"{path}:{number}: route must be one of {', '.join(known_routes)}, got {item.route!r}")
        questions.append(item)
    if not questions:
        raise KgragError(f"{path}: no questions")
    return questions


@dataclass
class RouteFigures:
    questions: int = 0
    routed_right: int = 0
    covered: int = 0
    with_expectation: int = 0
    negatives: int = 0
    negatives_empty: int = 0
    rows: int = 0
    ms: float = 0.0
    misses: list[str] = field(default_factory=list)

    def row(self) -> dict[str, str]:
        def pct(a: int, b: int) -> str:
            return f"{100 * a / b:.0f}% ({a}/{b})" if b else "-"

        return {
            "questions": str(self.questions),
            "route accuracy": pct(self.routed_right, self.questions),
            "coverage@k": pct(self.covered, self.with_expectation),
            "empty on negatives": pct(self.negatives_empty, self.negatives),
            "mean rows": f"{self.rows / self.questions:.1f}" if self.questions else "-",
            "mean ms": f"{self.ms / self.questions:.0f}" if self.questions else "-",
        }


def evaluate(
    conn: psycopg.Connection, tenant: str, embedder: Embedder, questions: list[GoldenQuestion], k: int = 5
) -> dict[str, RouteFigures]:
    figures: dict[str, RouteFigures] = defaultdict(RouteFigures)
    embedder.embed(["warm-up"])  # a model loads on its first call: keep that out of the timings
    for item in questions:
        start = time.perf_counter()
        result = run_search(conn, tenant, embedder, item.question, "auto", k)
        elapsed = (time.perf_counter() - start) * 1000
        f = figures[item.route]
        f.questions += 1
        f.ms += elapsed
        f.rows += len(result.rows)
        if result.route == item.route:
            f.routed_right += 1
        else:
            f.misses.append(f"routed {result.route}: {item.question} ({result.reason})")
        if item.expect_empty:
            f.negatives += 1
            f.negatives_empty += not result.rows
        if item.expect_chunks:
            f.with_expectation += 1
            if set(result.evidence()) & set(item.expect_chunks):  # k already bounds the chunk rows
                f.covered += 1
            else:
                f.misses.append(f"not covered: {item.question}")
    return {route: figures[route] for route in routes(conn) if route in figures}

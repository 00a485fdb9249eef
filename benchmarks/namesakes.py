"""The cost of namesake resolution on text where one name is nearly always one referent: the
multi-hop sets' keyphrases graph (entity type "Name") built three times, the names merged by name
alone (namesake_types []), then kept apart unless two documents share 1 or 2 neighbours
(namesake_types ["Name"], namesake_shared_neighbours 1 or 2). Per variant: the names given by 2+
documents, how many of them end up split into 2+ entities, the ingestion time, and R@2/R@5 of the
vector and local routes (as benchmarks/multihop.py measures them).

    python benchmarks/namesakes.py [--sets musique hotpotqa] [--questions N] [--k 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from common import markdown_table, scratch_database, write_section
from multihop import VARIANTS as ROUTES
from multihop import Questions, hotpotqa, musique, ranked_documents, recall

from pgkgrag.db.connections import connect
from pgkgrag.embed.embedders import Embedder, get_embedder
from pgkgrag.graph.build import build
from pgkgrag.graph.totals import graph_totals
from pgkgrag.ingest.extractors.keyphrases import KeyphraseExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.retrieval.search import run_search

TENANT = "bench"
# (namesake_types, namesake_shared_neighbours)
VARIANTS: tuple[tuple[list[str], int], ...] = (([], 1), (["Name"], 1), (["Name"], 2))
SET_SETTING = """
INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, %s, %s::jsonb)
ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value
"""
# per name given by 2+ documents (its name key, or for names merged by name its entity): the
# entities its documents' occurrences became
SPLITS = """
SELECT count(*), count(*) FILTER (WHERE n > 1), avg(n) FILTER (WHERE n > 1)
  FROM (SELECT count(DISTINCT s.entity_id) AS n
          FROM kgrag.entity_source AS s
          JOIN kgrag.entity AS e ON e.tenant_id = s.tenant_id AND e.entity_id = s.entity_id
         WHERE s.tenant_id = %s AND e.type = 'Name'
         GROUP BY COALESCE(s.name_key, s.entity_id)
        HAVING count(DISTINCT s.doc_id) >= 2) AS x
"""


def run_variant(
    name: str,
    docs: list[dict[str, str]],
    questions: Questions,
    k: int,
    types: list[str],
    shared: int,
    embedder: Embedder,
) -> list[object]:
    with scratch_database(f"kgrag_bench_ns_{name}") as dsn, connect(dsn) as conn, tempfile.TemporaryDirectory() as tmp:
        conn.execute(SET_SETTING, [TENANT, "namesake_types", json.dumps(types)])
        conn.execute(SET_SETTING, [TENANT, "namesake_shared_neighbours", json.dumps(shared)])
        conn.commit()
        path = Path(tmp) / f"{name}.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        start = time.perf_counter()
        Ingestor(conn, TENANT, KeyphraseExtractor(), embedder).run([path])
        build(conn, TENANT, embedder)
        seconds = time.perf_counter() - start
        names, split, mean = conn.execute(SPLITS, [TENANT]).fetchone() or (0, 0, None)
        entities = graph_totals(conn, TENANT).entities
        conn.commit()
        recalls: list[str] = []
        for label, route, options in ROUTES:
            if label not in ("vector", "local"):
                continue
            r2 = r5 = 0.0
            for question, gold in questions:
                ranked = ranked_documents(run_search(conn, TENANT, embedder, question, route, k, options))
                r2, r5 = r2 + recall(ranked, gold, 2), r5 + recall(ranked, gold, 5)
            recalls += [f"{100 * r2 / len(questions):.1f}", f"{100 * r5 / len(questions):.1f}"]
    mean_text = f"{mean:.2f}" if mean is not None else "-"
    row = [name, json.dumps(types), shared if types else "-", names, split, mean_text, entities, f"{seconds:.0f}"]
    row += recalls
    print(row, flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["musique", "hotpotqa"], choices=["musique", "hotpotqa"])
    parser.add_argument("--questions", type=int, default=None, help="the first N questions (default: all)")
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    loaders = {"musique": musique, "hotpotqa": hotpotqa}
    embedder = get_embedder("use", 512)
    embedder.embed(["loaded before the first variant is timed"])
    started = time.perf_counter()
    rows: list[list[object]] = []
    for name in args.sets:
        docs, questions = loaders[name]()
        questions = questions[: args.questions] if args.questions else questions
        rows += [run_variant(name, docs, questions, args.k, types, shared, embedder) for types, shared in VARIANTS]
    header = ["set", "namesake_types", "shared neighbours", "names in 2+ docs", "split", "entities per split name"]
    header += ["entities", "ingest + build s", "vector R@2", "vector R@5", "local R@2", "local R@5"]
    table = markdown_table(header, rows)
    body = (
        "What namesake resolution costs where one name is nearly always one referent: the multi-hop sets' "
        "`keyphrases` graph (the offline extractor; its names are of type `Name`) built three times, with "
        '`namesake_types` `[]` (names merged by name alone, as before namesakes) and `["Name"]` with '
        "`namesake_shared_neighbours` 1 and 2 (two documents' occurrences of a name are one entity only where "
        "they share that many neighbours, transitively). `names in 2+ docs`: the names (name keys; for `[]`, the "
        "entities of type Name) given by two or more documents; `split`: how many of those became 2+ entities, "
        "with the mean number of entities per split name. R@2/R@5 as in the multi-hop section (k = 5 chunk rows, "
        "USE embedder; `local` is the graph route ranked by k-hop paths; `vector` does not use the graph and is "
        "there as the reference). Rerun with `python benchmarks/namesakes.py` "
        "(`--sets`, `--questions N`).\n\n" + table + "\n"
    )
    print(body)
    print(f"{time.perf_counter() - started:.0f} s in all")
    write_section("namesakes", "Namesakes: the cost of not merging names on the name alone", body)


if __name__ == "__main__":
    main()

"""What namesake resolution costs at ingestion where people recur: a synthetic corpus of N documents,
each naming three people drawn from a pool (so each name is given by many documents) with an
organization, ingested in batches with the rule on (namesake_types ["Person"], the default) and off
([]), side by side in one run, three times each, alternating. Prints documents/s and the ratio, and the
entities people became.

    python benchmarks/namesake_cost.py [--documents 3000] [--people 150]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from common import markdown_table, scratch_database, write_section

from pgkgrag.db.connections import connect
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor

TENANT = "bench"
ROUNDS = 3
SET_SETTING = """
INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'namesake_types', %s::jsonb)
ON CONFLICT (tenant_id, key) DO UPDATE SET value = excluded.value
"""


def corpus(documents: int, people: int, seed: int = 7) -> list[dict[str, object]]:
    rng = random.Random(seed)
    names = [f"Person {i:04d} Example" for i in range(people)]
    orgs = [f"Org {i:03d}" for i in range(max(1, people // 5))]
    docs = []
    for i in range(documents):
        who, org = rng.sample(names, 3), rng.choice(orgs)
        text = f"{who[0]} met {who[1]} at {org}. {who[2]} joined {org} later."
        entities = [{"name": n, "type": "Person"} for n in who] + [{"name": org, "type": "Organization"}]
        docs.append({"doc_id": f"d{i:05d}", "text": text, "entities": entities})
    return docs


def run(docs: list[dict[str, object]], types: list[str], round_: int) -> tuple[float, int, int]:
    with scratch_database(f"kgrag_bench_nscost_{round_}_{len(types)}") as dsn, connect(dsn) as conn:
        conn.execute(SET_SETTING, [TENANT, json.dumps(types)])
        conn.commit()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "docs.jsonl"
            path.write_text("".join(json.dumps(d) + "\n" for d in docs))
            start = time.perf_counter()
            Ingestor(conn, TENANT, ProvidedExtractor(), HashEmbedder(512), batch_size=100).run([path])
            seconds = time.perf_counter() - start
        conn.execute("SELECT kgrag.use_tenant(%s)", [TENANT])
        row = conn.execute(
            "SELECT count(*), count(DISTINCT kgrag_private.namesake_key(entity_id)) FROM kgrag.entity"
            " WHERE type = 'Person'"
        ).fetchone()
        conn.rollback()
    assert row is not None
    return seconds, int(row[0]), int(row[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=3000)
    parser.add_argument("--people", type=int, default=150)
    args = parser.parse_args()
    docs = corpus(args.documents, args.people)
    seconds: dict[str, list[float]] = {"off": [], "on": []}
    entities: dict[str, tuple[int, int]] = {}
    for round_ in range(ROUNDS):
        for label, types in (("off", []), ("on", ["Person"])):
            took, people, names = run(docs, types, round_)
            seconds[label].append(took)
            entities[label] = (people, names)
            print(label, round_, f"{took:.1f} s", people, names, flush=True)
    rows = []
    for label in ("off", "on"):
        best = statistics.median(seconds[label])
        rows.append(
            [
                label,
                f"{args.documents / best:.1f}",
                " / ".join(f"{s:.1f}" for s in seconds[label]),
                entities[label][0],
                entities[label][1],
            ]
        )
    ratio = statistics.median(seconds["on"]) / statistics.median(seconds["off"])
    table = markdown_table(
        ["namesake rule", "documents/s (median)", "seconds per run", "Person entities", "names"], rows
    )
    body = (
        f"Ingestion of {args.documents} synthetic documents, each naming 3 of {args.people} people (every name "
        f"given by about {3 * args.documents // args.people} documents) and an organization, JSONL with the "
        "`provided` extractor and the `hash` embedder, batches of 100, the rule off (`namesake_types` `[]`) and "
        'on (`["Person"]`, the default), alternating, two runs each. Every batch resolves again every name it '
        "gives across all the documents that give it. "
        f"On/off time: **x{ratio:.2f}**. Rerun with `python benchmarks/namesake_cost.py`.\n\n" + table + "\n"
    )
    print(body)
    write_section("namesake_cost", "Namesakes: what resolution costs at ingestion", body)


if __name__ == "__main__":
    main()

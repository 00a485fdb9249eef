"""Entity linking with and without the tenant's name-trigram statistics (revision 0027).

The generated operations corpus of benchmarks/scale.py for one tenant (`provided` extractor, `hash`
embedder, built), then kgrag.link_entities timed as kgrag_reader over the scale benchmark's
whole-collection and off-corpus questions and its questions naming entities, rounds alternating:
without the tenant's row of kgrag.alias_trigram_stats (what every role but a superuser had before
0027: pg_stats hides the planner's statistics from roles row-level security applies to) and with it
(what `pgkgrag build` counts). Same answers either way: the statistics change what is read.

    python benchmarks/linking_stats.py [--chunks 25000] [--rounds 5]
"""

from __future__ import annotations

import argparse

import psycopg
from common import markdown_table, percentile, scratch_database, write_section
from scale import GLOBAL, NEGATIVE, load, questions, timed_ms

from pgkgrag.db.connections import READER, connect, tenant_transaction

LINK = "SELECT entity_id FROM kgrag.link_entities(%s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=25000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with scratch_database("kgrag_bench_linking_stats") as dsn:
        (tenant,), _, _, total = load(dsn, args.chunks, 1)
        with connect(dsn) as conn:
            asked = [*GLOBAL, *NEGATIVE, *questions(conn, tenant, 8)["local"]]
            with tenant_transaction(conn, tenant):
                stats = conn.execute(
                    "SELECT tenant_id, common, frequency FROM kgrag.alias_trigram_stats WHERE tenant_id = %s", [tenant]
                ).fetchone()
            assert stats is not None, "the build counted no name trigrams"
        times: dict[str, list[float]] = {"without": [], "with": []}
        answers: dict[str, list[list[str]]] = {"without": [], "with": []}
        with connect(dsn, role=READER) as reader:
            for _ in range(args.rounds):
                for variant in ("without", "with"):
                    with psycopg.connect(dsn, autocommit=True) as admin:  # the owner's switch
                        admin.execute("DELETE FROM kgrag.alias_trigram_stats")
                        if variant == "with":
                            admin.execute(
                                "INSERT INTO kgrag.alias_trigram_stats (tenant_id, common, frequency)"
                                " VALUES (%s, %s, %s)",
                                stats,
                            )
                    with tenant_transaction(reader, tenant):
                        got = [[r[0] for r in reader.execute(LINK, [q])] for q in asked]
                        times[variant] += [timed_ms(reader, LINK, [q]) for q in asked]
                    answers[variant].append(got)
    assert answers["without"] == answers["with"], "the statistics changed what linking found"
    rows = [
        [variant, f"{percentile(t, 50):.1f}", f"{percentile(t, 95):.1f}", f"{max(t):.1f}"]
        for variant, t in times.items()
    ]
    body = (
        f"One tenant of {total:,} generated chunks (benchmarks/scale.py's corpus, built), {len(asked)} questions "
        f"({len(GLOBAL)} whole-collection, {len(NEGATIVE)} off-corpus, {len(asked) - len(GLOBAL) - len(NEGATIVE)} "
        f"naming entities) linked by kgrag.link_entities as kgrag_reader, {args.rounds} rounds, the two ways "
        "alternated; the same entities found either way.\n\n"
        + markdown_table(["the tenant's name-trigram statistics", "p50 ms", "p95 ms", "max ms"], rows)
        + "\n"
    )
    print(body)
    write_section("linking_stats", "Entity linking with and without name-trigram statistics", body)


if __name__ == "__main__":
    main()

"""What reading the review queue costs as identified entities grow: kgrag.review_queue's
near_identifiers items are computed at each read from every identified entity of the tenant.

A tenant of N people keyed by employee numbers in a series ("EMP-000001" ... : numbers given in a
row, many one character apart or two digits swapped, none a slip: each is another person), and
N / 100 slips planted among them (a person's number with a digit dropped, under the same name, as
a second document would write it by mistake). Then the same with common names: 20 first names by
20 surnames, so that thousands of people share a name's sketch ("M. Silva" and "Maria Silva"
both "m s") and many share a name outright, the case where pairs cost most. Timed: the
near_identifiers items alone and the whole queue, read by a curator's query, median of 3.

    python benchmarks/review_queue.py [--sizes 1000 10000 50000]
"""

from __future__ import annotations

import argparse
import time

from common import markdown_table, median, scratch_database, write_section

from pgkgrag.db.connections import connect, tenant_transaction

OWN_NAMES = "'Person ' || i"
COMMON_NAMES = (
    "(ARRAY['Ana','Bruno','Carla','Davi','Eva','Fabio','Gloria','Hugo','Iris','Joao','Karen','Luis','Maria',"
    "'Nuno','Olga','Paulo','Rita','Sergio','Tania','Vitor'])[1 + i %% 20] || ' ' || "
    "(ARRAY['Silva','Souza','Costa','Lima','Dias','Rocha','Alves','Reis','Gomes','Lopes','Mendes','Nunes',"
    "'Pinto','Ramos','Santos','Teixeira','Vieira','Moura','Cardoso','Freitas'])[1 + (i / 20) %% 20]"
)
PLANT = [
    "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type)"
    " SELECT 'q', 'person:#emp' || lpad(i::text, 6, '0'), {name}, 'Person' FROM generate_series(1, %(n)s) AS i",
    # a slip: the number of person i with a digit dropped, under the same name
    "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type)"
    " SELECT 'q', 'person:#emp' || substr(lpad(i::text, 6, '0'), 2), {name}, 'Person'"
    " FROM generate_series(1, %(n)s, 100) AS i ON CONFLICT DO NOTHING",
]
ITEMS = "SELECT count(*) FROM kgrag.review_queue WHERE item = 'near_identifiers'"
WHOLE = "SELECT count(*) FROM kgrag.review_queue"


def measure(n: int, names: str) -> list[object]:
    with scratch_database(f"kgrag_bench_review_{n}") as dsn, connect(dsn) as conn:
        with tenant_transaction(conn, "q"):
            for statement in PLANT:
                conn.execute(statement.format(name=names), {"n": n})  # type: ignore[arg-type]
        conn.execute("ANALYZE kgrag.entity")
        conn.commit()
        found: dict[str, list[float]] = {"items": [], "whole": []}
        items = 0
        for _ in range(3):
            for label, query in (("items", ITEMS), ("whole", WHOLE)):
                with tenant_transaction(conn, "q"):
                    t0 = time.perf_counter()
                    (count,) = conn.execute(query).fetchone()  # type: ignore[misc]
                    found[label].append((time.perf_counter() - t0) * 1000)
                    items = count if label == "items" else items
        label = "own" if names == OWN_NAMES else "common (400)"
        return [n, label, items, f"{median(found['items']):.0f}", f"{median(found['whole']):.0f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 10000, 50000])
    args = parser.parse_args()
    rows = []
    for names in (OWN_NAMES, COMMON_NAMES):
        for n in args.sizes:
            rows.append(measure(n, names))
            print(rows[-1], flush=True)
    body = (
        "A tenant of N people keyed by employee numbers in a series (none a slip of another: each has its own "
        "name) and N / 100 planted slips (a person's number with a digit dropped, under the same name); then "
        "the same people under 400 common names (20 first names by 20 surnames: many share a name, and their "
        "numbers a slip apart are items by the rule). `SELECT count(*)` of the near_identifiers items and of "
        "the whole `kgrag.review_queue`, median of 3 reads.\n\n"
        + markdown_table(["identified entities", "names", "near_identifiers items", "items ms", "whole queue ms"], rows)
        + "\n"
    )
    print(body)
    write_section("review_queue", "Reading the review queue as identified entities grow", body)


if __name__ == "__main__":
    main()

"""The similarity floors of another embedder, carried over from USE's by quantile: no answer is used.

The router's and the routes' floors (chunk_min_similarity, report_min_similarity,
entity_min_similarity, entity_seed_min_similarity) and router_flat_gap were set for USE. Another
model spreads cosine similarities differently (e5's unrelated pairs sit near 0.75, USE's near 0.1),
so the same numbers mean something else. Here each floor keeps its meaning as a share of pairs:
over every (question, passage) pair of the multi-hop sets of ../shared/data/multihop (the 200
questions against the 2,884 paragraphs; for the entity floors, against the paragraph titles, as an
entity is embedded from its name), the floor for the other model is the similarity that the same
share of its pairs reaches as reach USE's floor. router_flat_gap (a difference of similarities)
scales with the spread: the ratio of the two models' interquartile ranges. Prints the floors and
writes them to docs/benchmarks.md; the setting embedder_floors holds them (revision 0036).

    python benchmarks/floors.py [--embedder e5]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from common import markdown_table, write_section
from multihop import hotpotqa, musique

from pgkgrag.embed.embedders import get_embedder

# USE's floors (the '*' settings) and what each is compared with
USE_FLOORS = {
    "chunk_min_similarity": (0.3, "passages"),
    "report_min_similarity": (0.3, "passages"),
    "entity_min_similarity": (0.5, "names"),
    "entity_seed_min_similarity": (0.6, "names"),
}
USE_FLAT_GAP = 0.05


def similarities(name: str) -> dict[str, np.ndarray]:
    """Every question-passage and question-name cosine of both sets, for one embedder."""
    embedder = get_embedder(name, 512)
    out: dict[str, list[np.ndarray]] = {"passages": [], "names": []}
    for loader in (musique, hotpotqa):
        docs, questions = loader()
        asked = embedder.embed_queries([q for q, _ in questions])
        passages = embedder.embed([f"{d['title']}\n{d['text']}" for d in docs])
        names = embedder.embed(sorted({d["title"] for d in docs}))
        out["passages"].append((asked @ passages.T).ravel())
        out["names"].append((asked @ names.T).ravel())
    return {kind: np.concatenate(parts) for kind, parts in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="e5")
    args = parser.parse_args()
    base, other = similarities("use"), similarities(args.embedder)
    floors: dict[str, float] = {}
    rows: list[list[object]] = []
    for key, (floor, kind) in USE_FLOORS.items():
        share = float((base[kind] >= floor).mean())
        mapped = float(np.quantile(other[kind], 1 - share))
        floors[key] = round(mapped, 3)
        rows.append([key, kind, floor, f"{100 * share:.3f}%", floors[key]])
    spread = {
        name: float(np.subtract(*np.percentile(sims["names"], [75, 25])))
        for name, sims in (("use", base), ("other", other))
    }
    floors["router_flat_gap"] = round(USE_FLAT_GAP * spread["other"] / spread["use"], 4)
    rows.append(
        [
            "router_flat_gap",
            "names (IQR ratio)",
            USE_FLAT_GAP,
            f"x{spread['other'] / spread['use']:.3f}",
            floors["router_flat_gap"],
        ]
    )
    table = markdown_table(
        ["setting", "pairs", "USE", "share of pairs at or above (or spread ratio)", args.embedder], rows
    )
    medians = {k: (float(np.median(base[k])), float(np.median(other[k]))) for k in ("passages", "names")}
    body = (
        f"Quantile mapping over {base['passages'].size:,} question-passage and {base['names'].size:,} question-name "
        "pairs of the multi-hop sets (no gold answer used): each floor of the other model is the similarity "
        "reached by the same share of pairs as USE's floor; router_flat_gap scales with the interquartile range of "
        f"the question-name similarities. Median similarity, USE / {args.embedder}: passages "
        f"{medians['passages'][0]:.3f} / {medians['passages'][1]:.3f}, names {medians['names'][0]:.3f} / "
        f"{medians['names'][1]:.3f}.\n\n" + table + "\n\nThe setting embedder_floors: "
        f"`{json.dumps({args.embedder: floors})}`\n"
    )
    print(body)
    write_section("floors", f"Similarity floors for {args.embedder}, carried over from USE", body)


if __name__ == "__main__":
    main()

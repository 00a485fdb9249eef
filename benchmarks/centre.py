"""The centre of an embedder's vectors, and what subtracting it does to the binary-quantized index.

e5's vectors share a large common component (their mean has a norm near 0.9): most of their
components have the same sign in every vector, so their binary quantization spends those bits on
nothing, and the Hamming candidates miss neighbours the exact cosine finds. The index quantizes
each vector less its embedder's centre (setting embedder_centres, revision 0038); the exact
re-rank still compares the vectors themselves.

The centre is the mean of the embedder's vectors of the shipped sample corpus
(pgkgrag/sample/ops.jsonl, embedded as ingestion embeds chunks), not of the sets it is measured on.
`--print-centre` prints it as the revision stores it. Otherwise, on the multi-hop sets: recall@5 of
the gold paragraphs by exact cosine, and by the N nearest in Hamming distance re-ranked by exact
cosine (what kgrag_private.nearest does, brute force here: no HNSW approximation), with the vectors
quantized as they are and less the centre.

    python benchmarks/centre.py [--embedders e5 use] [--print-centre e5]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from common import markdown_table, write_section
from multihop import hotpotqa, musique

from pgkgrag.embed.embedders import Vectors, get_embedder
from pgkgrag.resources import SAMPLE_CORPUS

CANDIDATES = (50, 100, 150, 300)


def sample_centre(name: str) -> Vectors:
    """The mean of the embedder's vectors of the sample corpus's texts."""
    texts = [json.loads(line)["text"] for line in SAMPLE_CORPUS.read_text().splitlines() if line]
    return np.asarray(get_embedder(name, 512).embed(texts).mean(axis=0), dtype=np.float32)


def recall_at_5(ranked: np.ndarray, ids: list[str], questions: list[tuple[str, set[str]]]) -> float:
    hits = [len({ids[i] for i in row[:5]} & gold) / len(gold) for row, (_, gold) in zip(ranked, questions, strict=True)]
    return 100 * float(np.mean(hits))


def hamming_then_exact(p: Vectors, q: Vectors, centre: Vectors, n: int) -> np.ndarray:
    """Per question: the n passages nearest in Hamming distance of the quantized vectors (less
    centre), re-ranked by exact cosine; ties by position, as the index's ids break them."""
    pb, qb = (p - centre) > 0, (q - centre) > 0
    hamming = (qb[:, None, :] != pb[None, :, :]).sum(-1)
    candidates = np.argsort(hamming, axis=1, kind="stable")[:, :n]
    sims = np.take_along_axis(q @ p.T, candidates, 1)
    return np.take_along_axis(candidates, np.argsort(-sims, axis=1, kind="stable"), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", nargs="+", default=["e5", "use"], choices=["e5", "use"])
    parser.add_argument("--print-centre", choices=["e5", "use"], help="print the centre as a JSON array, and stop")
    args = parser.parse_args()
    if args.print_centre:
        print(json.dumps([round(float(x), 5) for x in sample_centre(args.print_centre)]))
        return
    rows: list[list[object]] = []
    for name in args.embedders:
        embedder = get_embedder(name, 512)
        centre = sample_centre(name)
        for label, loader in (("musique", musique), ("hotpotqa", hotpotqa)):
            docs, questions = loader()
            p = embedder.embed([f"{d['title']}\n{d['text']}" for d in docs])
            q = embedder.embed_queries([text for text, _ in questions])
            ids = [d["doc_id"] for d in docs]
            mean_norm = float(np.linalg.norm(p.mean(axis=0)))
            exact = recall_at_5(np.argsort(-(q @ p.T), axis=1, kind="stable"), ids, questions)
            for n in CANDIDATES:
                as_is = recall_at_5(hamming_then_exact(p, q, np.zeros_like(centre), n), ids, questions)
                centred = recall_at_5(hamming_then_exact(p, q, centre, n), ids, questions)
                rows.append([label, name, f"{mean_norm:.2f}", n, f"{exact:.1f}", f"{as_is:.1f}", f"{centred:.1f}"])
                print(rows[-1], flush=True)
    table = markdown_table(
        ["set", "embedder", "norm of the mean vector", "candidates", "exact R@5", "bq as is R@5", "bq less centre R@5"],
        rows,
    )
    body = (
        "Recall@5 of the gold paragraphs of the first 100 questions of each multi-hop set, by exact cosine and by "
        "the N nearest in Hamming distance of the binary-quantized vectors re-ranked by exact cosine (brute force: "
        "what kgrag_private.nearest does, without the HNSW approximation), the vectors quantized as they are or "
        "less their embedder's centre (the mean of its vectors of the shipped sample corpus, not of these sets). "
        "A search of k = 5 draws 150 candidates (vector_overfetch 30, vector_min_candidates 100). e5's vectors "
        "share a common component that USE's do not: quantized as they are, many of their bits are the same in "
        "every vector; less the centre, the candidates hold what the exact ranking finds. Revision 0038 "
        "quantizes every vector less its embedder's centre (setting embedder_centres: e5's; USE has none).\n\n"
        + table
        + "\n"
    )
    print(body)
    write_section("centre", "Binary quantization less the embedder's centre", body)


if __name__ == "__main__":
    main()

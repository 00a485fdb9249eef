"""The keyphrases extractor's names on a team folder of this machine's files: how many one-word
names are common words the same text also writes in lowercase ("Files" opening a sentence, a
listing's FILE and REAL), which the extractor no longer takes as names.

Every PDF and the 40 largest HTML pages under /usr/share/doc (read by pgkgrag's readers, within
their limits), sorted by path: the names each document's text gives (keyphrases.names_in), with the
rule and without it, and the names dropped that the most documents give. No database, no answer.

    python benchmarks/generic_names.py
"""

from __future__ import annotations

import collections
from pathlib import Path

from common import markdown_table, write_section

from pgkgrag.ingest.extractors.keyphrases import common_word, language_of, lowercase_words, names_in, stop_words
from pgkgrag.ingest.readers.files import read_inputs

SHARED = Path("/usr/share/doc")


def folder_files() -> list[Path]:
    pdfs = sorted(SHARED.rglob("*.pdf"))
    pages = sorted(SHARED.rglob("*.html"), key=lambda p: (-p.stat().st_size, str(p)))[:40]
    return sorted([*pdfs, *pages])


def main() -> None:
    files = folder_files()
    documents = [item.document for item in read_inputs(files) if item.document is not None]
    total = single = dropped = 0
    dropped_docs: collections.Counter[str] = collections.Counter()
    kept_docs: collections.Counter[str] = collections.Counter()
    for document in documents:
        text = f"{document.title}\n{document.text}"
        stops = stop_words(language_of(None, text))
        common = lowercase_words(text)
        names = set(names_in(text, stops))
        total += len(names)
        single += sum(" " not in n for n in names)
        gone = {n for n in names if common_word(n, common)}
        dropped += len(gone)
        dropped_docs.update(gone)
        kept_docs.update(n for n in names - gone if " " not in n)
    rows = [
        ["documents read", len(documents)],
        ["names (distinct per document), before", total],
        ["of which one word", single],
        ["one-word names the text writes in lowercase: dropped", f"{dropped} ({100 * dropped / max(1, total):.1f}%)"],
        ["names kept", total - dropped],
    ]
    common_dropped = ", ".join(f"{n} ({c})" for n, c in sorted(dropped_docs.items(), key=lambda x: (-x[1], x[0]))[:25])
    common_kept = ", ".join(f"{n} ({c})" for n, c in sorted(kept_docs.items(), key=lambda x: (-x[1], x[0]))[:25])
    body = (
        f"Every PDF and the 40 largest HTML pages under /usr/share/doc on this machine ({len(files)} files, "
        f"{len(documents)} read), each document's names as the keyphrases extractor finds them.\n\n"
        + markdown_table(["", "count"], rows)
        + f"\n\nDropped, by the documents that gave them: {common_dropped}.\n\n"
        f"One-word names kept, by the documents that give them: {common_kept}.\n"
    )
    print(body)
    write_section("generic_names", "Common words taken for names (keyphrases extractor, this machine's files)", body)


if __name__ == "__main__":
    main()

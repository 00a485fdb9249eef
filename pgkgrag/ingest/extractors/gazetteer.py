"""The gazetteer extractor: known names found in chunk text.

The names come from a file (JSONL or CSV) or from the tenant's graph (kgrag_private.known_names). One
Aho-Corasick automaton (pyahocorasick) over their canonical forms (kgrag.canonical_name) finds
them in one pass per chunk, word-bounded, case and accent insensitive, but for the case rule of
one-word names (kgrag.capitalized_words): a capitalized one-word name ("Time", a magazine; "Taken",
a film) is found only in a text that capitalizes that word too, unless the text capitalizes
nothing, as entity linking reads questions. A document's title is read too: a name in it is what
the whole document is about, cited by the document's first chunk, even where the text never
repeats it (an encyclopedia paragraph says "he", a runbook "this service").
"""

from __future__ import annotations

import csv
import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path

import ahocorasick
import psycopg

from pgkgrag.errors import KgragError
from pgkgrag.ingest.extractors.base import (
    Extraction,
    FoundEntity,
    PreparedDocument,
    capitalized_words,
    cased_names,
    normalized,
)
from pgkgrag.queries import Q


@dataclass(frozen=True)
class KnownName:
    name: str
    type: str
    aliases: tuple[str, ...] = ()


def load_gazetteer(path: Path) -> list[KnownName]:
    """Names from JSONL ({"name", "type", "aliases"}) or CSV (name,type,aliases separated by ';')."""
    if not path.exists():
        raise KgragError(f"gazetteer {path}: no such file")
    names: list[KnownName] = []
    if path.suffix.lower() == ".jsonl":
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                names.append(
                    KnownName(
                        str(item["name"]),
                        str(item.get("type") or "Concept"),
                        tuple(str(a) for a in item.get("aliases", [])),
                    )
                )
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise KgragError(f'gazetteer {path}:{number}: expected {{"name", "type", "aliases"}}: {exc}') from exc
    elif path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                if not row.get("name"):
                    raise KgragError(f"gazetteer {path}: every row needs a name (columns: name,type,aliases)")
                aliases = tuple(a.strip() for a in (row.get("aliases") or "").split(";") if a.strip())
                names.append(KnownName(row["name"], row.get("type") or "Concept", aliases))
    else:
        raise KgragError(f"gazetteer {path}: expected a .jsonl or .csv file")
    return names


def tenant_gazetteer(conn: psycopg.Connection) -> list[KnownName]:
    """The names the tenant's graph already knows."""
    rows = conn.execute(Q["known_names"]).fetchall()
    return [KnownName(name, etype, tuple(aliases)) for name, etype, aliases in rows]


class GazetteerExtractor:
    """Known names found in chunk text by one Aho-Corasick pass per chunk."""

    name = "gazetteer"

    def __init__(self, names: list[KnownName]) -> None:
        self.names = names
        self._automaton: ahocorasick.Automaton | None = None
        self._building = threading.Lock()  # batches may be extracted by several writer threads
        self._cased = False  # some one-word name is capitalized (set with the automaton)

    def fingerprint(self) -> str:
        listing = "\n".join(f"{n.name}\t{n.type}\t{';'.join(n.aliases)}" for n in self.names)
        return "gazetteer:v3:" + hashlib.sha256(listing.encode()).hexdigest()[:16]

    def _build(self, conn: psycopg.Connection) -> ahocorasick.Automaton:
        forms = [(i, form) for i, known in enumerate(self.names) for form in (known.name, *known.aliases)]
        canon = normalized(conn, "canonical_name", [form for _, form in forms])
        # per pattern, each name it finds and whether only a text capitalizing the word may name it
        patterns: dict[str, dict[int, bool]] = {}
        cased_forms = cased_names(conn, [form for _, form in forms])
        for (index, _), key, cased in zip(forms, canon, cased_forms, strict=True):
            if key:
                found = patterns.setdefault(f" {key} ", {})
                found[index] = found.get(index, True) and cased
        automaton = ahocorasick.Automaton()
        for pattern, found in patterns.items():
            automaton.add_word(pattern, (pattern.strip(), tuple(sorted(found.items()))))
        automaton.make_automaton()
        self._cased = any(cased for _, (_, found) in automaton.items() for _, cased in found)
        return automaton

    def extract(self, conn: psycopg.Connection, docs: list[PreparedDocument]) -> dict[str, Extraction | Exception]:
        with self._building:
            if self._automaton is None:
                self._automaton = self._build(conn)
            automaton = self._automaton
        # each document's title, then its chunks, in one canonical_name call
        texts = [text for prepared in docs for text in (prepared.document.title, *(c.text for c in prepared.chunks))]
        canon = iter(normalized(conn, "canonical_name", texts) if len(automaton) else [""] * len(texts))
        # the words each text capitalizes, read only when some one-word name is capitalized
        caps = iter(capitalized_words(conn, texts) if len(automaton) and self._cased else [frozenset()] * len(texts))
        results: dict[str, Extraction | Exception] = {}
        for prepared in docs:
            hits: dict[int, set[int]] = {}
            title = (next(canon), next(caps))
            # a document without chunks has nothing to cite its title's names
            first = [prepared.chunks[0].ordinal] if prepared.chunks else []
            texts_of = ((first, title), *(([c.ordinal], (next(canon), next(caps))) for c in prepared.chunks))
            for ordinals, (haystack, capitalized) in texts_of:
                if not len(automaton) or not haystack or not ordinals:
                    continue
                for _, (word, found) in automaton.iter(f" {haystack} "):
                    for index, cased in found:
                        if not cased or not capitalized or word in capitalized:
                            hits.setdefault(index, set()).update(ordinals)
            results[prepared.document.doc_id] = Extraction(
                entities=[
                    FoundEntity(
                        self.names[i].name,
                        self.names[i].type,
                        aliases=list(self.names[i].aliases),
                        ordinals=sorted(ordinals),
                    )
                    for i, ordinals in sorted(hits.items())
                ]
            )
        return results

"""Choosing and configuring the extractor named on the command line, and `auto`, which chooses
per document: what the document gives (provided) when it carries entities or relations, else the
keyphrases extractor, so plain files get a graph too."""

from __future__ import annotations

from pathlib import Path

import psycopg

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.errors import KgragError
from pgkgrag.ingest.extractors.base import Extraction, Extractor, PreparedDocument, ProvidedExtractor
from pgkgrag.ingest.extractors.gazetteer import GazetteerExtractor, load_gazetteer, tenant_gazetteer
from pgkgrag.ingest.extractors.keyphrases import KeyphraseExtractor
from pgkgrag.ingest.inputs import DocumentIn


class AutoExtractor:
    """provided for a document that carries entities or relations, keyphrases for one that does not."""

    name = "auto"

    def __init__(self) -> None:
        self.provided = ProvidedExtractor()
        self.keyphrases = KeyphraseExtractor()

    def chosen(self, doc: DocumentIn) -> Extractor:
        return self.provided if doc.entities or doc.relations else self.keyphrases

    def fingerprint(self) -> str:
        return f"auto:{self.provided.fingerprint()}:{self.keyphrases.fingerprint()}"

    def extract(self, conn: psycopg.Connection, docs: list[PreparedDocument]) -> dict[str, Extraction | Exception]:
        results: dict[str, Extraction | Exception] = {}
        for extractor in (self.provided, self.keyphrases):
            mine = [prepared for prepared in docs if self.chosen(prepared.document) is extractor]
            if mine:
                results.update(extractor.extract(conn, mine))
        return results


def document_fingerprint(extractor: Extractor, doc: DocumentIn) -> str:
    """What a document's content hash says of its extraction: with auto, the extractor it gets, so a
    document that carries its entities hashes as it did under provided, the default before auto."""
    if isinstance(extractor, AutoExtractor):
        return extractor.chosen(doc).fingerprint()
    return extractor.fingerprint()


def make_extractor(conn: psycopg.Connection, tenant: str, name: str, gazetteer: Path | None = None) -> Extractor:
    if name == "auto":
        return AutoExtractor()
    if name == "provided":
        return ProvidedExtractor()
    if name == "keyphrases":
        return KeyphraseExtractor()
    if name == "gazetteer":
        if gazetteer is not None:
            names = load_gazetteer(gazetteer)
        else:
            with tenant_transaction(conn, tenant):
                names = tenant_gazetteer(conn)
            if not names:
                raise KgragError(
                    "--extractor gazetteer needs names: pass --gazetteer FILE, or ingest some "
                    "entities for this tenant first"
                )
        return GazetteerExtractor(names)
    if name == "llm":
        from pgkgrag.ingest.extractors.llm import LlmExtractor

        return LlmExtractor.from_env(conn, tenant)
    raise KgragError(f"unknown extractor {name!r}")

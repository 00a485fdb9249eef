"""Choosing and configuring the extractor named on the command line."""

from __future__ import annotations

from pathlib import Path

import psycopg

from pgkgrag.db import tenant_transaction
from pgkgrag.errors import KgragError
from pgkgrag.extractors import Extractor, ProvidedExtractor
from pgkgrag.gazetteer import GazetteerExtractor, load_gazetteer, tenant_gazetteer


def make_extractor(conn: psycopg.Connection, tenant: str, name: str, gazetteer: Path | None = None) -> Extractor:
    if name == "provided":
        return ProvidedExtractor()
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
        from pgkgrag.llm_extractor import LlmExtractor

        return LlmExtractor.from_env(conn, tenant)
    raise KgragError(f"unknown extractor {name!r}")

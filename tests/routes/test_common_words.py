"""A one-word name that the collection also writes as a plain lowercase word ("History" heading one
manual, "the history of" in another) is a common word of the tenant: the build marks it
(kgrag.refresh_common_words), a question's lowercase word no longer links it, and the local route
ranks it below named entities. Ingested with the keyphrases extractor, built and searched as a
login role granted kgrag_reader."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psycopg
from conftest import as_role
from ingesting import ingest, q

from pgkgrag.db.connections import tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.keyphrases import KeyphraseExtractor

DOCS = [
    {
        "doc_id": "streams.md",
        "title": "Streams",
        "text": "History\n\nKafka moved its brokers to Zookeeper in spring. Kafka keeps History and Zookeeper apart.",
    },
    {
        "doc_id": "guide.md",
        "title": "Guide",
        "text": "The history of the project is long. We keep a short history in this file.",
    },
]


def test_a_name_the_collection_writes_in_lowercase_is_a_common_word(
    conn: psycopg.Connection, admin: psycopg.Connection, dsn: str, login_roles: Callable[[str], str], tmp_path: Path
) -> None:
    assert ingest(conn, tmp_path, DOCS, extractor=KeyphraseExtractor()).ok
    names = {n for (n,) in q(conn, "SELECT entity_id FROM kgrag.entity")}
    assert {"name:history", "name:kafka", "name:zookeeper"} <= names  # one manual writes it capitalized only
    role = login_roles("kgrag_reader")
    admin.execute("SELECT kgrag.grant_tenant(%s, 't1')", [role])
    admin.commit()
    with psycopg.connect(as_role(dsn, role)) as reader:

        def linked(question: str) -> list[str]:
            with tenant_transaction(reader, "t1"):
                rows = reader.execute(
                    "SELECT entity_id FROM kgrag.link_entities(%s) WHERE entity_id LIKE 'name:%%' ORDER BY 1",
                    [question],
                )
                return [r for (r,) in rows.fetchall()]

        def reached() -> list[str]:
            with tenant_transaction(reader, "t1"):
                rows = reader.execute(
                    "SELECT ref_id FROM kgrag.kgrag_search(question => 'What does Kafka keep?', route => 'local')"
                    " WHERE kind = 'entity' ORDER BY rank"
                )
                return [r for (r,) in rows.fetchall()]

        # before the build: a question that capitalizes nothing links a capitalized name by its word
        assert linked("history of kafka") == ["name:history", "name:kafka"]
        assert reached().index("name:history") < reached().index("name:zookeeper")  # by id, as before
        built = build(conn, "t1", HashEmbedder(512))
        assert built.common_words == 1
        marked = q(conn, "SELECT entity_id FROM kgrag.entity WHERE common_word")
        assert marked == [("name:history",)]
        assert linked("history of kafka") == ["name:kafka"]  # a named one still is
        assert linked("What does the History section say about Kafka?") == ["name:history", "name:kafka"]
        order = reached()
        assert order.index("name:zookeeper") < order.index("name:history"), order  # named ones first
        # the lowercase writing goes: the name is a name again at the next build
        assert ingest(conn, tmp_path, [{**DOCS[1], "text": "The project is long."}], extractor=KeyphraseExtractor()).ok
        assert build(conn, "t1", HashEmbedder(512)).common_words == 0
        assert linked("history of kafka") == ["name:history", "name:kafka"]
        # a reader marks nothing (it writes no entity)
        with tenant_transaction(reader, "t1"):
            try:
                reader.execute("SELECT kgrag.refresh_common_words()")
            except psycopg.errors.InsufficientPrivilege:
                refused = True
            else:
                refused = False
        assert refused

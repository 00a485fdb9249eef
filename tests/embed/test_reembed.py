"""Tenants of two embedders (USE, 512 dimensions; e5, 384, stored zero-padded) in one database, each
searched with its own model's vectors and refused another's; and a tenant ingested with USE moved to
e5 with `pgkgrag reembed` while a reader's searches go on, resuming an interrupted run, leaving the
tenant as it was when the switch cannot happen, and refusing a batch embedded with the old model."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from conftest import as_role
from ingesting import OPS, ingest
from searching import first_chunk

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import Embedder
from pgkgrag.embed.reembed import _embed_kind, reembed
from pgkgrag.graph.build import build
from pgkgrag.ingest.ingestor import Ingestor

QUESTION = "What does the Payment Module call?"


def reader_of(dsn: str, admin: psycopg.Connection, login_roles: Callable[[str], str], *tenants: str) -> str:
    role = login_roles("kgrag_reader")
    for tenant in tenants:
        admin.execute("SELECT kgrag.grant_tenant(%s, %s)", [role, tenant])
    admin.commit()
    return as_role(dsn, role)


def test_tenants_of_two_dimensions_share_the_database(
    conn: psycopg.Connection,
    admin: psycopg.Connection,
    dsn: str,
    login_roles: Callable[[str], str],
    tmp_path: Path,
    use: Embedder,
    e5: Embedder,
) -> None:
    for tenant, embedder in (("u", use), ("e", e5)):
        assert ingest(conn, tmp_path, OPS, tenant=tenant, embedder=embedder).ok
        build(conn, tenant, embedder)
    with tenant_transaction(conn, "e"):
        stored = conn.execute(
            "SELECT vector_dims(embedding), (embedding::real[])[385:512] = array_fill(0::real, ARRAY[128]),"
            " kgrag.setting('embedder') #>> '{}', kgrag.setting('embedder_dimension')::int"
            " FROM kgrag.chunk LIMIT 1"
        ).fetchone()
    assert stored == (512, True, "e5", 384)
    with connect(reader_of(dsn, admin, login_roles, "u", "e")) as reader:
        asked = {name: model.embed_queries([QUESTION])[0] for name, model in (("use", use), ("e5", e5))}
        assert first_chunk(reader, "u", asked["use"]) == first_chunk(reader, "e", asked["e5"]) == "d2#0"
        with tenant_transaction(reader, "e"):  # the entities and reports were embedded and padded too
            linked = reader.execute("SELECT entity_id FROM kgrag.search_entities_vector(%s, 1)", [asked["e5"]])
            assert linked.fetchall() != []
        for tenant, wrong, message in (
            ("e", "use", "has 512 dimensions, but tenant 'e' embeds with e5 \\(384"),
            ("u", "e5", "has 384 dimensions, but tenant 'u' embeds with use \\(512"),
        ):
            with pytest.raises(psycopg.errors.DataException, match=message):
                first_chunk(reader, tenant, asked[wrong])


def test_a_tenant_moves_to_another_embedder_while_searches_go_on(
    conn: psycopg.Connection,
    admin: psycopg.Connection,
    dsn: str,
    login_roles: Callable[[str], str],
    tmp_path: Path,
    use: Embedder,
    e5: Embedder,
) -> None:
    assert ingest(conn, tmp_path, OPS, embedder=use).ok
    build(conn, "t1", use)
    with tenant_transaction(conn, "t1"):
        chunks, entities, reports = conn.execute(
            "SELECT (SELECT count(*) FROM kgrag.chunk), (SELECT count(*) FROM kgrag.entity),"
            " (SELECT count(*) FROM kgrag.community_report)"
        ).fetchone()  # type: ignore[misc]
    assert reports > 0

    # the switch refuses while a text has no vector of the new model, and changes nothing
    with (
        pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="no e5 vector yet"),
        tenant_transaction(conn, "t1"),
    ):
        conn.execute("SELECT kgrag.reembed_switch('e5', 384)")
    # a run interrupted after the chunks: what it stored stays
    assert _embed_kind(conn, "t1", e5, "chunk", 2, None) == chunks

    asked = {"use": use.embed_queries([QUESTION])[0], "e5": e5.embed_queries([QUESTION])[0]}
    answered: list[str] = []
    refused: list[str] = []
    failed: list[Exception] = []
    stop = threading.Event()

    def search_meanwhile() -> None:
        with connect(reader_of(dsn, admin, login_roles, "t1")) as reader:
            while not stop.is_set():
                try:
                    answered.append(first_chunk(reader, "t1", asked["use"]))
                except psycopg.errors.DataException as exc:  # moved: a USE vector is another model's now
                    refused.append(str(exc))
                    return
                except Exception as exc:  # anything else is a search that stopped answering
                    failed.append(exc)
                    return

    searching = threading.Thread(target=search_meanwhile)
    searching.start()
    try:
        moved = reembed(conn, "t1", e5, batch=4)
    finally:
        stop.set()
        searching.join()
    # resumed: the chunks were not embedded again
    assert moved == {
        "embedder": "e5",
        "dimension": 384,
        "chunks": chunks,
        "entities": entities,
        "reports": reports,
        "embedded": entities + reports,
    }
    assert failed == []
    assert answered and set(answered) == {"d2#0"}  # answered with the old vectors until the switch
    assert refused == [] or "embeds with e5 (384 dimensions)" in refused[0]
    assert first_chunk(conn, "t1", asked["e5"]) == "d2#0"
    with tenant_transaction(conn, "t1"):
        assert conn.execute("SELECT count(*) FROM kgrag.reembedding").fetchone() == (0,)

    # ingestion goes on with the new model and is refused the old one, also for a batch that
    # embedded with it while the switch happened
    assert ingest(conn, tmp_path, [dict(OPS[0], doc_id="d9")], embedder=e5).ok
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="was embedded with 'e5'"):
        Ingestor(conn, "t1", None, use).run([])  # type: ignore[arg-type]
    with (
        pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="this batch's vectors are of use"),
        tenant_transaction(conn, "t1"),
    ):
        conn.execute("SELECT set_config('kgrag.batch_embedder', 'use', true)")
        conn.execute("SELECT kgrag_private.stage_begin()")
        conn.execute("SELECT kgrag_private.ingest_apply()")

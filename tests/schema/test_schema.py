"""The kgrag schema as installed: tenancy in every key, RLS, dimension checks, cascades, helpers."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from catalog import tables as catalog_tables
from ingesting import OPS, ingest
from psycopg import sql

from pgkgrag.db.connections import connect, tenant_transaction
from pgkgrag.embed.embedders import HashEmbedder
from pgkgrag.graph.build import build

TABLES = {
    "settings",
    "router_rule",
    "document",
    "chunk",
    "entity",
    "alias",
    "mention",
    "relation_evidence",
    "edge",
    "community",
    "community_member",
    "community_report",
}


def test_every_table_has_tenant_id_in_every_key(conn: psycopg.Connection) -> None:
    tables = set(catalog_tables(conn))
    assert tables >= TABLES
    for table in sorted(tables):
        col = conn.execute(
            "SELECT attnotnull FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'tenant_id'",
            [f"kgrag.{table}"],
        ).fetchone()
        assert col == (True,), f"kgrag.{table} lacks tenant_id NOT NULL"
    keys = conn.execute(
        """SELECT conrelid::regclass::text, conname, contype,
                  (SELECT array_agg(attname) FROM pg_attribute
                    WHERE attrelid = conrelid AND attnum = ANY (conkey)),
                  (SELECT array_agg(attname) FROM pg_attribute
                    WHERE attrelid = confrelid AND attnum = ANY (confkey))
             FROM pg_constraint
            WHERE connamespace = 'kgrag'::regnamespace AND contype IN ('p', 'u', 'f')"""
    ).fetchall()
    assert len(keys) > 20
    for table, name, kind, cols, ref_cols in keys:
        assert "tenant_id" in cols, f"{table}.{name} ({kind}) does not include tenant_id"
        if kind == "f":
            assert "tenant_id" in ref_cols, f"{table}.{name} does not reference tenant_id"
    unique_indexes = conn.execute(
        "SELECT indexrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid"
        " WHERE c.relnamespace = 'kgrag'::regnamespace AND i.indisunique"
        " AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = i.indrelid"
        "   AND a.attname = 'tenant_id' AND a.attnum = ANY (i.indkey))"
    ).fetchall()
    assert unique_indexes == []


def test_every_tenant_id_keeps_a_statistics_target_of_one(conn: psycopg.Connection) -> None:
    """Revision 0025: the planner estimates a tenant the statistics never saw (one that came after
    the last ANALYZE) as a share of the rows, not as none; a table added later must say so too."""
    targets = conn.execute(
        "SELECT c.relname, a.attstattarget FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid"
        " WHERE c.relnamespace = 'kgrag'::regnamespace AND c.relkind = 'r' AND a.attname = 'tenant_id'"
        " ORDER BY 1"
    ).fetchall()
    assert len(targets) >= len(TABLES)
    assert [t for t, target in targets if target != 1] == []


def test_every_gin_index_takes_entries_at_once(conn: psycopg.Connection) -> None:
    """Revision 0026: a GIN index with a pending list makes every search read the whole list
    (linking probes the trigram index once per span of the question); a GIN index added later
    must turn it off too."""
    gin = conn.execute(
        "SELECT c.relname, COALESCE(c.reloptions, '{}') FROM pg_class AS c JOIN pg_am AS a ON a.oid = c.relam"
        " WHERE c.relnamespace = 'kgrag'::regnamespace AND a.amname = 'gin' ORDER BY 1"
    ).fetchall()
    assert [name for name, _ in gin] == ["alias_trigrams_idx", "chunk_tsv_idx"]
    assert [name for name, options in gin if "fastupdate=off" not in options] == []


def test_every_foreign_key_has_an_index_on_its_columns(conn: psycopg.Connection) -> None:
    """A delete on the referenced side looks the referencing rows up by these columns; without an
    index each deleted row scans the whole referencing table."""
    missing = conn.execute(
        "SELECT c.conrelid::regclass::text, c.conname FROM pg_constraint AS c"
        " WHERE c.contype = 'f' AND c.connamespace = 'kgrag'::regnamespace"
        "   AND NOT EXISTS (SELECT 1 FROM pg_index AS i WHERE i.indrelid = c.conrelid"
        "        AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey"
        "        AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] <@ c.conkey)"
        " ORDER BY 1, 2"
    ).fetchall()
    assert missing == []


def test_row_level_security_is_enabled_and_forced_everywhere(conn: psycopg.Connection) -> None:
    rows = conn.execute(
        "SELECT relname FROM pg_class c WHERE relnamespace = 'kgrag'::regnamespace AND relkind = 'r'"
        " AND NOT (relrowsecurity AND relforcerowsecurity"
        "          AND EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid))"
    ).fetchall()
    assert rows == []


def test_functions_are_documented(conn: psycopg.Connection) -> None:
    """Invoker rights and pinned paths are checked in test_hardening."""
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p"
        " WHERE p.pronamespace IN ('kgrag'::regnamespace, 'kgrag_private'::regnamespace)"
        " AND COALESCE(obj_description(p.oid, 'pg_proc'), '') = ''"
    ).fetchall()
    assert rows == []


def test_the_kgrag_schema_lists_the_public_api_only(conn: psycopg.Connection) -> None:
    """`\\df+ kgrag.*` is the manual: what a caller should not call lives in kgrag_private."""
    described = conn.execute(
        "SELECT n.nspname, p.oid::regprocedure::text, obj_description(p.oid, 'pg_proc') LIKE 'Private.%'"
        " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname IN ('kgrag', 'kgrag_private') ORDER BY 1, 2"
    ).fetchall()
    public = [name for schema, name, private in described if schema == "kgrag"]
    assert [name for schema, name, private in described if schema == "kgrag" and private] == []
    assert [name for name in public if name.startswith("kgrag._")] == []
    assert [name for schema, name, private in described if schema == "kgrag_private" and not private] == []
    assert len(public) > 40 and len(described) - len(public) > 30, described


@pytest.fixture
def app_role(admin: psycopg.Connection) -> Iterator[str]:
    """A plain role (no superuser, no BYPASSRLS) allowed to use the tables, like an application."""
    conn = admin
    role = f"kgrag_test_app_{conn.info.backend_pid}"
    conn.execute(sql.SQL("CREATE ROLE {} NOSUPERUSER NOBYPASSRLS").format(sql.Identifier(role)))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA kgrag TO {}").format(sql.Identifier(role)))
    conn.execute(sql.SQL("GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA kgrag TO {}").format(sql.Identifier(role)))
    # the tenant policies of documents and chunks call it (the kgrag roles hold it; docs/upgrading.md, 0042)
    conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION kgrag_private.groups_for(text) TO {}").format(sql.Identifier(role)))
    conn.commit()
    yield role
    conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
    conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    conn.commit()


def _insert_document(conn: psycopg.Connection, tenant: str, doc_id: str) -> None:
    with tenant_transaction(conn, tenant):
        conn.execute(
            "INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES (%s, %s, 'h')", [tenant, doc_id]
        )


def test_rls_fails_closed_and_isolates_tenants(admin: psycopg.Connection, app_role: str) -> None:
    conn = admin
    _insert_document(conn, "t1", "a")
    _insert_document(conn, "t2", "b")
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(app_role)))
    with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification, match=r"kgrag\.tenant is not set"):
        conn.execute("SELECT count(*) FROM kgrag.document")
    conn.rollback()
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(app_role)))
    with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification):
        conn.execute("SELECT set_config('kgrag.tenant', '', true)")
        conn.execute("INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t1', 'x', 'h')")
    conn.rollback()
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(app_role)))
    with tenant_transaction(conn, "t1"):
        assert conn.execute("SELECT doc_id FROM kgrag.document").fetchall() == [("a",)]
        # defaults are visible, other tenants' settings are not
        assert conn.execute("SELECT DISTINCT tenant_id FROM kgrag.settings").fetchall() == [("*",)]
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
        tenant_transaction(conn, "t1"),
    ):
        conn.execute("INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t2', 'z', 'h')")
    conn.execute("RESET ROLE")


def test_wrong_dimension_names_the_expected_one(conn: psycopg.Connection) -> None:
    _insert_document(conn, "t1", "d1")
    with (
        pytest.raises(psycopg.errors.DataException, match="expected 512 dimensions, not 3"),
        tenant_transaction(conn, "t1"),
    ):
        conn.execute(
            "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text,"
            " content_hash, embedding) VALUES ('t1', 'd1#0', 'd1', 0, 0, 1, 'x', 'h', '[1,2,3]')"
        )
    with tenant_transaction(conn, "t1"):
        assert conn.execute("SELECT kgrag.dimension()").fetchone() == (512,)


def test_chunk_ids_are_doc_hash_ordinal(conn: psycopg.Connection) -> None:
    _insert_document(conn, "t1", "d1")
    with pytest.raises(psycopg.errors.CheckViolation), tenant_transaction(conn, "t1"):
        conn.execute(
            "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text,"
            " content_hash) VALUES ('t1', 'd1-0', 'd1', 0, 0, 1, 'x', 'h')"
        )


def test_deleting_a_document_cascades_to_chunks_and_mentions(conn: psycopg.Connection) -> None:
    with tenant_transaction(conn, "t1"):
        conn.execute(
            "INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t1', 'd1', 'h'), ('t1', 'd2', 'h')"
        )
        conn.execute(
            "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text, content_hash)"
            " VALUES ('t1', 'd1#0', 'd1', 0, 0, 5, 'Alpha', 'h1'), ('t1', 'd2#0', 'd2', 0, 0, 5, 'Alpha', 'h2')"
        )
        conn.execute(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type)"
            " VALUES ('t1', kgrag.entity_key('Service', 'Alpha'), 'Alpha', 'Service')"
        )
        conn.execute(
            "INSERT INTO kgrag.mention (tenant_id, entity_id, chunk_id)"
            " VALUES ('t1', 'service:alpha', 'd1#0'), ('t1', 'service:alpha', 'd2#0')"
        )
        conn.execute("DELETE FROM kgrag.document WHERE doc_id = 'd1'")
        assert conn.execute("SELECT chunk_id FROM kgrag.chunk").fetchall() == [("d2#0",)]
        assert conn.execute("SELECT chunk_id FROM kgrag.mention").fetchall() == [("d2#0",)]


CITED = (
    "SELECT c.doc_id, count(*) FROM (SELECT e.answer_chunk_id AS id FROM kgrag.entity AS e"
    " UNION ALL SELECT g.evidence_chunk_id FROM kgrag.edge AS g) AS x"
    " JOIN kgrag.chunk AS c ON c.chunk_id = x.id GROUP BY c.doc_id ORDER BY 2 DESC, 1"
)
DANGLING = (
    "SELECT count(*) FROM (SELECT e.answer_chunk_id AS id FROM kgrag.entity AS e"
    " UNION ALL SELECT g.evidence_chunk_id FROM kgrag.edge AS g) AS x"
    " WHERE x.id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM kgrag.chunk AS c WHERE c.chunk_id = x.id)"
)


def test_a_cited_document_goes_with_delete_documents_only(conn: psycopg.Connection, tmp_path: Path) -> None:
    """An entity's answer and an edge's evidence name chunks (revision 0019: plain foreign keys, as
    Citus allows): kgrag.delete_documents clears them first; a DELETE by hand is refused."""
    ingest(conn, tmp_path, OPS)
    build(conn, "t1", HashEmbedder(512))
    with tenant_transaction(conn, "t1"):
        cited = conn.execute(CITED).fetchall()
        assert cited and cited[0][1] >= 2
        doc = cited[0][0]
        with pytest.raises(psycopg.errors.ForeignKeyViolation), conn.transaction():
            conn.execute("DELETE FROM kgrag.document WHERE doc_id = %s", [doc])
        conn.execute("SELECT kgrag.delete_documents(%s)", [[doc]])
        assert doc not in dict(conn.execute(CITED).fetchall())
        assert conn.execute(DANGLING).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM kgrag.entity WHERE answer_chunk_id IS NOT NULL").fetchone() != (0,)


def test_a_reference_to_a_chunk_being_replaced_waits_for_the_writer_replacing_it(
    conn: psycopg.Connection, dsn: str, tmp_path: Path
) -> None:
    """Writer A has released a document's chunks (kgrag_private.release_chunks, before deleting
    them); writer B pointing an entity at one of those chunks in the meantime waits for A (its
    foreign-key check meets A's lock on the chunk) instead of committing a reference that A's
    DELETE would then break. B gives up here after 300 ms of waiting."""
    ingest(conn, tmp_path, OPS)
    with connect(dsn) as a, connect(dsn, autocommit=True) as b:
        a.execute("SELECT kgrag.use_tenant('t1')")
        a.execute("SELECT kgrag_private.release_chunks(ARRAY['d1'])")
        b.execute("SET lock_timeout = '300ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            b.execute(
                "UPDATE kgrag.entity SET answer_chunk_id = 'd1#0'"
                " WHERE tenant_id = 't1' AND answer_chunk_id IS DISTINCT FROM 'd1#0'"
                " AND entity_id = (SELECT min(entity_id) FROM kgrag.entity WHERE tenant_id = 't1')"
            )
        a.execute("DELETE FROM kgrag.chunk WHERE tenant_id = 't1' AND doc_id = 'd1'")  # nothing points at them
        a.rollback()


@pytest.mark.parametrize(
    ("func", "arg", "expected"),
    [
        ("fold", "Serviço de Autenticação", "servico de autenticacao"),
        ("canonical_name", "  Serviço-de   Autenticação! ", "servico de autenticacao"),
        ("squash", "Cluster DB", "clusterdb"),
        ("squash", "ServiçoAutenticação", "servicoautenticacao"),
    ],
)
def test_name_normalization(conn: psycopg.Connection, func: str, arg: str, expected: str) -> None:
    query = sql.SQL("SELECT kgrag.{}(%s)").format(sql.Identifier(func))
    assert conn.execute(query, [arg]).fetchone() == (expected,)


def test_fold_shortcut_for_ascii_matches_full_unicode_folding(conn: psycopg.Connection) -> None:
    """Revision 0007 lower-cases ASCII text without NFKD; on every text it must give what the
    full folding gives, or the generated columns built before it would disagree with new rows."""
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(1, 128)] + list("çãéÉöØßﬁ Ａ①²\u0301\u00a0İ\u0131")
    texts = ["".join(rng.choices(alphabet, k=rng.randint(0, 40))) for _ in range(3000)]
    texts += ["".join(rng.choices(alphabet[:127], k=rng.randint(0, 40))) for _ in range(3000)]  # ASCII only
    rows = conn.execute(
        "SELECT count(*) FILTER (WHERE octet_length(x) = length(x)), count(*) FILTER (WHERE kgrag.fold(x)"
        " IS DISTINCT FROM regexp_replace(normalize(lower(x), NFKD), '[\u0300-\u036f]', '', 'g'))"
        " FROM unnest(%s::text[]) AS u(x)",
        [texts],
    ).fetchone()
    assert rows is not None
    ascii_texts, different = rows
    assert ascii_texts >= 3000  # the shortcut was taken
    assert different == 0


def test_entity_key_keeps_types_apart(conn: psycopg.Connection) -> None:
    row = conn.execute("SELECT kgrag.entity_key('Service', 'Billing'), kgrag.entity_key('Team', 'billing!')").fetchone()
    assert row == ("service:billing", "team:billing")


def test_alias_forms_are_generated(conn: psycopg.Connection) -> None:
    with tenant_transaction(conn, "t1"):
        conn.execute(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type)"
            " VALUES ('t1', 'infra:cluster db', 'Cluster DB', 'Infra')"
        )
        conn.execute(
            "INSERT INTO kgrag.alias (tenant_id, entity_id, alias) VALUES ('t1', 'infra:cluster db', 'Cluster DB')"
        )
        row = conn.execute("SELECT alias_fold, alias_sq, trigrams FROM kgrag.alias").fetchone()
    assert row == (
        "cluster db",
        "clusterdb",
        sorted({"  c", " cl", "clu", "lus", "ust", "ste", "ter", "erd", "rdb", "db "}),
    )

"""Migrations: fresh install == upgrade path, idempotent upgrades, clean downgrade, frozen files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pglast
import psycopg
import pytest
from alembic.script import ScriptDirectory
from catalog import oids, snapshot
from conftest import REPO, Server

from pgkgrag import migrations
from pgkgrag.db import installer, schema_version
from pgkgrag.errors import KgragError
from pgkgrag.queries import Q


def _revisions() -> list[str]:
    script = ScriptDirectory.from_config(migrations.alembic_config())
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def test_the_driver_knows_the_revisions_alembic_runs() -> None:
    """schema_version reads the revisions from the file names, without loading Alembic."""
    assert schema_version.revisions() == tuple(_revisions())
    assert schema_version.head() == _revisions()[-1]


@pytest.mark.slow
def test_fresh_install_equals_upgrade_path(any_server: Server) -> None:
    # Databases in the field upgraded through the released revisions: those must be unchanged
    # for a fresh install from today's files to equal them.
    test_released_migrations_are_frozen()
    fresh = any_server.create_database()
    stepped = any_server.create_database()
    try:
        migrations.upgrade(any_server.dsn(fresh), "head")
        # One revision at a time, and at every step a downgrade and upgrade again.
        for rev in _revisions():
            migrations.upgrade(any_server.dsn(stepped), rev)
            migrations.downgrade(any_server.dsn(stepped), "-1")
            migrations.upgrade(any_server.dsn(stepped), rev)
        assert migrations.current(any_server.dsn(stepped)) == migrations.head()
        expected = snapshot(any_server.dsn(fresh))
        assert expected["tables"], "the fresh install created no tables"
        assert snapshot(any_server.dsn(stepped)) == expected
    finally:
        any_server.drop_database(fresh)
        any_server.drop_database(stepped)


def _record_as_released(conn: psycopg.Connection) -> None:
    """How the drivers of revisions 0006 to 0012 recorded the revision at the end of a run (a
    superuser-only setting of the function, which they kept below head)."""
    (revision,) = conn.execute("SELECT version_num FROM kgrag_alembic_version").fetchone()  # type: ignore[misc]
    conn.execute(f"ALTER FUNCTION kgrag.version() SET kgrag.schema_revision = '{revision}'")


def test_a_database_that_ran_the_released_files_converges_on_the_amended(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Databases in the field ran 0005 and 0006 as released (as superuser); upgraded by this driver
    they end where a fresh install from the amended files does."""
    fresh, field = server.create_database(), server.create_database()
    try:
        migrations.upgrade(server.dsn(fresh), "head")
        with monkeypatch.context() as patched:
            patched.setattr(installer, "file_to_run", installer.incremental_file)
            patched.setattr(installer, "_drop_version", _record_as_released)
            patched.setattr(installer, "VERSION_AT_HEAD", "0006")  # no kgrag.version() of this driver's below head
            migrations.upgrade(server.dsn(field), "0008")
        with psycopg.connect(server.dsn(field)) as conn:
            config = conn.execute("SELECT proconfig FROM pg_proc WHERE oid = 'kgrag.version()'::regprocedure")
            assert "kgrag.schema_revision=0008" in config.fetchone()[0]  # the released 0006's setting
        migrations.upgrade(server.dsn(field), "head")
        assert snapshot(server.dsn(field)) == snapshot(server.dsn(fresh))
    finally:
        server.drop_database(fresh)
        server.drop_database(field)


ALIASES_0022 = [  # (entity, alias, doc_id) as revisions before 0023 stored them: a row per document
    ("k:hub", "Hub", "d1"),
    ("k:hub", "Hub", "d2"),
    ("k:hub", "hub-1", "d2"),
    ("k:hub", "Hubby", ""),  # written by hand
    ("k:hub", "Hubby", "d3"),  # and given by a document too
    ("k:leaf", "Leaf", ""),
]


def test_revision_0023_keeps_each_name_once_and_its_sources_apart(empty_dsn: str) -> None:
    """Up: each name once, sourced unless written by hand, the documents in kgrag.alias_source;
    down: the rows as they were."""
    migrations.upgrade(empty_dsn, "0022")
    with psycopg.connect(empty_dsn) as conn:  # the installing superuser: no tenant policy applies
        conn.execute(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) VALUES ('t', 'k:hub', 'Hub', 'k'),"
            " ('t', 'k:leaf', 'Leaf', 'k')"
        )
        for entity, alias, doc in ALIASES_0022:
            conn.execute(
                "INSERT INTO kgrag.alias (tenant_id, entity_id, alias, doc_id) VALUES ('t', %s, %s, %s)",
                [entity, alias, doc],
            )
    migrations.upgrade(empty_dsn, "0023")
    with psycopg.connect(empty_dsn) as conn:
        names = conn.execute("SELECT entity_id, alias, sourced, alias_sq FROM kgrag.alias ORDER BY 1, 2").fetchall()
        assert names == [
            ("k:hub", "Hub", True, "hub"),
            ("k:hub", "Hubby", False, "hubby"),
            ("k:hub", "hub-1", True, "hub1"),
            ("k:leaf", "Leaf", False, "leaf"),
        ]
        sources = conn.execute("SELECT entity_id, alias, doc_id FROM kgrag.alias_source ORDER BY 1, 2, 3").fetchall()
        assert sources == sorted((e, a, d) for e, a, d in ALIASES_0022 if d)
    migrations.downgrade(empty_dsn, "0022")
    with psycopg.connect(empty_dsn) as conn:
        rows = conn.execute("SELECT entity_id, alias, doc_id FROM kgrag.alias ORDER BY 1, 2, 3").fetchall()
        assert rows == sorted(ALIASES_0022)
        assert conn.execute("SELECT to_regclass('kgrag.alias_source')").fetchone() == (None,)


def test_revision_0026_merges_what_the_pending_lists_held(empty_dsn: str) -> None:
    """Names and chunks written at 0025 wait in the GIN indexes' pending lists; 0026 turns the lists
    off and merges them, so no search reads them again; down, the lists are back."""
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        if conn.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'pgstattuple'").fetchone() == (0,):
            pytest.skip("pgstattuple (to read the pending lists) is not available on this server")
        conn.execute("CREATE EXTENSION pgstattuple")
    pending = (
        "SELECT (pgstatginindex('kgrag.chunk_tsv_idx')).pending_pages,"
        " (pgstatginindex('kgrag.alias_trigrams_idx')).pending_pages"
    )
    migrations.upgrade(empty_dsn, "0025")
    with psycopg.connect(empty_dsn) as conn:  # the installing superuser: no tenant policy applies
        conn.execute("INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('t', 'd', 'h')")
        conn.execute(
            "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text, content_hash)"
            " SELECT 't', 'd#' || i, 'd', i, 0, 0, 'note number ' || i || ' about service ' || (i % 7), 'h'"
            " FROM generate_series(0, 199) AS i"
        )
        conn.execute("INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) VALUES ('t', 'k:a', 'A', 'k')")
        conn.execute(
            "INSERT INTO kgrag.alias (tenant_id, entity_id, alias) SELECT 't', 'k:a', 'Alias ' || i"
            " FROM generate_series(0, 199) AS i"
        )
        chunks, names = conn.execute(pending).fetchone()  # type: ignore[misc]
        assert chunks > 0 and names > 0
    migrations.upgrade(empty_dsn, "0026")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute(pending).fetchone() == (0, 0)
    migrations.downgrade(empty_dsn, "0025")
    with psycopg.connect(empty_dsn) as conn:
        options = conn.execute(
            "SELECT count(*) FROM pg_class"
            " WHERE relname IN ('chunk_tsv_idx', 'alias_trigrams_idx') AND reloptions IS NULL"
        ).fetchone()
        assert options == (2,)


def test_revision_0028_drops_the_edge_ranks_and_its_down_ranks_every_tenant_again(empty_dsn: str) -> None:
    """Up: no rank column, the edges and degrees as they were; down: every edge of every tenant
    ranked as revision 0017 defined it (position by weight desc, then dst, then rel in byte order,
    edge_rank_depth + 1 beyond the depth)."""
    migrations.upgrade(empty_dsn, "0027")
    edges = [  # (tenant, src, dst, rel, weight): ties on weight, and the same keys in two tenants
        (t, s, d, r, w)
        for t in ("t", "u")
        for s, d, r, w in (
            ("k:a", "k:b", "CO_OCCURS", 3 if t == "t" else 1),
            ("k:a", "k:c", "CO_OCCURS", 3),
            ("k:a", "k:c", "CALLS", 3),
            ("k:a", "k:d", "CO_OCCURS", 1),
            ("k:a", "k:e", "CO_OCCURS", 2),
            ("k:b", "k:a", "CO_OCCURS", 3),
        )
    ]
    with psycopg.connect(empty_dsn) as conn:  # the installing superuser: no tenant policy applies
        conn.execute("UPDATE kgrag.settings SET value = '2' WHERE tenant_id = '*' AND key = 'edge_rank_depth'")
        conn.execute(
            "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type, degree)"
            " SELECT t, 'k:' || x, x, 'k', 7"
            " FROM unnest(ARRAY['t', 'u']) AS t, unnest(ARRAY['a', 'b', 'c', 'd', 'e']) AS x"
        )
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO kgrag.edge (tenant_id, src, dst, rel, weight, rank) VALUES (%s, %s, %s, %s, %s, 99)", edges
            )
    migrations.upgrade(empty_dsn, "0028")
    with psycopg.connect(empty_dsn) as conn:
        columns = conn.execute("SELECT * FROM kgrag.edge LIMIT 0").description or []
        assert "rank" not in [c.name for c in columns]
        kept = conn.execute("SELECT tenant_id, src, dst, rel, weight FROM kgrag.edge ORDER BY 1, 2, 3, 4").fetchall()
        assert kept == sorted(edges)
        assert conn.execute("SELECT DISTINCT degree FROM kgrag.entity").fetchall() == [(7,)]
    migrations.downgrade(empty_dsn, "0027")
    with psycopg.connect(empty_dsn) as conn:
        ranks = conn.execute(
            "SELECT tenant_id, src, dst, rel, rank FROM kgrag.edge WHERE src = 'k:a' ORDER BY 1, 5, 3, 4"
        ).fetchall()
        assert ranks == [
            ("t", "k:a", "k:b", "CO_OCCURS", 1),
            ("t", "k:a", "k:c", "CALLS", 2),
            ("t", "k:a", "k:c", "CO_OCCURS", 3),
            ("t", "k:a", "k:d", "CO_OCCURS", 3),
            ("t", "k:a", "k:e", "CO_OCCURS", 3),
            ("u", "k:a", "k:c", "CALLS", 1),
            ("u", "k:a", "k:c", "CO_OCCURS", 2),
            ("u", "k:a", "k:b", "CO_OCCURS", 3),
            ("u", "k:a", "k:d", "CO_OCCURS", 3),
            ("u", "k:a", "k:e", "CO_OCCURS", 3),
        ]
        assert conn.execute("SELECT rank FROM kgrag.edge WHERE src = 'k:b'").fetchall() == [(1,), (1,)]
        forced = conn.execute("SELECT relforcerowsecurity FROM pg_class WHERE oid = 'kgrag.edge'::regclass")
        assert forced.fetchone() == (True,)


def test_upgrade_twice_is_a_no_op(empty_dsn: str) -> None:
    migrations.upgrade(empty_dsn, "head")
    before, before_oids = snapshot(empty_dsn), oids(empty_dsn)
    migrations.upgrade(empty_dsn, "head")
    assert snapshot(empty_dsn) == before
    assert oids(empty_dsn) == before_oids, "a second upgrade re-created objects"


def test_downgrade_base_removes_everything_and_upgrade_works_again(empty_dsn: str) -> None:
    migrations.upgrade(empty_dsn, "head")
    installed = snapshot(empty_dsn)
    migrations.downgrade(empty_dsn, "base")
    assert migrations.current(empty_dsn) is None
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("SELECT to_regnamespace('kgrag')").fetchone() == (None,)
        leftovers = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE proname IN ('current_tenant', 'fold', 'setting')"
            " AND pronamespace <> 'pg_catalog'::regnamespace"
        ).fetchone()
        assert leftovers == (0,)
    migrations.upgrade(empty_dsn, "head")
    assert snapshot(empty_dsn) == installed


def test_kgrag_version_is_defined_at_head_alone(empty_dsn: str) -> None:
    """kgrag.version() names the revision at head (sql/idempotent/006_version.sql, recorded with the
    layer); below head it is gone with the layer, the revision is Alembic's, and the driver says so;
    below 0049 the same file makes it, with the revision reached."""
    migrations.upgrade(empty_dsn, "head")
    below = schema_version.revisions()[-2]
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("SELECT kgrag.version()").fetchone() == (migrations.head(),)
        (recorded,) = conn.execute(Q["installer_get_setting"], ["idempotent_objects"]).fetchone()  # type: ignore[misc]
        assert ["FUNCTION", "kgrag.version()"] in recorded
    migrations.downgrade(empty_dsn, below)
    assert migrations.current(empty_dsn) == below
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("SELECT to_regprocedure('kgrag.version()')").fetchone() == (None,)
        with pytest.raises(KgragError, match="below head"):
            schema_version.require_current(conn)
    # below 0049 it stays, for the drivers of those revisions (they re-create it only where it is)
    migrations.downgrade(empty_dsn, "0048")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("SELECT kgrag.version()").fetchone() == ("0048",)
    migrations.upgrade(empty_dsn, "head")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("SELECT kgrag.version()").fetchone() == (migrations.head(),)
        schema_version.require_current(conn)


def test_idempotent_layer_follows_the_files(empty_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A function added to, then removed from sql/idempotent appears, then disappears."""
    migrations.upgrade(empty_dsn, "head")
    extra = tmp_path / "idempotent"
    extra.mkdir()
    for path in installer.idempotent_files():
        (extra / path.name).write_text(path.read_text())
    (extra / "999_extra.sql").write_text(
        "CREATE FUNCTION kgrag.extra_probe() RETURNS int LANGUAGE sql SET search_path FROM CURRENT AS 'SELECT 1';"
    )
    monkeypatch.setattr(installer, "idempotent_files", lambda: sorted(extra.glob("*.sql")))
    migrations.upgrade(empty_dsn, "head")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("SELECT to_regprocedure('kgrag.extra_probe()') IS NOT NULL").fetchone() == (True,)
    (extra / "999_extra.sql").unlink()
    migrations.upgrade(empty_dsn, "head")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("SELECT to_regprocedure('kgrag.extra_probe()') IS NULL").fetchone() == (True,)


def test_released_migrations_are_frozen() -> None:
    """Every released revision (script and SQL) is byte-identical to what was released."""
    frozen = installer.frozen_hashes()
    assert frozen, "FROZEN lists no released file"
    current = {key: path for rev in _revisions() for key, path in installer.revision_files(rev).items()}
    for key, digest in frozen.items():
        assert key in current, f"FROZEN lists {key}, which is missing"
        assert installer.file_sha256(current[key]) == digest, f"{key} was edited after release"


# the first revision a database distributed by kgrag.distribute() can meet as an upgrade
FIRST_ON_CITUS = "0020"


def test_revisions_a_distributed_database_runs_are_one_statement_each() -> None:
    """Citus sends the text of some DDL (CREATE INDEX, ALTER TABLE ... SET) to the workers, and the
    installer runs a revision file as one query: with several statements in it the workers refuse
    it ("cannot insert multiple commands into a prepared statement", found on the real cluster).
    From FIRST_ON_CITUS on, a revision file is one statement: a DO block EXECUTEs several."""
    checked = 0
    for revision in _revisions():
        if revision < FIRST_ON_CITUS:
            continue
        for down in (False, True):
            path = installer.file_to_run(revision, down=down)
            statements = list(pglast.split(path.read_text()))
            assert len(statements) == 1, (path.name, len(statements))
            checked += 1
    assert checked >= 4  # 0020 and 0021, up and down


def test_an_edited_released_file_is_refused(tmp_path: Path) -> None:
    for key, path in installer.revision_files(_revisions()[0]).items():
        edited = tmp_path / path.name
        edited.write_text(path.read_text() + "\n# an edit\n")
        with pytest.raises(KgragError, match="edited after it was released"):
            installer.check_frozen(key, edited)


def test_dimension_is_fixed_at_install(empty_dsn: str) -> None:
    migrations.upgrade(empty_dsn, "head", dim=3072)
    with psycopg.connect(empty_dsn) as conn:
        types = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid IN ('kgrag.chunk'::regclass, 'kgrag.entity'::regclass,"
            " 'kgrag.community_report'::regclass) AND attname = 'embedding'"
        ).fetchall()
        assert types == [("vector(3072)",)] * 3
        codes = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'kgrag.chunk'::regclass AND attname = 'quantized'"
        ).fetchone()
        assert codes == ("bit(3072)",)
        indexdef = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_embedding_bq_idx'").fetchone()
        assert indexdef is not None and "(quantized bit_hamming_ops)" in indexdef[0]
        assert conn.execute("SELECT kgrag.vector_index()").fetchone() == ("bq",)
    with pytest.raises(KgragError, match="installed with embedding dimension 3072"):
        migrations.upgrade(empty_dsn, "head", dim=512)
    migrations.upgrade(empty_dsn, "head")  # no --dim: keeps what is installed


def test_above_4000_dimensions_the_index_is_binary_quantized(empty_dsn: str) -> None:
    """Bit indexes reach 64,000 dimensions: at 4,096 the binary-quantized ones are built, and
    search uses them."""
    migrations.upgrade(empty_dsn, "head", dim=4096)
    with psycopg.connect(empty_dsn) as conn:
        indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%USING hnsw%'")}
        assert indexes == {f"{t}_embedding_bq_idx" for t in ("chunk", "entity", "community_report")}
        assert conn.execute("SELECT kgrag.vector_index()").fetchone() == ("bq",)
        overfetch = conn.execute("SELECT value FROM kgrag.settings WHERE tenant_id = '*' AND key = 'vector_overfetch'")
        assert overfetch.fetchone() == (30,)
        conn.execute("SELECT kgrag.use_tenant('t')")
        q = "[" + ",".join(["0.5"] * 4096) + "]"
        assert conn.execute("SELECT count(*) FROM kgrag.search_chunks_vector(%s::vector, 3)", [q]).fetchone() == (0,)


def test_the_vector_index_is_asked_for_when_0024_runs(empty_dsn: str) -> None:
    """--vector-index halfvec at 512 dimensions: the halfvec indexes and their defaults; asked again
    for bq, refused with the way to change it; a downgrade to 0023 and an upgrade asking for bq
    builds the binary-quantized ones and puts their defaults back."""
    migrations.upgrade(empty_dsn, "head", vector_index="halfvec")
    overfetch = "SELECT value FROM kgrag.settings WHERE tenant_id = '*' AND key = 'vector_overfetch'"
    with psycopg.connect(empty_dsn) as conn:
        indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%USING hnsw%'")}
        assert indexes == {f"{t}_embedding_half_idx" for t in ("chunk", "entity", "community_report")}
        assert conn.execute("SELECT kgrag.vector_index()").fetchone() == ("halfvec",)
        assert conn.execute(overfetch).fetchone() == (4,)
    with pytest.raises(KgragError, match=r"vector index is halfvec .* downgrade 0023"):
        migrations.upgrade(empty_dsn, "head", vector_index="bq")
    migrations.upgrade(empty_dsn, "head")  # nothing asked: keeps what is installed
    migrations.downgrade(empty_dsn, "0023")
    migrations.upgrade(empty_dsn, "head", vector_index="bq")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("SELECT kgrag.vector_index()").fetchone() == ("bq",)
        assert conn.execute("SELECT to_regclass('kgrag.chunk_embedding_bq_idx') IS NOT NULL").fetchone() == (True,)
        assert conn.execute(overfetch).fetchone() == (30,)


def test_a_halfvec_index_above_4000_dimensions_is_refused(empty_dsn: str) -> None:
    with pytest.raises(KgragError, match="halfvec index reaches 4,000 dimensions"):
        migrations.upgrade(empty_dsn, "head", dim=4096, vector_index="halfvec")


def test_alembic_command_line_gives_the_same_schema(server: Server) -> None:
    via_api, via_alembic = server.create_database(), server.create_database()
    try:
        migrations.upgrade(server.dsn(via_api), "head")
        env = {"KGRAG_DSN": server.dsn(via_alembic), "PATH": str(Path(sys.executable).parent)}
        subprocess.run(
            [sys.executable, "-m", "alembic", "upgrade", "head"], cwd=REPO, env=env, check=True, capture_output=True
        )
        assert snapshot(server.dsn(via_alembic)) == snapshot(server.dsn(via_api))
    finally:
        server.drop_database(via_api)
        server.drop_database(via_alembic)


def test_concurrent_upgrades_are_serialized(server: Server) -> None:
    name = server.create_database()
    try:
        dsn = server.dsn(name)
        code = f"from pgkgrag import migrations; migrations.upgrade({dsn!r}, 'head')"
        procs = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE) for _ in range(3)]
        errors = [p.communicate()[1].decode() for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], errors
        assert migrations.current(dsn) == migrations.head()
    finally:
        server.drop_database(name)


def test_revision_0029_indexes_the_documents_languages(empty_dsn: str) -> None:
    """Up: document_lang_idx, which lexical search probes once per language; down: gone."""
    migrations.upgrade(empty_dsn, "0029")
    index = "SELECT indexdef FROM pg_indexes WHERE schemaname = 'kgrag' AND indexname = 'document_lang_idx'"
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute(index).fetchall() == [
            ("CREATE INDEX document_lang_idx ON kgrag.document USING btree (tenant_id, lang)",)
        ]
    migrations.downgrade(empty_dsn, "0028")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute(index).fetchall() == []


def test_views_are_dropped_before_the_views_they_read(admin: psycopg.Connection) -> None:
    """A view made to read a view created after it (a later release does that, and so does an oid
    counter that wrapped around) is still dropped first: the order comes from the dependencies."""
    admin.execute("CREATE VIEW kgrag.ab_reader AS SELECT 1 AS x")
    admin.execute("CREATE VIEW kgrag_private.ab_read AS SELECT 2 AS x")
    admin.execute("CREATE OR REPLACE VIEW kgrag.ab_reader AS SELECT x FROM kgrag_private.ab_read")
    recorded = [
        {"kind": "FUNCTION", "identity": "kgrag.gone_long_ago(text)"},
        {"kind": "VIEW", "identity": "kgrag_private.ab_read"},
        {"kind": "VIEW", "identity": "kgrag.ab_reader"},
        {"kind": "VIEW", "identity": "kgrag.no_such_view"},
    ]
    order = admin.execute(Q["installer_drop_order"], [json.dumps(recorded)]).fetchall()
    assert order == [
        ("VIEW", "kgrag.ab_reader"),
        ("VIEW", "kgrag_private.ab_read"),
        ("FUNCTION", "kgrag.gone_long_ago(text)"),
    ]
    for kind, identity in order[:2]:
        admin.execute(f"DROP {kind} {identity}")  # each in turn, no CASCADE: it succeeds


def test_revision_0034_notes_the_name_key_of_the_people_stored_before(empty_dsn: str) -> None:
    """Up: the sources of people (not of other types) note their name key, every tenant's, so the
    next change of a document of that name resolves it; down: the column goes."""
    migrations.upgrade(empty_dsn, "0033")
    with psycopg.connect(empty_dsn) as conn:  # the installing superuser: no tenant policy applies
        for tenant in ("t", "u"):
            conn.execute(
                "INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES (%s, 'a', 'h'), (%s, 'b', 'h')",
                [tenant, tenant],
            )
            conn.execute(
                "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type) VALUES"
                " (%s, 'person:joao souza', 'João Souza', 'Person'), (%s, 'organization:acme', 'Acme', 'Organization')",
                [tenant, tenant],
            )
            conn.execute(
                "INSERT INTO kgrag.entity_source (tenant_id, entity_id, doc_id, name) VALUES"
                " (%s, 'person:joao souza', 'a', 'João Souza'), (%s, 'person:joao souza', 'b', 'João Souza'),"
                " (%s, 'organization:acme', 'a', 'Acme')",
                [tenant, tenant, tenant],
            )
    migrations.upgrade(empty_dsn, "0034")
    with psycopg.connect(empty_dsn) as conn:
        noted = conn.execute(
            "SELECT tenant_id, entity_id, doc_id, name_key FROM kgrag.entity_source ORDER BY 1, 2, 3"
        ).fetchall()
    assert noted == [
        (tenant, entity, doc, entity if entity.startswith("person:") else None)
        for tenant in ("t", "u")
        for entity, doc in (("organization:acme", "a"), ("person:joao souza", "a"), ("person:joao souza", "b"))
    ]
    migrations.downgrade(empty_dsn, "0033")
    with psycopg.connect(empty_dsn) as conn:
        column = (
            "SELECT count(*) FROM pg_attribute"
            " WHERE attrelid = 'kgrag.entity_source'::regclass AND attname = 'name_key'"
        )
        assert conn.execute(column).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM kgrag.entity_source").fetchone() == (6,)


def test_revision_0036_keeps_every_tenant_on_its_embedder(empty_dsn: str) -> None:
    """Up: the default embedder becomes e5 (384), and every tenant that embedded (relying on the old
    default, use) or recorded an embedder keeps it, with the columns' dimension; one that never
    embedded takes the new default; down: the default is use again, the tenants' own rows stay."""
    migrations.upgrade(empty_dsn, "0035")
    with psycopg.connect(empty_dsn) as conn:  # the installing superuser: no tenant policy applies
        for tenant in ("relied", "recorded", "fresh"):
            conn.execute("INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES (%s, 'a', 'h')", [tenant])
        conn.execute(
            "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text, content_hash,"
            " lang, embedding) VALUES ('relied', 'a#0', 'a', 0, 0, 1, 'x', 'h', 'english', %s::vector)",
            [str([1.0] + [0.0] * 511)],
        )
        conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('recorded', 'embedder', '\"hash\"')")
    migrations.upgrade(empty_dsn, "0036")
    mine = "SELECT tenant_id, key, value #>> '{}' FROM kgrag.settings WHERE key LIKE 'embedder%%' ORDER BY 1, 2"
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute(mine).fetchall() == [
            ("*", "embedder", "e5"),
            ("*", "embedder_dimension", "384"),
            (
                "*",
                "embedder_floors",
                conn.execute("SELECT value #>> '{}' FROM kgrag.settings WHERE key = 'embedder_floors'").fetchone()[0],
            ),  # type: ignore[index]
            ("recorded", "embedder", "hash"),
            ("recorded", "embedder_dimension", "512"),
            ("relied", "embedder", "use"),
            ("relied", "embedder_dimension", "512"),
        ]
    migrations.downgrade(empty_dsn, "0035")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute(mine).fetchall() == [
            ("*", "embedder", "use"),
            ("recorded", "embedder", "hash"),
            ("recorded", "embedder_dimension", "512"),
            ("relied", "embedder", "use"),
            ("relied", "embedder_dimension", "512"),
        ]


def test_revision_0038_codes_each_tenants_vectors_less_its_embedders_centre(empty_dsn: str) -> None:
    """Up: every stored vector gets its code, less e5's centre for the tenants that recorded e5 and
    as it is for the others (use, and a client that recorded nothing), and the bq indexes move to
    the codes; down: the codes go and the indexes are on binary_quantize(embedding) again."""
    migrations.upgrade(empty_dsn, "0037")
    vector = str([0.1 * ((i * 7) % 5 - 2) for i in range(384)] + [0.0] * 128)
    with psycopg.connect(empty_dsn) as conn:  # the installing superuser: no tenant policy applies
        for tenant, embedder in (("e", "e5"), ("u", "use"), ("client", None)):
            conn.execute("INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES (%s, 'a', 'h')", [tenant])
            conn.execute(
                "INSERT INTO kgrag.chunk (tenant_id, chunk_id, doc_id, ordinal, char_start, char_end, text,"
                " content_hash, lang, embedding) VALUES (%s, 'a#0', 'a', 0, 0, 1, 'x', 'h', 'english', %s::vector)",
                [tenant, vector],
            )
            conn.execute(
                "INSERT INTO kgrag.entity (tenant_id, entity_id, name, type, embedding)"
                " VALUES (%s, 'x:a', 'a', 'x', %s::vector), (%s, 'x:b', 'b', 'x', NULL)",
                [tenant, vector, tenant],
            )
            if embedder:
                conn.execute(
                    "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES (%s, 'embedder', to_jsonb(%s::text))",
                    [tenant, embedder],
                )
    migrations.upgrade(empty_dsn, "head")  # 0038, and the functions of head to read the codes with
    codes = (
        "SELECT x.tenant_id, x.code = binary_quantize(x.embedding), x.code = kgrag_private.quantize(x.embedding,"
        " kgrag_private.centre('e5')) FROM (SELECT tenant_id, embedding, quantized AS code FROM kgrag.chunk"
        " UNION ALL SELECT tenant_id, embedding, quantized FROM kgrag.entity) AS x ORDER BY 1, 2 NULLS FIRST"
    )
    with psycopg.connect(empty_dsn) as conn:
        rows = conn.execute(codes).fetchall()
        assert rows == [
            ("client", None, None),
            ("client", True, False),
            ("client", True, False),
            ("e", None, None),
            ("e", False, True),
            ("e", False, True),
            ("u", None, None),
            ("u", True, False),
            ("u", True, False),
        ]
        indexdef = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'entity_embedding_bq_idx'")
        assert "(quantized bit_hamming_ops)" in indexdef.fetchone()[0]  # type: ignore[index]
        with pytest.raises(psycopg.errors.CheckViolation, match="entity_quantized_check"):
            conn.execute("UPDATE kgrag.entity SET embedding = %s::vector WHERE entity_id = 'x:b'", [vector])
    migrations.downgrade(empty_dsn, "0037")
    with psycopg.connect(empty_dsn) as conn:
        gone = "SELECT count(*) FROM pg_attribute WHERE attname = 'quantized' AND NOT attisdropped"
        assert conn.execute(gone).fetchone() == (0,)
        indexdef = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_embedding_bq_idx'")
        assert "binary_quantize(embedding)" in indexdef.fetchone()[0]  # type: ignore[index]
        centres = "SELECT count(*) FROM kgrag.settings WHERE key = 'embedder_centres'"
        assert conn.execute(centres).fetchone() == (0,)


def test_revision_0044_down_forgets_every_audience_graph_and_set_access_applies_it_again(
    empty_dsn: str, tmp_path: Path
) -> None:
    """Down: no row of an audience's graph is left in any tenant (it would be everyone's under the
    policies before 0044); up again, a document for an audience stored meanwhile gives no graph
    until kgrag.set_access names it with its own groups, which applies it again: the same rows (but
    the entities' vectors, which the next build writes)."""
    from ingesting import checksums, ingest

    from pgkgrag.db.connections import connect

    migrations.upgrade(empty_dsn, "head")
    doc = {
        "doc_id": "hr-1",
        "text": "Marta Quillfeather reviews the Auth Service.",
        "entities": [{"name": "Marta Quillfeather", "type": "Person"}, {"name": "Auth Service", "type": "Service"}],
        "relations": [{"source": "Marta Quillfeather", "target": "Auth Service", "type": "REVIEWS"}],
        "access": ["hr"],
    }
    tables = ("entity", "alias", "alias_source", "entity_source", "mention", "edge", "relation_evidence")
    marked = " + ".join(f"(SELECT count(*) FROM kgrag.{t} WHERE strpos(ROW({t}.*)::text, '~') > 0)" for t in tables)
    with connect(empty_dsn) as conn:  # the installing superuser: every group
        for tenant in ("t", "u"):
            assert ingest(conn, tmp_path, [doc], tenant=tenant).ok
        # (the entities' vectors are the driver's: embedded at ingest, or by the next build)
        before = checksums(conn, "t", leave_out=("embedding", "quantized"))
        assert conn.execute(f"SELECT {marked}").fetchone()[0] > 0  # type: ignore[index]
    migrations.downgrade(empty_dsn, "0043")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute(f"SELECT {marked}").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM kgrag.document WHERE extraction IS NOT NULL").fetchone() == (2,)
    migrations.upgrade(empty_dsn, "head")
    with connect(empty_dsn) as conn:
        conn.execute("SELECT kgrag.use_tenant('t')")
        # the statement docs/upgrading.md gives (read from it), every audience of the tenant at once
        guide = (REPO / "docs" / "upgrading.md").read_text()
        upgrade = next(line for line in guide.splitlines() if "kgrag.set_access(array_agg" in line).strip().rstrip(";")
        assert [r[0]["moved"] for r in conn.execute(upgrade)] == [1]
        conn.commit()
        assert checksums(conn, "t", leave_out=("embedding", "quantized")) == before
        conn.execute("SELECT kgrag.use_tenant('t')")  # applied once: named again, nothing moves
        assert conn.execute("SELECT kgrag.set_access('{hr-1}', '{hr}')").fetchone()[0]["moved"] == 0  # type: ignore[index]


def test_revision_0045_sets_aside_the_vectors_of_reports_longer_than_their_new_head(
    empty_dsn: str, tmp_path: Path
) -> None:
    """Up to 0045: the vectors of the reports longer than 1,000 characters (made of up to 4,000) are
    set aside in every tenant, the others kept; the next build makes them again. Down: the setting's
    description as before."""
    from ingesting import OPS, ingest

    from pgkgrag.db.connections import connect, tenant_transaction
    from pgkgrag.embed.embedders import HashEmbedder
    from pgkgrag.graph.build import build

    migrations.upgrade(empty_dsn, "head")
    counts = (
        "SELECT count(*) FILTER (WHERE length(report) > 1000), count(*) FILTER (WHERE length(report) <= 1000),"
        " count(*) FILTER (WHERE embedding IS NULL AND length(report) > 1000),"
        " count(*) FILTER (WHERE embedding IS NULL AND length(report) <= 1000)"
        " FROM kgrag.community_report WHERE tenant_id = %s"
    )
    with connect(empty_dsn) as conn:
        for tenant in ("t", "u"):
            assert ingest(conn, tmp_path, OPS, tenant=tenant).ok
            build(conn, tenant, HashEmbedder(512))
            with tenant_transaction(conn, tenant):  # one report made long, as a big community's is
                conn.execute(
                    "UPDATE kgrag.community_report SET report = report || repeat(' filler', 200)"
                    " WHERE tenant_id = %s AND community_id = (SELECT min(community_id) FROM kgrag.community_report"
                    " WHERE tenant_id = %s)",
                    [tenant, tenant],
                )
    migrations.downgrade(empty_dsn, "0044")  # (its vector as a build before 0045 left it)
    migrations.upgrade(empty_dsn, "head")
    with connect(empty_dsn) as conn:
        for tenant in ("t", "u"):
            with tenant_transaction(conn, tenant):
                long, short, long_unset, short_unset = conn.execute(counts, [tenant]).fetchone()  # type: ignore[misc]
            assert long == long_unset >= 1 and short > 0 and short_unset == 0, tenant
            assert build(conn, tenant, HashEmbedder(512)).report_embeddings == long
    with psycopg.connect(empty_dsn) as conn:
        described = "SELECT description FROM kgrag.settings WHERE tenant_id = '*' AND key = 'community_max_size'"
        assert "or more" in conn.execute(described).fetchone()[0]  # type: ignore[index]
    migrations.downgrade(empty_dsn, "0044")
    with psycopg.connect(empty_dsn) as conn:
        assert "larger than" in conn.execute(described).fetchone()[0]  # type: ignore[index]

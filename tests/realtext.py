"""Real English text available on every machine: the docstrings of the standard library,
split into paragraphs. Deterministic for a given Python version."""

from __future__ import annotations

import importlib
import inspect
import re
import warnings

_MODULES = [
    "argparse",
    "asyncio",
    "collections",
    "concurrent.futures",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email",
    "enum",
    "fractions",
    "ftplib",
    "functools",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "http.client",
    "http.server",
    "imaplib",
    "inspect",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "mailbox",
    "mimetypes",
    "multiprocessing",
    "os",
    "pathlib",
    "pickle",
    "pprint",
    "queue",
    "random",
    "re",
    "sched",
    "secrets",
    "shutil",
    "smtplib",
    "socket",
    "sqlite3",
    "ssl",
    "statistics",
    "string",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "tokenize",
    "trace",
    "typing",
    "unittest",
    "urllib.parse",
    "urllib.request",
    "uuid",
    "warnings",
    "wave",
    "xml.dom.minidom",
    "zipfile",
    "zoneinfo",
    "ast",
    "base64",
    "bisect",
    "calendar",
    "cmd",
    "codecs",
    "configparser",
    "copy",
    "dis",
    "doctest",
    "filecmp",
    "fnmatch",
    "gettext",
    "glob",
    "html.parser",
    "io",
    "locale",
    "lzma",
    "math",
    "numbers",
    "operator",
    "optparse",
    "pdb",
    "platform",
    "plistlib",
    "poplib",
    "pydoc",
    "selectors",
    "shelve",
    "shlex",
    "signal",
    "socketserver",
    "struct",
    "symtable",
    "sysconfig",
    "timeit",
    "types",
    "weakref",
    "xml.etree.ElementTree",
    "zlib",
    "tracemalloc",
    "traceback",
    "unittest.mock",
    "imaplib",
    "nntplib",
    "cgi",
    "mailcap",
    "pstats",
    "cProfile",
    "codeop",
    "runpy",
]


def paragraphs(limit: int) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some of these modules and members are deprecated
        return _paragraphs(limit)


def _paragraphs(limit: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for name in _MODULES:
        module = importlib.import_module(name)
        objects = [module, *(obj for _, obj in sorted(inspect.getmembers(module), key=lambda m: m[0]))]
        for obj in objects:
            doc = inspect.getdoc(obj) if inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj) else None
            for para in re.split(r"\n\s*\n", doc or ""):
                text = " ".join(para.split())
                if 60 <= len(text) <= 600 and text not in seen and not text.startswith((">>>", "|")):
                    seen.add(text)
                    out.append(text)
                    if len(out) == limit:
                        return out
    return out

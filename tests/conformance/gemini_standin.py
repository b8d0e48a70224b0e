"""A local stand-in for the Gemini API (`GOOGLE_GEMINI_BASE_URL`) that Gemini CLI 0.61.0 talks to
offline with a dummy `GEMINI_API_KEY`. Unlike `--fake-responses` (recorded turns, harness.py), it
sees every request the CLI sends its model: the functions declared and the whole conversation,
tool results included.

The main model's turn (a request that declares functions) calls each function of `chain` in turn,
one per request and only once the CLI declares it, then says "Done."; other requests (the CLI's
router classifier, token counts) get an empty answer, which the CLI survives (it falls back to its
default model).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class GeminiStandIn:
    """Answers `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (one SSE chunk) and
    `:generateContent` (JSON); `requests` holds (path, body) of every request, in order."""

    def __init__(self, chain: Sequence[tuple[str, dict[str, Any]]]) -> None:
        self.chain = list(chain)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="gemini-stand-in", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> GeminiStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def model_requests(self) -> list[dict[str, Any]]:
        """The main model's requests (those that declare functions), in order."""
        return [body for _, body in self.requests if declared(body)]

    def parts(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        step = len(function_responses(request))  # calls answered so far
        if step < len(self.chain) and self.chain[step][0] in declared(request):
            name, arguments = self.chain[step]
            return [{"functionCall": {"name": name, "args": arguments}}]
        return [{"text": "Done."}]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                request = json.loads(body or b"{}")
                stand_in.requests.append((self.path, request))
                if ":countTokens" in self.path:
                    self._json({"totalTokens": 10})
                    return
                parts = stand_in.parts(request) if declared(request) else [{"text": "{}"}]
                answer = {
                    "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                }
                if "streamGenerateContent" not in self.path:
                    self._json(answer)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                self.wfile.write(f"data: {json.dumps(answer)}\r\n\r\n".encode())
                self.wfile.flush()

            def do_GET(self) -> None:
                self._json({})

            def _json(self, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def declared(request: dict[str, Any]) -> list[str]:
    """The function names a model request declares."""
    return [f.get("name", "") for tool in request.get("tools") or [] for f in tool.get("functionDeclarations") or []]


def function_responses(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results (`functionResponse` parts) in a model request's conversation."""
    return [
        part["functionResponse"]
        for content in request.get("contents") or []
        for part in content.get("parts") or []
        if isinstance(part, dict) and "functionResponse" in part
    ]

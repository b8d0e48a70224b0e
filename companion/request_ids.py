"""JSON-RPC request ids the server can answer: invalid ones refused, duplicates in flight refused.

The MCP SDK (2.3.0) answers a request whose `id` is an object, an array, `true`, `null` or a
number that is not an integer (`1.5`, `1e400`) with HTTP 202 and never replies: the client waits
forever. And it routes replies by id, so two concurrent requests of one session that share an id
collide, and so do 5 and "5" (it keys them by `str(id)`): some wait until their timeout, one gets
HTTP 500 (measured: 20 concurrent requests with id 7 gave 13 timeouts after 40 s, 6 answers and
one 500). JSON-RPC 2.0 and MCP require a string or
integer id, unique among a session's requests in progress; this middleware enforces both with a
JSON-RPC error, before the SDK sees the request.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from .security import Message, Receive, Scope, Send, header, send_json

INVALID_REQUEST = -32600

log = logging.getLogger("gemini_companion")


class RequestIds:
    def __init__(self, app: Any, max_body: int) -> None:
        self.app = app
        self.max_body = max_body
        self._in_flight: set[tuple[str, str]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, complete = await _read_body(receive, self.max_body)
        if body is None:
            log.debug("a client hung up while sending a request; nothing was done with it")
            return
        if not complete:
            await _reply(send, 413, None, f"Request body too large: the limit is {self.max_body} bytes.")
            return
        session = header(scope, b"mcp-session-id")
        keys: list[tuple[str, str]] = []
        for request_id in _request_ids(body):
            if not _valid(request_id):
                await _reply(
                    send, 400, None, "Invalid Request: a request id must be a string or an integer; send a new request."
                )
                return
            if session is None:
                continue  # an initialize: it starts a session of its own, where no id is in flight yet
            # The SDK routes replies by `str(id)`: 5 and "5" are the same request to it.
            key = (session, str(request_id))
            if key in self._in_flight or key in keys:
                await _reply(
                    send,
                    409,
                    request_id,
                    f"Invalid Request: a request with id {request_id!r} is still in progress in this session; "
                    "use a new id for each request.",
                )
                return
            keys.append(key)
        self._in_flight.update(keys)
        try:
            await self.app(scope, _replay(body, receive), send)
        finally:
            self._in_flight.difference_update(keys)


def _request_ids(body: bytes) -> list[Any]:
    """The `id` of every request (a message with a method and an id) in the body; [] when the body
    is not JSON (the SDK answers that with its parse error)."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse: the SDK answers
        return []
    messages = parsed if isinstance(parsed, list) else [parsed]
    return [m["id"] for m in messages if isinstance(m, dict) and "method" in m and "id" in m]


def _valid(request_id: Any) -> bool:
    return isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))


async def _read_body(receive: Receive, limit: int) -> tuple[bytes | None, bool]:
    """(the whole body, True); (b"", False) once it grows past `limit`; (None, False) when the
    client hung up before sending all of it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None, False
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", False
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # afterwards: the disconnect, when it comes

    return replayed


async def _reply(send: Send, status: int, request_id: Any, message: str) -> None:
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": INVALID_REQUEST, "message": message}}
    await send_json(send, status, error, [])

"""JSON-RPC messages the server can answer, on every transport: what is not one refused, invalid
ids refused, duplicate ids in flight refused.

The MCP SDK (2.3.0) reads a message whose `id` is an object, an array, `true`, `null` or a number
that is not an integer (`1.5`, `1e400`) as a notification and never replies: the client waits
forever (HTTP answers 202; the WebSocket answers nothing, nor to a batch, `null` or text that is
not JSON). And it routes replies by id, so two concurrent requests of one session that share an id
collide, and so do 5 and "5" (it keys them by `str(id)`): some wait until their timeout, one gets
HTTP 500 (measured: 20 concurrent requests with id 7 gave 13 timeouts after 40 s, 6 answers and
one 500). JSON-RPC 2.0 and MCP require a string or integer id, unique among a session's requests
in progress. `request_id` holds those rules for both transports; `RequestIds` applies them to
Streamable HTTP (before the SDK sees the request) and `websocket.py` to each WebSocket message.

Both read a message with pydantic-core's JSON parser, the one the SDK parses with, so they read
what the SDK reads: the last of duplicate members, members of the top-level object only. HTTP
bodies are parsed again by the SDK, so `head` reads only `id` and `method`: the parser skips every
other value without building it (an 8 MiB openDiff costs no copy of its content here).
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
import pydantic
import pydantic_core
from typing_extensions import NotRequired, TypedDict

from .security import Message, Receive, Scope, Send, header, send_json

log = logging.getLogger("gemini_companion")


class Refused(Exception):
    """A message no transport may pass on; `error` is the JSON-RPC answer, `status` its HTTP status."""

    def __init__(self, code: int, message: str, request_id: types.RequestId | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.status = status
        self.error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


class _Head(TypedDict):
    id: NotRequired[Any]
    method: NotRequired[Any]


_HEAD = pydantic.TypeAdapter(_Head)  # unknown members are ignored: skipped by the parser, never built


def head(raw: bytes | str) -> dict[str, Any]:
    """The top-level `id` and `method` of a message, as the SDK's parser reads them; the rest of the
    message is only checked to be JSON."""
    try:
        return dict(_HEAD.validate_json(raw))
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] == "json_invalid":
            raise _parse_error(first["msg"]) from None
        raise _not_an_object(raw.lstrip()[:1] in (b"[", "[")) from None


def read_message(raw: bytes | str) -> types.JSONRPCMessage:
    """One message, parsed once (as the SDK's Streamable HTTP transport parses a body) and checked
    by the same rules as `head`."""
    try:
        parsed = pydantic_core.from_json(raw)
    except ValueError as exc:
        raise _parse_error(str(exc)) from None
    found = request_id(parsed)
    try:
        return types.jsonrpc_message_adapter.validate_python(parsed, by_name=False)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "message"
        raise Refused(
            types.INVALID_REQUEST,
            f"Invalid Request: not a JSON-RPC 2.0 message ({where}: {first['msg']}); send a request "
            '({"jsonrpc": "2.0", "id": …, "method": …}), a notification (no id) or a response.',
            found,
        ) from None


def request_id(message: Any) -> types.RequestId | None:
    """The id of a request (a message with a `method` and an `id`); None for a notification or a
    response. Raises Refused for what is not a JSON-RPC message object or has an invalid id."""
    if not isinstance(message, dict):
        raise _not_an_object(isinstance(message, list))
    if "method" not in message or "id" not in message:
        return None
    found = message["id"]
    if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
        return found
    raise Refused(
        types.INVALID_REQUEST, "Invalid Request: a request id must be a string or an integer; send a new request."
    )


class InFlight:
    """The ids of requests in progress, per session: a second request with one of them is refused."""

    def __init__(self) -> None:
        self._keys: set[tuple[str, str]] = set()

    def claim(self, session: str, found: types.RequestId) -> None:
        if _key(session, found) in self._keys:
            raise Refused(
                types.INVALID_REQUEST,
                f"Invalid Request: a request with id {found!r} is still in progress in this session; "
                "use a new id for each request.",
                found,
                status=409,
            )
        self._keys.add(_key(session, found))

    def release(self, session: str, found: types.RequestId) -> None:
        self._keys.discard(_key(session, found))


def _key(session: str, found: types.RequestId) -> tuple[str, str]:
    return session, str(found)  # the SDK routes replies by `str(id)`: 5 and "5" are the same request to it


def _parse_error(detail: str) -> Refused:
    return Refused(
        types.PARSE_ERROR, f"Parse error: the message is not JSON ({detail}); send one JSON-RPC message as JSON."
    )


def _not_an_object(batch: bool) -> Refused:
    if batch:
        return Refused(types.INVALID_REQUEST, "Invalid Request: batches are not supported; send each message alone.")
    return Refused(
        types.INVALID_REQUEST,
        'Invalid Request: a JSON-RPC message is a JSON object; send {"jsonrpc": "2.0", "id": …, "method": …}.',
    )


class RequestIds:
    """The rules on Streamable HTTP: each POST body is checked before the SDK sees it."""

    def __init__(self, app: Any, max_body: int) -> None:
        self.app = app
        self.max_body = max_body
        self._in_flight = InFlight()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, complete = await _read_body(receive, self.max_body)
        if body is None:
            log.debug("a client hung up while sending a request; nothing was done with it")
            return
        if not complete:
            limit = f"Request body too large: the limit is {self.max_body} bytes."
            await _reply(send, Refused(types.INVALID_REQUEST, limit, status=413))
            return
        session = header(scope, b"mcp-session-id")
        try:
            found = request_id(head(body))
            # Without a session it is an initialize, which starts a session where no id is in flight yet.
            if found is not None and session is not None:
                self._in_flight.claim(session, found)
        except Refused as refused:
            await _reply(send, refused)
            return
        try:
            await self.app(scope, _replay(body, receive), send)
        finally:
            if found is not None and session is not None:
                self._in_flight.release(session, found)


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


async def _reply(send: Send, refused: Refused) -> None:
    await send_json(send, refused.status, refused.error.model_dump(mode="json", by_alias=True, exclude_unset=True), [])

"""The request guard in front of every window server (pure ASGI, so streams pass untouched).

Checks, in this order, for every request: the path is `/mcp`; no `Origin` header (browsers send
one, Gemini CLI and other local agents do not: a web page must never reach the server); the `Host`
is exactly `127.0.0.1:<port>` or `localhost:<port>`, byte for byte (defeats DNS rebinding); the bearer token
matches (constant-time): the window's, or a live chat's own (chat_tokens.py); a declared body is
not larger than the cap. The token never appears in a response or a log line.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MCP_PATH = "/mcp"
# An 8 MB file can double when JSON-escaped (newlines, quotes, backslashes); leave room for that.
MAX_BODY_BYTES = 32 * 1024 * 1024


def new_token() -> str:
    """256 bits from the OS's CSPRNG, URL-safe so it survives headers and env vars unchanged."""
    return secrets.token_urlsafe(32)


# Set in the scope of a request that carried a chat's own token (chat_tokens.py): the room offers
# such a client the workspace tools only, never Gemini CLI's diff tools or notifications.
CHAT_SCOPE_KEY = "gemini_companion.chat"


def from_chat(request: object) -> bool:
    """Did this request (a Starlette request, or None) carry a chat's own token? The guard marked it."""
    scope = getattr(request, "scope", None)
    return isinstance(scope, dict) and bool(scope.get(CHAT_SCOPE_KEY))


UNAUTHENTICATED = (401, 403, 404)  # refusals before the token was accepted


class RequestGuard:
    def __init__(
        self,
        app: ASGIApp | None,
        token: str,
        port: int,
        max_body: int = MAX_BODY_BYTES,
        websocket: ASGIApp | None = None,
        chat_tokens: Callable[[bytes], bool] | None = None,
    ) -> None:
        self.app = app  # the HTTP room at /mcp; None: no room is mounted there (refused like any unknown path)
        self.websocket = websocket  # Claude Code's endpoint, which checks its own token
        self._expected = f"Bearer {token}".encode("latin-1")
        self._hosts = loopback_hosts(port)
        self._max_body = max_body
        self._chat_tokens = chat_tokens  # is this Authorization a live chat's own token (ChatTokens.accepts)?

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            # lifespan passes through; a WebSocket goes to Claude Code's side when it is on.
            if scope["type"] == "lifespan" and self.app is not None:
                await self.app(scope, receive, send)
            elif scope["type"] == "websocket" and self.websocket is not None:
                await self.websocket(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            status, message, extra = refusal
            if status in UNAUTHENTICATED:
                # Closed after the answer: a client without the token (or the wrong Host, a web page)
                # keeps no connection. A client with the token keeps its connection (a 413 included).
                extra = [*extra, (b"connection", b"close")]
            await send_json(send, status, {"error": message}, extra)
            return
        assert self.app is not None  # without it, _refusal refuses every path
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope, authorization: bytes) -> bool:
        window = hmac.compare_digest(authorization, self._expected)
        chat = self._chat_tokens is not None and self._chat_tokens(authorization)
        if chat and not window:
            scope[CHAT_SCOPE_KEY] = True
        return window or chat

    def _refusal(self, scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        if self.app is None:
            return 404, "Not found: this window serves no MCP endpoint (Gemini CLI and its tools are off).", []
        if scope.get("path") != MCP_PATH:
            return 404, "Not found: the only endpoint is /mcp.", []
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        origins = header_values(headers, b"origin")
        if origins:
            return 403, "Request denied: requests from web pages (with an Origin header) are not accepted.", []
        hosts = header_values(headers, b"host")
        if len(hosts) != 1 or hosts[0] not in self._hosts:
            return 403, "Invalid Host header: connect to 127.0.0.1 on this server's port.", []
        auth = header_values(headers, b"authorization")
        if len(auth) != 1 or not self._authorized(scope, auth[0]):
            challenge = [(b"www-authenticate", b'Bearer realm="gemini-companion"')]
            return 401, "Unauthorized: send the authToken from the discovery file as a Bearer token.", challenge
        lengths = header_values(headers, b"content-length")
        if len(lengths) > 1:
            return 400, "Bad request: more than one Content-Length header.", []
        if lengths:
            try:
                length = int(lengths[0])
            except ValueError:
                return 400, "Bad request: Content-Length is not a number.", []
            if length > self._max_body:
                return 413, f"Request body too large: the limit is {self._max_body} bytes.", []
        return None


def loopback_hosts(port: int) -> set[bytes]:
    """The only `Host` values a request may carry: anything else is DNS rebinding."""
    return {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}


def header_values(headers: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    return [value for key, value in headers if key.lower() == name]


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header `name` (lower case) in an ASGI scope, or None."""
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def send_json(
    send: Send, status: int, body: dict[str, Any], extra: list[tuple[bytes, bytes]], kind: str = "http"
) -> None:
    """An HTTP JSON answer; `kind="websocket"` answers a WebSocket upgrade instead of accepting it."""
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *extra]
    prefix = "websocket.http" if kind == "websocket" else "http"
    await send({"type": f"{prefix}.response.start", "status": status, "headers": headers})
    await send({"type": f"{prefix}.response.body", "body": data})

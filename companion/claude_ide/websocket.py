"""MCP over a WebSocket, for Claude Code: the handshake guard and the bridge to the SDK's streams.

uvicorn (wsproto) does the framing, the size cap and the close handshake; the `mcp` SDK parses and
serialises every JSON-RPC message (`jsonrpc_message_adapter`, `model_dump_json`); this module only
moves one message per text frame between them, answering itself what `request_ids` refuses (not
JSON, not a message object, an invalid id, an id already in flight on this connection). The guard
refuses, before the upgrade, what the HTTP side refuses: a wrong path, any `Origin` (a web page),
a `Host` other than 127.0.0.1 or localhost on our port, a missing or wrong token (compared in
constant time), and a client that does not offer the `mcp` subprotocol.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from ..core.server.request_ids import InFlight, Refused, read_message
from ..core.server.security import Receive, Scope, Send, header_values, loopback_hosts, send_json
from .protocol import AUTH_HEADER, SUBPROTOCOL, WEBSOCKET_PATH

log = logging.getLogger("gemini_companion")

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]
Serve = Callable[[ReadStream, WriteStream], Awaitable[None]]
ONE_SESSION = ""  # a WebSocket is one MCP session: its request ids are unique within the connection
OUTBOX_LIMIT = 256  # notifications queued for one slow client before the oldest are dropped
# How long after our reply to its tools/list a client counts as listening (see `Connection`).
# Measured with the real client (2.1.331) on this project's loaded 2-core machine: it subscribed
# from 20 ms to over 380 ms after that reply; coder/claudecode.nvim waits 600 ms after a connection
# before it sends a queued mention (its `connection_wait_delay`).
LISTEN_DELAY_S = 1.0


def refusal(scope: Scope, token: str, port: int) -> tuple[int, str] | None:
    """Why this upgrade request must be refused (status, message), or None to accept it."""
    if scope.get("path") != WEBSOCKET_PATH:
        return 404, "Not found: Claude Code's endpoint is ws://127.0.0.1:<port>/."
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    if header_values(headers, b"origin"):
        return 403, "Request denied: connections from web pages (with an Origin header) are not accepted."
    hosts = header_values(headers, b"host")
    if len(hosts) != 1 or hosts[0] not in loopback_hosts(port):
        return 403, "Invalid Host header: connect to 127.0.0.1 on this server's port."
    tokens = header_values(headers, AUTH_HEADER)
    if len(tokens) != 1 or not hmac.compare_digest(tokens[0], token.encode("latin-1")):
        return 401, "Unauthorized: send the authToken from the lock file as X-Claude-Code-Ide-Authorization."
    if SUBPROTOCOL not in scope.get("subprotocols", []):
        return 400, f"Bad request: offer the {SUBPROTOCOL!r} WebSocket subprotocol."
    return None


async def refuse(send: Send, status: int, message: str) -> None:
    """Answer the upgrade request with an HTTP error; no WebSocket is opened."""
    await send_json(send, status, {"error": message}, [], kind="websocket")


@dataclass(eq=False)
class Connection:
    """One accepted WebSocket: what the client said at the handshake, and its notification outbox.

    Claude Code drops a notification that comes before it subscribes to it, and it subscribes late:
    its prompt registers `at_mentioned` and `selection_changed` only once our server is in its list
    of connected servers (after it has listed our tools) and its prompt has rendered again, while
    it is still starting. No message says when that is done, and its answers to pings do not tell
    either (measured: a mention sent after two answered pings was still lost). So the outbox stays
    closed until `LISTEN_DELAY_S` after our reply to its tools/list; what is queued meanwhile (a
    mention sent as it starts, the selection at the handshake) leaves then, in order.
    """

    client_name: str = "client"
    on_ready: Callable[[], None] | None = None  # called once the client has finished the handshake
    initialized: anyio.Event = field(default_factory=anyio.Event)
    listed: anyio.Event = field(default_factory=anyio.Event)  # our reply to its tools/list has gone out
    outbox: list[SessionMessage] = field(default_factory=list)
    _wake: anyio.Event = field(default_factory=anyio.Event)
    _listing: types.RequestId | None = None  # the id of the client's latest tools/list

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Queue a notification; it leaves once the client listens, after anything queued before."""
        if len(self.outbox) >= OUTBOX_LIMIT:
            del self.outbox[0]  # a client that reads nothing keeps the newest state, not a backlog
        self.outbox.append(SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method=method, params=params)))
        self._wake.set()

    def observe(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest) and message.method == "initialize":
            info = (message.params or {}).get("clientInfo")
            if isinstance(info, dict) and isinstance(info.get("name"), str):
                self.client_name = info["name"][:100]
        elif isinstance(message, types.JSONRPCRequest) and message.method == "tools/list":
            self._listing = message.id
        elif self._finishes_handshake(message):
            self.initialized.set()
            if self.on_ready is not None:
                self.on_ready()

    def _finishes_handshake(self, message: types.JSONRPCMessage) -> bool:
        initialized = isinstance(message, types.JSONRPCNotification) and message.method == "notifications/initialized"
        return initialized and not self.initialized.is_set()

    def sent(self, message: types.JSONRPCMessage) -> None:
        """`message` has gone out; the reply to the client's tools/list starts `LISTEN_DELAY_S`."""
        replies = isinstance(message, types.JSONRPCResponse | types.JSONRPCError)
        if replies and self._listing is not None and message.id == self._listing:
            self.listed.set()


def _settled(in_flight: InFlight, found: types.RequestId | None) -> ServerMessageMetadata | None:
    """For a request: frees its id if the SDK settles it without an answer (the client cancelled it)."""
    if found is None:
        return None

    async def release() -> None:
        in_flight.release(ONE_SESSION, found)

    return ServerMessageMetadata(on_request_unanswered=release)


async def serve_connection(connection: Connection, receive: Receive, send: Send, serve: Serve) -> None:
    """Accept the upgrade, then run `serve(read, write)` (an MCP server) until either side ends."""
    if (await receive())["type"] != "websocket.connect":  # ASGI's first event; anything else: gone already
        return
    await send({"type": "websocket.accept", "subprotocol": SUBPROTOCOL})
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    lock = anyio.Lock()  # replies and notifications share the socket: one frame at a time
    in_flight = InFlight()

    async def send_text(message: SessionMessage) -> None:
        text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
        async with lock:
            await send({"type": "websocket.send", "text": text})

    async def read_frames() -> None:
        async with read_writer:
            while True:
                event = await receive()
                if event["type"] != "websocket.receive":
                    return  # websocket.disconnect: the client went away
                data = event.get("text")
                if data is None:
                    data = (event.get("bytes") or b"").decode("utf-8", "replace")
                try:  # the SDK would read a bad id as a notification, and answer nothing it cannot parse
                    message = read_message(data)
                    found = message.id if isinstance(message, types.JSONRPCRequest) else None
                    if found is not None:
                        in_flight.claim(ONE_SESSION, found)
                except Refused as refused:  # answered here; the connection goes on serving
                    await send_text(SessionMessage(refused.error))
                    continue
                connection.observe(message)
                await read_writer.send(SessionMessage(message, metadata=_settled(in_flight, found)))

    async def write_replies() -> None:
        async with write_reader:
            async for message in write_reader:
                reply = message.message
                if isinstance(reply, types.JSONRPCResponse | types.JSONRPCError) and reply.id is not None:
                    in_flight.release(ONE_SESSION, reply.id)  # before it leaves: the client may reuse the id at once
                await send_text(message)
                connection.sent(reply)

    async def write_notifications() -> None:
        await connection.initialized.wait()
        await connection.listed.wait()
        await anyio.sleep(LISTEN_DELAY_S)
        while True:
            while connection.outbox:
                await send_text(connection.outbox.pop(0))
            connection._wake = anyio.Event()
            if not connection.outbox:
                await connection._wake.wait()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read_frames)
            group.start_soon(write_replies)
            group.start_soon(write_notifications)
            await serve(read_stream, write_stream)
            group.cancel_scope.cancel()
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:  # a client that vanished mid-send: nothing to answer any more
        log.debug("a Claude Code connection ended with %r", exc)

"""Issue #24 at the connection level of Claude Code's WebSocket: handshakes wsproto cannot decode
(each one used to leak one of the 256 connection slots and log a traceback, so ~256 of them took
the window down), upgrade requests while Claude's side is off, and an authenticated client that
never reads what it is sent."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time

import psutil
import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Message, Request

from companion.core.server import connections, ws_protocol
from companion.runtime import Runtime, WindowHandle
from tests.claude_client import INITIALIZE, ClaudeClient
from tests.hostile.test_connections import initialize
from tests.scripted_editor import ScriptedEditor
from tests.window_fixtures import claude_runtime, claude_window, discovery_dir, editor, lock_dir, workspace

__all__ = ["claude_runtime", "claude_window", "discovery_dir", "editor", "lock_dir", "workspace"]  # fixtures

REQUESTS = 300  # more than the 256 connection slots
KEY = b"Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\nSec-WebSocket-Version: 13\r\n"
UNDECODABLE = {
    "host": b"Host: \xff\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n",
    "subprotocol": b"Host: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: \xe9\r\n",
    "connection": b"Host: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade, \xff\r\n",
    "extensions": b"Host: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Extensions: \xff\r\n",
    "idna host": b"Host: xn--\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n",
}


def exchange(port: int, request: bytes) -> bytes:
    """One connection: send the request, read until the server closes it."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    return answer


def hostile_upgrade(port: int, name: str) -> bytes:
    head = UNDECODABLE[name].replace(b"{host}", f"127.0.0.1:{port}".encode())
    return b"GET / HTTP/1.1\r\n" + head + KEY + b"\r\n"


def assert_claude_and_gemini_are_served(window: WindowHandle) -> None:
    assert initialize(window.port, window.token) == 200

    async def claude() -> None:
        client = await ClaudeClient.connect(window.port, window.claude_token)
        try:
            assert (await client.request("tools/list", {}))["result"]["tools"]
        finally:
            await client.close()

    asyncio.run(asyncio.wait_for(claude(), 30))


def lines(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def assert_log_bounded(caplog: pytest.LogCaptureFixture, text: str) -> None:
    assert len(lines(caplog, text)) <= 1, lines(caplog, text)
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert sum(len(r.getMessage()) for r in caplog.records) < 20_000


@pytest.mark.parametrize("name", list(UNDECODABLE))
def test_undecodable_handshakes_are_refused_with_400_and_leave_no_slot_taken(
    claude_window: WindowHandle, caplog: pytest.LogCaptureFixture, name: str
) -> None:
    request = hostile_upgrade(claude_window.port, name)
    with caplog.at_level(logging.INFO):
        answers = [exchange(claude_window.port, request) for _ in range(REQUESTS)]
        assert_claude_and_gemini_are_served(claude_window)
    assert all(a.startswith(b"HTTP/1.1 400 ") and b"Send the WebSocket handshake in ASCII" in a for a in answers)
    assert_log_bounded(caplog, "refused a WebSocket handshake that is not plain ASCII")


def test_whatever_the_websocket_protocol_raises_it_leaves_no_slot_taken(
    claude_window: WindowHandle, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same handshakes with the 400 check out of the way, as for an input nobody foresaw:
    wsproto raises inside the protocol object, which still counts itself out."""
    monkeypatch.setattr(connections, "_undecodable", lambda headers: None)
    request = hostile_upgrade(claude_window.port, "host")
    with caplog.at_level(logging.INFO):
        for _ in range(REQUESTS):
            exchange(claude_window.port, request)
        assert_claude_and_gemini_are_served(claude_window)
    assert_log_bounded(caplog, "closed a WebSocket connection whose data could not be handled")


def test_upgrades_while_claude_is_off_log_one_line(
    claude_runtime: Runtime, editor: ScriptedEditor, workspace: str, caplog: pytest.LogCaptureFixture
) -> None:
    window = claude_runtime.open_window(editor, [workspace])
    window.ready.result(30)
    upgrade = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{window.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    with caplog.at_level(logging.INFO):
        answers = [exchange(window.port, upgrade.encode() + KEY + b"\r\n") for _ in range(REQUESTS)]
        assert initialize(window.port, window.token) == 200
    assert all(a.startswith(b"HTTP/1.1 404 ") for a in answers)
    assert_log_bounded(caplog, "upgrade")


class SilentClient:
    """An authenticated Claude Code client that sends requests and never reads a byte."""

    def __init__(self, window: WindowHandle) -> None:
        self.sock = socket.create_connection(("127.0.0.1", window.port), timeout=10)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the replies back up at once
        self.ws = WSConnection(ConnectionType.CLIENT)
        token = window.claude_token.encode()
        self.sock.sendall(
            self.ws.send(
                Request(
                    host=f"127.0.0.1:{window.port}",
                    target="/",
                    subprotocols=["mcp"],
                    extra_headers=[(b"x-claude-code-ide-authorization", token)],
                )
            )
        )
        self.ws.receive_data(self.sock.recv(4096))  # the 101, the last thing this client reads
        assert any(isinstance(event, AcceptConnection) for event in self.ws.events())
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, object]) -> None:
        self.sock.sendall(self.ws.send(Message(data=json.dumps(message))))

    def send_requests(self, count: int) -> None:
        try:
            for number in range(1, count + 1):
                self.send({"jsonrpc": "2.0", "id": number, "method": "tools/list"})
        except OSError:  # reset by the server: it has had enough of this client
            pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def quick_pings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pings every 0.5 s, answered within 0.5 s (uvicorn's 20 s each would make this a minute)."""
    monkeypatch.setattr(ws_protocol, "PING_INTERVAL_SECONDS", 0.5)
    monkeypatch.setattr(ws_protocol, "PING_TIMEOUT_SECONDS", 0.5)


def wait_until(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_a_client_that_never_reads_is_closed(
    quick_pings: None, claude_runtime: Runtime, editor: ScriptedEditor, workspace: str
) -> None:
    window = claude_runtime.open_window(editor, [workspace], claude=True)
    window.ready.result(30)
    silent = SilentClient(window)
    try:
        assert wait_until(lambda: window.claude_clients, 10)
        silent.send_requests(3000)  # ~15 MB of replies: far more than the socket buffers hold
        # It answers no ping: cut at its ping timeout, though its replies were never read.
        assert wait_until(lambda: not window.claude_clients, 30), "the silent client is still connected"
        assert_claude_and_gemini_are_served(window)
    finally:
        silent.close()


def test_what_a_client_that_never_reads_costs_is_bounded(claude_window: WindowHandle) -> None:
    """10 000 requests whose replies are never read: without a bound, each became a pending reply
    (+180 MB and 8 500 tasks on the loop, measured); with it, they wait in the client's socket."""
    process = psutil.Process()
    silent = SilentClient(claude_window)
    try:
        assert wait_until(lambda: claude_window.claude_clients, 10)
        before = process.memory_info().rss
        silent.send_requests(10_000)
        growth = stable_growth(claude_window, process, before)
        assert growth < 40 * 2**20, f"the server holds {growth // 2**20} MB more for a client that reads nothing"
    finally:
        silent.close()


def stable_growth(window: WindowHandle, process: psutil.Process, before: int) -> int:
    """Our memory growth once the server has taken in what it will (its loop's task count stays
    the same for a second), or as soon as it is over 40 MB."""

    async def tasks() -> int:
        return len(asyncio.all_tasks())

    counts: list[int] = []
    while len(counts) < 10 or len(set(counts[-10:])) > 1:
        growth = process.memory_info().rss - before
        if growth >= 40 * 2**20:
            return growth
        counts.append(window.runtime.submit(tasks).result(10))
        time.sleep(0.1)
    return process.memory_info().rss - before


def test_a_client_that_never_reads_does_not_outlive_its_window(
    claude_runtime: Runtime, editor: ScriptedEditor, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopping the window closes the client's WebSocket; a close cannot finish while its unread
    data waits, and used to keep the descriptor (and the connection) after the window was gone."""
    monkeypatch.setattr(ws_protocol, "CLOSE_DRAIN_SECONDS", 0.2)
    window = claude_runtime.open_window(editor, [workspace], claude=True)
    window.ready.result(30)
    silent = SilentClient(window)
    try:
        assert wait_until(lambda: window.claude_clients, 10)
        silent.send_requests(3000)
        assert wait_until(lambda: unsent_bytes(window) > 0, 30)  # more than the kernel's buffers take
        window.close().result(30)
        assert wait_until(lambda: not server_sockets(window.port), 30), server_sockets(window.port)
    finally:
        silent.close()


def server_sockets(port: int) -> list[object]:
    """This process's open sockets on the server's side of `port` (the runtime runs in it)."""
    return [c for c in psutil.Process().net_connections("tcp") if c.laddr and c.laddr.port == port]


def unsent_bytes(window: WindowHandle) -> int:
    """What the server's transports hold that the kernel would not take (read on the loop)."""

    async def buffered() -> int:
        assert window.server is not None and window.server._uvicorn is not None
        state = window.server._uvicorn.server_state
        return sum(c.transport.get_write_buffer_size() for c in state.connections)

    return window.runtime.submit(buffered).result(10)

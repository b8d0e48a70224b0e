"""Claude Code's WebSocket side under attack: forged handshakes, frames over the cap, garbage
frames, clients that never read, and a connected client across many window restarts. The
server must refuse before the upgrade, never log the token, and keep serving the real client."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket

import pytest
import websockets

from companion.core.server.security import MAX_BODY_BYTES
from companion.runtime import Runtime, WindowHandle
from tests.claude_client import ClaudeClient
from tests.scripted_editor import ScriptedEditor
from tests.window_fixtures import claude_runtime, claude_window, discovery_dir, editor, lock_dir, workspace

__all__ = ["claude_runtime", "claude_window", "discovery_dir", "editor", "lock_dir", "workspace"]  # fixtures

KEY = base64.b64encode(os.urandom(16)).decode()


def upgrade(port: int, headers: dict[str, str] | list[tuple[str, str]], path: str = "/") -> tuple[int, bytes]:
    """Send a raw upgrade request; returns (status, whole answer) once the server closes or answers 101."""
    items = list(headers.items()) if isinstance(headers, dict) else headers
    lines = [f"GET {path} HTTP/1.1", "Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {KEY}",
             "Sec-WebSocket-Version: 13", *(f"{k}: {v}" for k, v in items)]  # fmt: skip
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.startswith(b"HTTP/1.1 101"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
            if answer.startswith(b"HTTP/1.1 101") and b"\r\n\r\n" in answer:
                break
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
    return status, answer


def good(window: WindowHandle) -> dict[str, str]:
    return {
        "Host": f"127.0.0.1:{window.port}",
        "Sec-WebSocket-Protocol": "mcp",
        "X-Claude-Code-Ide-Authorization": window.claude_token,
    }


def test_the_real_handshake_is_accepted(claude_window: WindowHandle) -> None:
    status, answer = upgrade(claude_window.port, good(claude_window))
    assert status == 101 and b"sec-websocket-protocol: mcp" in answer.lower()


@pytest.mark.parametrize(
    "name",
    ["missing", "empty", "wrong", "prefix", "suffix", "bearer", "case", "twice", "gemini's token", "in the query"],
)
def test_token_tricks_are_refused_before_the_upgrade(claude_window: WindowHandle, name: str) -> None:
    token = claude_window.claude_token
    headers = [(k, v) for k, v in good(claude_window).items() if k != "X-Claude-Code-Ide-Authorization"]
    path = "/"
    forged = {
        "empty": "",
        "wrong": "x" * len(token),
        "prefix": token[:-1],
        "suffix": token + "x",
        "bearer": f"Bearer {token}",
        "case": token.swapcase(),
        "gemini's token": claude_window.token,
    }
    if name in forged:
        headers.append(("X-Claude-Code-Ide-Authorization", forged[name]))
    elif name == "twice":
        headers += [("X-Claude-Code-Ide-Authorization", token), ("X-Claude-Code-Ide-Authorization", token)]
    elif name == "in the query":
        path = f"/?authToken={token}"
    status, answer = upgrade(claude_window.port, headers, path)
    assert status in (401, 404), answer
    assert token.encode() not in answer and b"Traceback" not in answer


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"Origin": "http://localhost"}, 403),
        ({"Origin": "null"}, 403),
        ({"Host": "evil.example:{port}"}, 403),
        ({"Host": "127.0.0.1.nip.io:{port}"}, 403),
        ({"Host": "127.0.0.1:1"}, 403),
        ({"Sec-WebSocket-Protocol": "chat"}, 400),
    ],
)
def test_web_pages_rebinding_and_other_protocols_are_refused(
    claude_window: WindowHandle, change: dict[str, str], status: int
) -> None:
    headers = good(claude_window)
    headers.update({k: v.format(port=claude_window.port) for k, v in change.items()})
    assert upgrade(claude_window.port, headers)[0] == status


@pytest.mark.parametrize("path", ["/mcp", "/ws", "//", "/?"])
def test_other_paths_are_not_websocket_endpoints(claude_window: WindowHandle, path: str) -> None:
    assert upgrade(claude_window.port, good(claude_window), path)[0] == (101 if path == "/?" else 404)


def test_without_claude_no_websocket_is_accepted(
    claude_runtime: Runtime, editor: ScriptedEditor, workspace: str
) -> None:
    handle = claude_runtime.open_window(editor, [workspace])
    handle.ready.result(30)
    headers = {"Host": f"127.0.0.1:{handle.port}", "Sec-WebSocket-Protocol": "mcp"}
    assert upgrade(handle.port, headers)[0] != 101


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_frame_over_the_cap_closes_that_connection_and_the_others_are_served(
    claude_window: WindowHandle,
) -> None:
    big = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    other = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        await big.connection.send("x" * (MAX_BODY_BYTES + 1))
        await asyncio.wait_for(big.connection.wait_closed(), 20)
        assert big.connection.close_code == 1009  # message too big
        assert (await other.request("tools/list", {}))["result"]["tools"]
    finally:
        await big.close()
        await other.close()


@pytest.mark.anyio
async def test_garbage_frames_get_json_rpc_errors_and_the_session_goes_on(claude_window: WindowHandle) -> None:
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        for garbage in [
            "",
            "{",
            "[]",
            "null",
            '{"jsonrpc":"2.0"}',
            '{"jsonrpc":"1.0","id":7,"method":"x"}',
            "\x00" * 10,
        ]:
            await client.connection.send(garbage)
        await client.connection.send(b'{"jsonrpc":"2.0","id":99,"method":"ping"}')  # a binary frame is read too
        await client.connection.send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "no/such"}))
        assert (await client.request("tools/list", {}))["result"]["tools"]
    finally:
        await client.close()


@pytest.mark.anyio
async def test_a_client_that_never_reads_does_not_stall_notifications_to_the_others(
    claude_window: WindowHandle, workspace: str
) -> None:
    from companion.core.context import Position

    stuck = await websockets.connect(
        f"ws://127.0.0.1:{claude_window.port}/",
        subprotocols=[websockets.Subprotocol("mcp")],
        additional_headers={"X-Claude-Code-Ide-Authorization": claude_window.claude_token},
        max_queue=1,
    )
    reader = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        handshake = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "stuck", "version": "0"},
        }
        await stuck.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": handshake}))
        await stuck.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        stuck.transport.pause_reading()  # type: ignore[attr-defined]
        path = os.path.join(workspace, "a.py")
        text = "y" * 16000
        for line in range(1, 400):  # ~6 MB of selections for the stuck client
            claude_window.context.activate(path, Position(line, 1), text, anchor=Position(line, 1))
            await asyncio.sleep(0.06)  # past the debounce: each one is sent
            if line % 100 == 0:  # the reading client gets this very selection, in time
                while (await reader.notification("selection_changed", 5))["selection"]["start"]["line"] != line - 1:
                    pass
        assert (await reader.request("tools/list", {}))["result"]["tools"]
    finally:
        stuck.transport.abort()  # type: ignore[attr-defined]
        await reader.close()


@pytest.mark.anyio
async def test_an_idle_authenticated_client_keeps_its_connection(claude_window: WindowHandle) -> None:
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        await asyncio.sleep(6)  # longer than the request-head deadline of unproven HTTP connections
        assert (await client.request("tools/list", {}))["result"]["tools"]
    finally:
        await client.close()


def test_two_hundred_restarts_with_a_claude_client_connected_leak_nothing(
    discovery_dir: str, lock_dir: str, workspace: str
) -> None:
    """A Claude Code stays connected (reconnecting like the real client does after a drop) while the
    window's server is restarted 200 times: every lock file but the live one is gone, no thread or
    descriptor accumulates, and the client is served at the end."""
    import threading

    import psutil

    process = psutil.Process()
    runtime = Runtime(discovery_directory=discovery_dir, lock_directory=lock_dir)

    async def connected_cycle(handle: WindowHandle) -> None:
        client = await ClaudeClient.connect(handle.port, handle.claude_token)
        try:
            assert (await client.request("tools/list", {}))["result"]["tools"]
        finally:
            await client.close()

    try:
        baseline: tuple[int, int] | None = None
        for cycle in range(200):
            handle = runtime.open_window(ScriptedEditor(), [workspace], claude=True)
            handle.ready.result(30)
            asyncio.run(asyncio.wait_for(connected_cycle(handle), 20))
            lock = handle.lock_path
            handle.close().result(10)
            assert not os.path.exists(lock)
            if cycle == 20:
                baseline = (threading.active_count(), process.num_fds())
        assert baseline is not None
        assert threading.active_count() <= baseline[0]
        assert process.num_fds() <= baseline[1] + 5
        assert os.listdir(lock_dir) == []
    finally:
        runtime.stop()

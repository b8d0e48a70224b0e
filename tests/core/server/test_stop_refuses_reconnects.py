"""Issue #24: stopping a window's server must stop accepting before it closes anyone's connection.
The real Claude Code reconnects 2-10 ms after its connection closes; while the listener was still
open it was accepted and initialized, then cut ~100 ms later (13 of 17 stops). A client that
reconnects as soon as the server has closed its connection or stream must be refused."""

from __future__ import annotations

import asyncio

import pytest
from websockets.exceptions import WebSocketException

from companion.runtime import WindowHandle
from tests.claude_client import ClaudeClient
from tests.hostile.conftest import RawHttp, RawStreamClient, Target, initialize_body
from tests.hostile.test_connections import initialize
from tests.window_fixtures import claude_runtime, claude_window, discovery_dir, editor, lock_dir, workspace

__all__ = ["claude_runtime", "claude_window", "discovery_dir", "editor", "lock_dir", "workspace"]  # fixtures


def test_claude_code_reconnecting_during_stop_is_refused(claude_window: WindowHandle) -> None:
    async def scenario() -> None:
        client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
        stopping = claude_window.close()
        await asyncio.wait_for(client.connection.wait_closed(), 10)  # what makes Claude Code reconnect
        try:
            again = await asyncio.wait_for(ClaudeClient.connect(claude_window.port, claude_window.claude_token), 10)
        except (OSError, WebSocketException):
            pass  # refused, or closed before its initialize was answered
        else:
            await again.close()
            pytest.fail("a Claude Code reconnecting while the server stopped was accepted and initialized")
        finally:
            await asyncio.wrap_future(stopping)

    asyncio.run(scenario())


def stream_response_ended(stream: RawStreamClient) -> bool:
    """Read the GET stream until its chunked response ends (the connection itself may stay open)."""
    seen = b"\r\n"  # the end of the last chunk, already read
    stream.sock.settimeout(10)
    while not seen.endswith(b"\r\n0\r\n\r\n"):
        chunk = stream.sock.recv(65536)
        if not chunk:
            return False
        seen += chunk
    return True


def test_gemini_cli_reconnecting_during_stop_is_refused(claude_window: WindowHandle) -> None:
    stream = RawStreamClient(claude_window)
    try:
        stopping = claude_window.close()
        assert stream_response_ended(stream)  # the end of its event stream is what makes a client reconnect
        with pytest.raises(OSError):
            status = initialize(claude_window.port, claude_window.token)
            pytest.fail(f"a Gemini CLI reconnecting while the server stopped got {status} to its initialize")
        stopping.result(10)
    finally:
        stream.close()


def test_gemini_cli_reusing_an_idle_connection_during_stop_is_refused(claude_window: WindowHandle) -> None:
    """Gemini CLI's HTTP client keeps idle connections for its next requests: a new initialize on
    one of them must not be served either once the server is stopping."""
    target = Target(claude_window, None, "", "")  # type: ignore[arg-type]
    pooled = RawHttp(claude_window.port)
    target.new_session(pooled)  # leaves `pooled` an idle keep-alive connection
    stream = RawStreamClient(claude_window)
    try:
        stopping = claude_window.close()
        assert stream_response_ended(stream)
        with pytest.raises(OSError):  # closed, and a new connection is refused
            reply = pooled.request("POST", "/mcp", target.base_headers(), initialize_body())
            pytest.fail(f"an idle connection carried an initialize while the server stopped: {reply.status}")
        stopping.result(10)
    finally:
        stream.close()
        pooled.close()

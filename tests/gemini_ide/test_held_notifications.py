"""What a session holds for a notification stream it has not opened (issue #24, 8).

Gemini CLI opens its stream right after `notifications/initialized`; a client that never does (or
whose stream is down) cannot hear anything until it opens one. It used to be given every outcome
with its full content, held for the session's whole life. Now it holds only what a stream opened
later can still use: the newest MAX_HELD_OUTCOMES outcomes, in order (Gemini CLI waits on one diff
at a time), and no context update (an opening stream is sent the current context)."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import httpx2
import pytest

from companion.gemini_ide.notifications import MAX_HELD_OUTCOMES
from companion.runtime import WindowHandle
from tests.mcp_client import connect
from tests.scripted_editor import ScriptedEditor

pytestmark = pytest.mark.anyio

REVIEWS = 3 * MAX_HELD_OUTCOMES
MARKER = "/marker/after-the-held-ones"


def raw_headers(window: WindowHandle, session: str | None = None) -> dict[str, str]:
    headers = {
        "Authorization": f"Bearer {window.token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    return {**headers, "mcp-session-id": session} if session else headers


async def session_without_stream(http: httpx2.AsyncClient, window: WindowHandle) -> str:
    """Initialize a session as Gemini CLI does, but open no GET stream."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    response = await http.post(window.url, json=init, headers=raw_headers(window))
    session = response.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(window.url, json=initialized, headers=raw_headers(window, session))
    return session


async def stream_until_marker(http: httpx2.AsyncClient, window: WindowHandle, session: str) -> list[dict[str, Any]]:
    """Open the session's stream and return every notification on it up to the marker."""
    seen: list[dict[str, Any]] = []
    server = window.server
    assert server is not None
    async with http.stream("GET", window.url, headers=raw_headers(window, session)) as stream:
        assert stream.status_code == 200
        with anyio.fail_after(20):
            async for line in stream.aiter_lines():
                if not line.startswith("data:"):
                    continue
                seen.append(json.loads(line[5:]))
                if seen[-1]["method"] == "ide/contextUpdate":
                    # The stream is ready (the current context came): nothing is held any more, and
                    # the marker says when everything queued before it has arrived.
                    window.runtime.submit(lambda: _broadcast_marker(window)).result(10)
                if seen[-1].get("params", {}).get("filePath") == MARKER:
                    return seen
    raise AssertionError(f"the stream ended before the marker: {seen}")


async def _broadcast_marker(window: WindowHandle) -> None:
    assert window.gemini is not None
    window.gemini.broadcaster.broadcast("ide/diffRejected", {"filePath": MARKER})


async def test_a_session_without_a_stream_holds_only_the_newest_outcomes(
    window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    content = "x" * 100_000 + "\n"
    paths = [os.path.join(workspace, f"f{i}.txt") for i in range(REVIEWS)]
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as http:
        quiet = await session_without_stream(http, window)
        async with connect(window.url, window.token) as gemini:
            for index, path in enumerate(paths):
                await gemini.open_diff(path, content)
                with anyio.fail_after(20):
                    while len(editor.shown) <= index:
                        await anyio.sleep(0.01)
                editor.shown[index][0].accept(content + str(index))
                await gemini.wait_for("ide/diffAccepted", lambda p, path=path: p["filePath"] == path)
        seen = await stream_until_marker(http, window, quiet)
    outcomes = [(n["method"], n["params"].get("filePath"), n["params"].get("content")) for n in seen]
    newest = [("ide/diffAccepted", path, content + str(i)) for i, path in enumerate(paths)][-MAX_HELD_OUTCOMES:]
    # The newest outcomes arrive in order with their full content, then the current context, then the marker.
    assert [o for o in outcomes if o[0] == "ide/diffAccepted"] == newest
    assert [n["method"] for n in seen].count("ide/contextUpdate") == 1
    assert outcomes[-1] == ("ide/diffRejected", MARKER, None)

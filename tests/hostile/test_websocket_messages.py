"""Claude Code's WebSocket side answers every message it cannot serve: a JSON-RPC error for each bad
shape (id null, or the id echoed when it is a valid one), a refusal for an id already in flight,
and the connection goes on serving (see companion/core/server/request_ids.py: the same rules as HTTP)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

from companion.runtime import WindowHandle
from tests.claude_client import INITIALIZE
from tests.scripted_editor import ScriptedEditor
from tests.window_fixtures import claude_runtime, claude_window, discovery_dir, editor, lock_dir, workspace

__all__ = ["claude_runtime", "claude_window", "discovery_dir", "editor", "lock_dir", "workspace"]  # fixtures

pytestmark = pytest.mark.anyio

PARSE_ERROR, INVALID_REQUEST = -32700, -32600


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def ws(claude_window: WindowHandle) -> AsyncIterator[ClientConnection]:
    """A raw connection that has done Claude Code's handshake; the test reads every frame itself."""
    connection = await websockets.connect(
        f"ws://127.0.0.1:{claude_window.port}/",
        subprotocols=[websockets.Subprotocol("mcp")],
        additional_headers={"X-Claude-Code-Ide-Authorization": claude_window.claude_token},
        max_size=None,
    )
    try:
        await connection.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE}))
        assert "result" in await reply(connection)
        await connection.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        yield connection
    finally:
        await connection.close()


async def reply(connection: ClientConnection, timeout: float = 20) -> dict[str, Any]:
    """The next frame that is not a notification (the server's selection_changed may come between)."""
    with anyio.fail_after(timeout):  # a bound on a hang, not a speed target: the answer comes at once
        while True:
            message = json.loads(await connection.recv())
            if "id" in message or "method" not in message:
                return message


async def ping(connection: ClientConnection, request_id: object) -> dict[str, Any]:
    await connection.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}))
    return await reply(connection)


async def open_diff(connection: ClientConnection, request_id: int, path: str) -> None:
    """Claude Code's openDiff: its answer waits for the user's decision."""
    arguments = {"old_file_path": path, "new_file_path": path, "new_file_contents": "x\n", "tab_name": path}
    params = {"name": "openDiff", "arguments": arguments}
    await connection.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}))


def error_of(message: dict[str, Any]) -> tuple[object, int, str]:
    assert set(message) == {"jsonrpc", "id", "error"} and message["jsonrpc"] == "2.0", message
    return message["id"], message["error"]["code"], message["error"]["message"]


BAD_FRAMES: list[tuple[str, str | bytes, int]] = [
    ("object id", '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', INVALID_REQUEST),
    ("1e400 id", '{"jsonrpc": "2.0", "id": 1e400, "method": "ping"}', INVALID_REQUEST),
    ("1.5 id", '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', INVALID_REQUEST),
    ("true id", '{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST),
    ("null id", '{"jsonrpc": "2.0", "id": null, "method": "ping"}', INVALID_REQUEST),
    ("array id", '{"jsonrpc": "2.0", "id": [1], "method": "ping"}', INVALID_REQUEST),
    ("batch", '[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', INVALID_REQUEST),
    ("empty batch", "[]", INVALID_REQUEST),
    ("unparsable", '{"jsonrpc": "2.0", "id": 1, "method": "ping"', PARSE_ERROR),
    ("text", "hello", PARSE_ERROR),
    ("null", "null", INVALID_REQUEST),
    ("empty", "", PARSE_ERROR),
    ("binary garbage", b"\xff\xfe\x00", PARSE_ERROR),
]


@pytest.mark.parametrize(("frame", "code"), [case[1:] for case in BAD_FRAMES], ids=[case[0] for case in BAD_FRAMES])
async def test_each_bad_message_gets_its_json_rpc_error_and_the_connection_goes_on(
    ws: ClientConnection, frame: str | bytes, code: int
) -> None:
    await ws.send(frame)
    found, got, text = error_of(await reply(ws))
    assert (found, got) == (None, code), text
    assert "send" in text  # says what to do next
    # The same connection serves the next request, and the bad message took no id.
    assert await ping(ws, 1) == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_a_valid_id_in_a_message_that_is_not_json_rpc_is_echoed(ws: ClientConnection) -> None:
    await ws.send('{"jsonrpc": "1.0", "id": 7, "method": "ping"}')
    found, code, text = error_of(await reply(ws))
    assert (found, code) == (7, INVALID_REQUEST) and "jsonrpc" in text, text
    assert "result" in await ping(ws, 7)


async def test_an_id_in_flight_is_refused_until_its_request_is_answered(
    ws: ClientConnection, editor: ScriptedEditor, workspace: str
) -> None:
    await open_diff(ws, 5, os.path.join(workspace, "a.py"))
    review = await anyio.to_thread.run_sync(editor.wait_shown)  # id 5 is in flight until the user decides

    for same in (5, "5"):  # the SDK routes replies by str(id): "5" is the same request to it
        found, code, text = error_of(await ping(ws, same))
        assert (found, code) == (same, INVALID_REQUEST) and "still in progress" in text, text
    assert await ping(ws, 6) == {"jsonrpc": "2.0", "id": 6, "result": {}}

    review.reject()
    answered = await reply(ws)
    assert answered["id"] == 5 and answered["result"]["content"][0]["text"] == "DIFF_REJECTED", answered
    assert await ping(ws, 5) == {"jsonrpc": "2.0", "id": 5, "result": {}}  # answered: the id is free again


async def test_a_cancelled_request_frees_its_id(ws: ClientConnection, editor: ScriptedEditor, workspace: str) -> None:
    """The SDK never answers a cancelled request; its id must not stay refused for good."""
    await open_diff(ws, 8, os.path.join(workspace, "b.py"))
    await anyio.to_thread.run_sync(editor.wait_shown)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8, "reason": "test"}}
    await ws.send(json.dumps(cancel))
    # The cancelled handler settles in its own task: until then 8 is still in flight (refused, not lost).
    with anyio.fail_after(20):
        while "error" in (answer := await ping(ws, 8)):
            assert "still in progress" in answer["error"]["message"], answer
            await anyio.sleep(0.01)
    assert answer == {"jsonrpc": "2.0", "id": 8, "result": {}}

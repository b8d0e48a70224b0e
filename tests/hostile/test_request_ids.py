"""Request ids the SDK cannot answer: refused with a JSON-RPC error at once, never a silent 202, a
hang or an HTTP 500 (see companion/core/server/request_ids.py)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator

import pytest

from companion.mcp_tools.factory import tool_factory
from companion.mcp_tools.settings import WorkspaceToolSettings
from companion.runtime import Runtime
from tests.hostile.conftest import RawHttp, Reply, Target
from tests.scripted_editor import ScriptedEditor


@pytest.fixture(scope="module")
def waiting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """A window whose write_file reviews wait for the test: a request that stays in flight."""
    root = str(tmp_path_factory.mktemp("ids"))
    workspace = os.path.join(root, "workspace")
    os.makedirs(workspace)
    editor = ScriptedEditor()
    runtime = Runtime(discovery_directory=os.path.join(root, "discovery"))
    handle = runtime.open_window(editor, [workspace], tool_factory=tool_factory(WorkspaceToolSettings()))
    handle.ready.result(30)
    try:
        yield Target(handle, editor, workspace, os.path.join(root, "discovery"))
    finally:
        runtime.stop()


def call(target: Target, http: RawHttp, session: str, body: object) -> Reply:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http.request("POST", "/mcp", target.base_headers(session), raw)


@pytest.mark.parametrize(
    "request_id",
    ['{"a": 1}', "1e400", "1.5", "[1]", "true", "null"],
    ids=["object", "1e400", "float", "array", "bool", "null"],
)
def test_an_invalid_id_is_answered_with_a_json_rpc_error(waiting: Target, request_id: str) -> None:
    http = RawHttp(waiting.port, timeout=10)
    session = waiting.new_session(http)
    reply = call(waiting, http, session, f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "ping"}}'.encode())
    assert reply.status == 400, reply
    error = reply.json()
    assert error["id"] is None and error["error"]["code"] == -32600, error  # type: ignore[index]
    assert "must be a string or an integer" in error["error"]["message"]  # type: ignore[index]
    # The session is unharmed.
    assert call(waiting, http, session, {"jsonrpc": "2.0", "id": 2, "method": "ping"}).status == 200


@pytest.mark.parametrize(
    ("body", "status", "answer_id", "code"),
    [
        # The SDK keeps the last of duplicate members, and so do the rules (only `id` and `method`
        # are read from the body; the SDK parses it whole).
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping", "id": 3}', 200, 3, None),
        (b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "id": {"a": 1}}', 400, None, -32600),
        (b'{"jsonrpc": "2.0", "\\u0069d": 1.5, "method": "ping"}', 400, None, -32600),  # an escaped "id"
        (b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"id": {"a": 1}}}', 200, 4, None),
        (b'[{"jsonrpc": "2.0", "id": 5, "method": "ping"}]', 400, None, -32600),  # a batch, as on the WebSocket
        (b'{"jsonrpc": "2.0", "id": 6, "method": "ping"', 400, None, -32700),
    ],
    ids=["last id valid", "last id invalid", "escaped key", "id in params", "batch", "not JSON"],
)
def test_the_id_read_is_the_one_the_sdk_reads(
    waiting: Target, body: bytes, status: int, answer_id: object, code: int | None
) -> None:
    http = RawHttp(waiting.port, timeout=10)
    session = waiting.new_session(http)
    reply = call(waiting, http, session, body)
    assert reply.status == status, reply
    answer = reply.json()
    assert isinstance(answer, dict) and answer["id"] == answer_id, answer
    if code is None:
        assert "result" in answer, answer
    else:
        assert answer["error"]["code"] == code, answer


def test_a_duplicate_id_in_flight_is_refused_and_the_first_request_still_gets_its_answer(waiting: Target) -> None:
    first_http, second_http = RawHttp(waiting.port, timeout=60), RawHttp(waiting.port, timeout=10)
    session = waiting.new_session(first_http)
    target = os.path.join(waiting.workspace, "slow.txt")
    write = {
        "jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": target, "content": "x\n"}},
    }  # fmt: skip
    replies: list[Reply] = []
    first = threading.Thread(target=lambda: replies.append(call(waiting, first_http, session, write)))
    first.start()
    review = waiting.editor.wait_shown(1)  # id 5 is in flight until the user decides

    duplicate = call(waiting, second_http, session, {"jsonrpc": "2.0", "id": 5, "method": "ping"})
    assert duplicate.status == 409, duplicate
    assert duplicate.json()["id"] == 5 and "still in progress" in duplicate.json()["error"]["message"]  # type: ignore[index]
    # The same id as a string is the same request to the SDK; in another session it is independent.
    assert call(waiting, second_http, session, {"jsonrpc": "2.0", "id": "5", "method": "ping"}).status == 409
    other = waiting.new_session(second_http)
    assert call(waiting, second_http, other, {"jsonrpc": "2.0", "id": 5, "method": "ping"}).status == 200

    review.reject()
    first.join(30)
    assert replies and replies[0].status == 200 and replies[0].json()["id"] == 5, replies  # type: ignore[index]
    # Answered: the id is free again.
    assert call(waiting, second_http, session, {"jsonrpc": "2.0", "id": 5, "method": "ping"}).status == 200


def test_a_body_above_the_limit_sent_without_a_length_is_refused(waiting: Target) -> None:
    from companion.core.server.security import MAX_BODY_BYTES

    http = RawHttp(waiting.port, timeout=30)
    session = waiting.new_session(http)
    headers = [*waiting.base_headers(session), ("Transfer-Encoding", "chunked")]
    chunk = b"x" * (1024 * 1024)
    count = MAX_BODY_BYTES // len(chunk) + 2
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(count)) + b"0\r\n\r\n"
    reply = http.request("POST", "/mcp", headers, body)
    assert reply.status in (413, 0), reply  # 0: the server closed before reading the rest (a reset)


def test_clients_initializing_at_once_with_the_same_id_each_get_their_session(waiting: Target) -> None:
    """Every SDK client starts with the same initialize id: that is never a duplicate."""
    from tests.hostile.conftest import initialize_body

    replies: list[Reply] = []

    def initialize() -> None:
        replies.append(
            RawHttp(waiting.port, timeout=30).request("POST", "/mcp", waiting.base_headers(), initialize_body())
        )

    threads = [threading.Thread(target=initialize) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [r.status for r in replies] == [200] * 20
    assert len({r.header("mcp-session-id") for r in replies}) == 20

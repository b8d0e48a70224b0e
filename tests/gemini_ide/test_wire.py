"""Every payload is checked against the CLI's schema before it leaves the process."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from companion.gemini_ide.wire import InvalidNotification, validated_params
from companion.runtime import WindowHandle
from tests.mcp_client import connect


def context(**file: Any) -> dict[str, Any]:
    return {"workspaceState": {"openFiles": [{"path": "/w/a.py", "timestamp": 1, **file}]}}


def test_a_valid_context_passes_in_wire_form() -> None:
    params = context(isActive=True, cursor={"line": 1, "character": 1}, selectedText="x")
    assert validated_params("ide/contextUpdate", params) == params


@pytest.mark.parametrize(
    "params",
    [
        context(timestamp="1"),  # a string timestamp
        context(timestamp=1.5),
        context(cursor={"line": 1.0, "character": 1}),  # a float line
        context(cursor={"line": 0, "character": 1}),  # 0-based
        context(cursor={"line": 1, "character": 0}),
        context(selectedText="x" * 16385),
        context(path=""),
        context(isTrusted=True),  # not ours to send: it would override the CLI's folder trust
        {"workspaceState": {"openFiles": [{"path": f"/{i}", "timestamp": i} for i in range(11)]}},
        {"workspaceState": {}, "extra": 1},
        {},
    ],
)
def test_payloads_the_cli_would_reject_fail_here(params: dict[str, Any]) -> None:
    with pytest.raises(InvalidNotification):
        validated_params("ide/contextUpdate", params)


def test_diff_outcomes() -> None:
    assert validated_params("ide/diffAccepted", {"filePath": "/a", "content": ""}) == {"filePath": "/a", "content": ""}
    assert validated_params("ide/diffRejected", {"filePath": "/a"}) == {"filePath": "/a"}
    with pytest.raises(InvalidNotification):
        validated_params("ide/diffAccepted", {"filePath": "/a"})
    with pytest.raises(InvalidNotification):
        validated_params("ide/diffRejected", {"filePath": 1})


def test_unknown_methods_are_refused() -> None:
    with pytest.raises(InvalidNotification):
        validated_params("ide/somethingElse", {})


BAD_OUTGOING = [
    (
        "ide/contextUpdate",
        {"workspaceState": {"openFiles": [{"path": "/w/a.py", "timestamp": 1, "cursor": {"line": 0, "character": 1}}]}},
    ),
    ("ide/contextUpdate", {"workspaceState": {"openFiles": [{"path": "/w/a.py", "timestamp": "1"}]}}),
    ("ide/diffAccepted", {"filePath": "/w/a.py"}),
    ("ide/diffAccepted", {"filePath": "/w/a.py", "content": None}),
    ("ide/diffRejected", {"filePath": 7}),
    ("ide/diffRejected", {"filePath": "/w/a.py", "extra": True}),
    ("ide/somethingElse", {}),
]


@pytest.mark.anyio
async def test_the_server_refuses_to_send_an_invalid_payload_to_a_connected_client(window: WindowHandle) -> None:
    """Through a real session: each bad payload raises before it is queued, so the client only ever
    receives the valid notification sent after them (one ordered outbox per session)."""
    server = window.gemini
    assert server is not None

    async def broadcast(method: str, params: dict[str, Any]) -> str | None:
        try:
            server.broadcaster.broadcast(method, params)
        except InvalidNotification as exc:
            return str(exc)
        return None

    async with connect(window.url, window.token) as client:
        await client.wait_for("ide/contextUpdate")
        for method, params in BAD_OUTGOING:
            error = window.runtime.submit(lambda m=method, p=params: broadcast(m, p)).result(10)
            assert error is not None, f"{method} {params} was accepted for sending"
        assert window.runtime.submit(lambda: broadcast("ide/diffRejected", {"filePath": "/w/ok"})).result(10) is None
        await client.wait_for("ide/diffRejected")
        await anyio.sleep(0.2)
    assert [(r.method, r.params) for r in client.received[1:]] == [("ide/diffRejected", {"filePath": "/w/ok"})]

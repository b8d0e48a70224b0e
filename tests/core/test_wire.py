"""Every payload is checked against the CLI's schema before it leaves the process."""

from __future__ import annotations

from typing import Any

import pytest

from companion.wire import InvalidNotification, validated_params


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

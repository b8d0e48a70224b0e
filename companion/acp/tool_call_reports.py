"""Everything an agent said about one tool call, merged into one: its `tool_call`, every
`tool_call_update`, then the permission request's `toolCall` (a ToolCallUpdate: only `toolCallId`
is required, so a request may name just the id, or the path without the diff).

A field an update carries replaces the earlier one (reference acp.md §1), with two exceptions so
nothing the agent said is lost before the user decides: `rawInput` is merged key by key, and a
`content` without a diff (a tool's output, or `[]`) keeps the diff the call carried before.
Plain dicts as the SDK dumps them (the protocol's camelCase names); no SDK import here."""

from __future__ import annotations

from typing import Any

from .edits import diff_blocks

_TERMINAL = ("completed", "failed")


def merged(earlier: dict[str, Any] | None, update: dict[str, Any]) -> dict[str, Any]:
    """`earlier` (what was said about the call so far) with `update` on top."""
    call = dict(earlier or {})
    for key, value in update.items():
        if value is None or key == "sessionUpdate":
            continue
        before = call.get(key)
        if key == "rawInput" and isinstance(value, dict) and isinstance(before, dict):
            call[key] = {**before, **value}
        elif key == "content" and isinstance(value, list) and not diff_blocks(update) and diff_blocks(call):
            call[key] = diff_blocks(call) + value
        else:
            call[key] = value
    return call


class ToolCallReports:
    """The merged reports of the calls still running, by id; a call that completed or failed is
    dropped (its content can be large, and nothing is decided about it any more)."""

    def __init__(self) -> None:
        self._calls: dict[str, dict[str, Any]] = {}

    def add(self, update: dict[str, Any]) -> dict[str, Any]:
        """Merge `update` into its call; returns the call as known now."""
        call_id = str(update.get("toolCallId", ""))
        call = merged(self._calls.get(call_id), update)
        if call.get("status") in _TERMINAL:
            self._calls.pop(call_id, None)
        else:
            self._calls[call_id] = call
        return call

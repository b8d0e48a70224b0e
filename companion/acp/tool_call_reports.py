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
# What the reports of running calls may hold in all, in characters of their diffs and raw input: an
# agent may open calls it never ends, each carrying a file's text. The least recently reported are
# forgotten first; a permission for one is then decided on what its request itself says.
MAX_HELD_CHARS = 64 * 1024 * 1024


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

    def __init__(self, max_held_chars: int = MAX_HELD_CHARS) -> None:
        self._calls: dict[str, dict[str, Any]] = {}  # least recently reported first
        self._sizes: dict[str, int] = {}
        self._held = 0
        self._max_held = max_held_chars

    @property
    def held_chars(self) -> int:
        return self._held

    def add(self, update: dict[str, Any]) -> dict[str, Any]:
        """Merge `update` into its call; returns the call as known now."""
        call_id = str(update.get("toolCallId", ""))
        call = merged(self._forget(call_id), update)
        if call.get("status") not in _TERMINAL:
            self._calls[call_id] = call
            self._sizes[call_id] = _size(call)
            self._held += self._sizes[call_id]
            while self._held > self._max_held and len(self._calls) > 1:
                self._forget(next(iter(self._calls)))
        return call

    def _forget(self, call_id: str) -> dict[str, Any] | None:
        self._held -= self._sizes.pop(call_id, 0)
        return self._calls.pop(call_id, None)


def _size(call: dict[str, Any]) -> int:
    """The characters a report holds, about: its diffs' texts and its raw input's strings."""
    texts = [block.get(key) for block in diff_blocks(call) for key in ("oldText", "newText")]
    raw = call.get("rawInput")
    if isinstance(raw, dict):
        texts += list(raw.values())
    return sum(len(text) for text in texts if isinstance(text, str))

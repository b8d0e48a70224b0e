"""`session/update` payloads (the SDK's models dumped to JSON, camelCase) into the ChatView's
dataclasses, so the view sees no SDK type. No SDK import here."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

from ..core.files.disk_text import MAX_SHOWN_BYTES
from .view import Command, ConfigChoice, ConfigOption, Location, Mode, PlanEntry, ToolCall, ToolDiff, Usage

# What a chat keeps of its tool calls' content, in characters. The views show a call's diffs (an
# edit applied without review) and none of its text output; a call may carry far more (a hostile
# agent sent 16 calls of 25 MB). Per call: diffs up to what a review can show, text output up to
# OUTPUT_KEPT (an error message, a command's tail end is not needed); in total, KEPT_IN_TOTAL for all
# calls of a chat, the content of the calls updated longest ago going first. The total counts the
# memory the texts take (1, 2 or 4 bytes a character in CPython), not characters: 64 Mi characters
# of text outside Latin-1 would be 256 MB.
KEPT_PER_CALL = MAX_SHOWN_BYTES  # 16 Mi characters
OUTPUT_KEPT = 64 * 1024
KEPT_IN_TOTAL = 64 * 1024 * 1024  # bytes of memory


def plan_entry(data: dict[str, Any]) -> PlanEntry:
    return PlanEntry(str(data.get("content", "")), str(data.get("priority", "")), str(data.get("status", "")))


def usage(data: dict[str, Any]) -> Usage:
    cost = data.get("cost") or {}
    amount = cost.get("amount")
    return Usage(int(data.get("used", 0)), int(data.get("size", 0)), amount, cost.get("currency") if cost else None)


def command(data: dict[str, Any]) -> Command:
    hint = (data.get("input") or {}).get("hint")
    return Command(str(data.get("name", "")), str(data.get("description", "")), hint)


def mode(data: dict[str, Any]) -> Mode:
    return Mode(str(data.get("id", "")), str(data.get("name", "")), data.get("description"))


def model(data: dict[str, Any]) -> Mode:
    return Mode(str(data.get("modelId", "")), str(data.get("name", "")), data.get("description"))


def config_option(data: dict[str, Any]) -> ConfigOption:
    category = data.get("category")
    return ConfigOption(
        id=str(data.get("id", "")),
        name=str(data.get("name", "")),
        kind=str(data.get("type", "")),
        current=data.get("currentValue", ""),
        choices=tuple(_config_choices(data.get("options") or [])),
        description=data.get("description"),
        category=category if isinstance(category, str) else None,
    )


def _config_choices(options: list[dict[str, Any]]) -> list[ConfigChoice]:
    """Flat or grouped (SessionConfigSelectGroup): one list, each choice keeping its group's name."""
    found: list[ConfigChoice] = []
    for option in options:
        if "group" in option:
            found += [_config_choice(o, option.get("name")) for o in option.get("options", [])]
        else:
            found.append(_config_choice(option, None))
    return found


def _config_choice(data: dict[str, Any], group: str | None) -> ConfigChoice:
    return ConfigChoice(str(data.get("value", "")), str(data.get("name", "")), data.get("description"), group)


def merge_tool_call(known: ToolCall | None, data: dict[str, Any], reviewed: bool) -> ToolCall:
    """The call as it is now: a `tool_call_update` carries only the fields that changed, and a
    field it carries replaces the earlier one (content and locations as whole lists)."""
    call = known or ToolCall(data["toolCallId"], "", "other", "")
    changes: dict[str, Any] = {"reviewed": reviewed}
    if data.get("title"):
        changes["title"] = str(data["title"])
    if data.get("kind"):
        changes["kind"] = str(data["kind"])
    if data.get("status"):
        changes["status"] = str(data["status"])
    if "locations" in data:
        changes["locations"] = tuple(Location(str(x.get("path", "")), x.get("line")) for x in data["locations"])
    if "content" in data:
        content = data["content"] or []
        changes["diffs"] = _kept_diffs(
            [
                ToolDiff(str(c.get("path", "")), c.get("oldText"), str(c.get("newText", "")))
                for c in content
                if c.get("type") == "diff"
            ]
        )
        changes["output"] = _kept_output([_text(c) for c in content])
    return replace(call, **changes)


def kept_size(call: ToolCall) -> int:
    """The characters of content a call holds."""
    return len(call.output) + sum(len(d.old_text or "") + len(d.new_text) for d in call.diffs)


def held_bytes(call: ToolCall) -> int:
    """The memory a call's content takes (sys.getsizeof: CPython's 1, 2 or 4 bytes a character)."""
    texts = [call.output, *(t for d in call.diffs for t in (d.old_text, d.new_text) if t is not None)]
    return sum(sys.getsizeof(t) for t in texts)


def _kept_diffs(diffs: list[ToolDiff]) -> tuple[ToolDiff, ...]:
    size = sum(len(d.old_text or "") + len(d.new_text) for d in diffs)
    return tuple(diffs if size <= KEPT_PER_CALL else (_not_kept(d, size) for d in diffs))


def _not_kept(diff: ToolDiff, size: int) -> ToolDiff:
    note = (
        f"[Gemini Companion did not keep this change of {size:,} characters: a tool call keeps at most "
        f"{KEPT_PER_CALL:,}. Open {diff.path} to see the file as it is now.]"
    )
    return ToolDiff(diff.path, None, note, kept=False)


def _kept_output(texts: list[str]) -> str:
    size = sum(len(t) for t in texts)
    if size <= OUTPUT_KEPT:
        return "".join(texts)
    kept: list[str] = []
    room = OUTPUT_KEPT
    for text in texts:
        kept.append(text[:room])
        room -= len(kept[-1])
        if room <= 0:
            break
    return "".join(kept) + f"\n[… {size - OUTPUT_KEPT:,} more characters not kept]"


class ToolCalls:
    """A chat's tool calls by id, their content taking at most KEPT_IN_TOTAL bytes: over that, the
    content of the calls updated longest ago is dropped (their cards were shown long ago)."""

    def __init__(self, limit: int = KEPT_IN_TOTAL) -> None:
        self.limit = limit
        self._calls: dict[str, ToolCall] = {}
        self._size = 0

    def get(self, call_id: str) -> ToolCall | None:
        return self._calls.get(call_id)

    def __getitem__(self, call_id: str) -> ToolCall:
        return self._calls[call_id]

    def __setitem__(self, call_id: str, call: ToolCall) -> None:
        earlier = self._calls.pop(call_id, None)  # re-inserted last: the most recently updated
        self._size += held_bytes(call) - (held_bytes(earlier) if earlier is not None else 0)
        self._calls[call_id] = call
        if self._size > self.limit:  # else nothing to walk: an update costs O(1)
            self._shrink()

    def _shrink(self) -> None:
        for oldest in self._calls:  # oldest first; only values are replaced, so no copy of the keys
            if self._size <= self.limit:
                return
            self._drop(oldest)

    def _drop(self, call_id: str) -> None:
        call = self._calls[call_id]
        size = kept_size(call)
        lighter = replace(call, output="", diffs=tuple(_not_kept(d, size) if d.kept else d for d in call.diffs))
        self._calls[call_id] = lighter
        self._size += held_bytes(lighter) - held_bytes(call)


def _text(block: dict[str, Any]) -> str:
    if block.get("type") != "content":
        return ""
    inner = block.get("content") or {}
    return str(inner.get("text", "")) if inner.get("type") == "text" else ""

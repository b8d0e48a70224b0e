"""`session/update` payloads (the SDK's models dumped to JSON, camelCase) into the ChatView's
dataclasses, so the view sees no SDK type. No SDK import here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .view import Command, ConfigChoice, ConfigOption, Location, Mode, PlanEntry, ToolCall, ToolDiff, Usage


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
        changes["diffs"] = tuple(
            ToolDiff(str(c.get("path", "")), c.get("oldText"), str(c.get("newText", "")))
            for c in content
            if c.get("type") == "diff"
        )
        changes["output"] = "".join(_text(c) for c in content)
    return replace(call, **changes)


def _text(block: dict[str, Any]) -> str:
    if block.get("type") != "content":
        return ""
    inner = block.get("content") or {}
    return str(inner.get("text", "")) if inner.get("type") == "text" else ""

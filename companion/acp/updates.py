"""`session/update` payloads (the SDK's models dumped to JSON, camelCase) into the ChatView's
dataclasses, so the view sees no SDK type. No SDK import here."""

from __future__ import annotations

from typing import Any

from ..core.files.disk_text import MAX_SHOWN_BYTES
from .view import Command, ConfigChoice, ConfigOption, Mode, PlanEntry, ToolCall, ToolDiff, Usage

# What a tool call's card keeps of its content, in characters. The views show a call's diffs (an
# edit applied without review) and none of its text output; a call may carry far more (a hostile
# agent sent 16 calls of 25 MB). Per call: diffs up to what a review can show, text output up to
# OUTPUT_KEPT (an error message, a command's tail end is not needed). What a chat holds of all its
# calls in total is tool_calls.py's bound.
KEPT_PER_CALL = MAX_SHOWN_BYTES  # 16 Mi characters
OUTPUT_KEPT = 64 * 1024


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


def tool_diffs(content: list[dict[str, Any]]) -> tuple[ToolDiff, ...]:
    """A tool call's `content`'s diffs, as the view shows them: up to KEPT_PER_CALL in all."""
    diffs = [
        ToolDiff(str(c.get("path", "")), c.get("oldText"), str(c.get("newText", "")))
        for c in content
        if c.get("type") == "diff"
    ]
    return _kept_diffs(diffs)


def tool_output(content: list[dict[str, Any]]) -> str:
    """A tool call's `content`'s text, as far as the view needs it (OUTPUT_KEPT)."""
    return _kept_output([_text(c) for c in content])


def tool_terminals(content: list[dict[str, Any]]) -> tuple[str, ...]:
    """The client terminals a tool call's `content` embeds, by id."""
    return tuple(str(c.get("terminalId", "")) for c in content if c.get("type") == "terminal")


def kept_size(call: ToolCall) -> int:
    """The characters of content a call holds."""
    return len(call.output) + sum(len(d.old_text or "") + len(d.new_text) for d in call.diffs)


def _kept_diffs(diffs: list[ToolDiff]) -> tuple[ToolDiff, ...]:
    size = sum(len(d.old_text or "") + len(d.new_text) for d in diffs)
    return tuple(diffs if size <= KEPT_PER_CALL else (not_kept(d, size) for d in diffs))


def not_kept(diff: ToolDiff, size: int) -> ToolDiff:
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


def _text(block: dict[str, Any]) -> str:
    if block.get("type") != "content":
        return ""
    inner = block.get("content") or {}
    return str(inner.get("text", "")) if inner.get("type") == "text" else ""


def hidden_context(text: str) -> bool:
    """A replayed user chunk the user never typed: Gemini CLI 0.61.0's own context turn, a whole
    `<session_context>…</session_context>` block, replayed by session/load (research 40/41 §2)."""
    stripped = text.strip()
    return stripped.startswith("<session_context>") and stripped.endswith("</session_context>")

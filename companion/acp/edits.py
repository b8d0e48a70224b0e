"""What an agent's tool call proposes for a file, as full texts (no SDK import: plain dicts, the
tool call as the SDK dumps it with the protocol's field names).

Gemini CLI sends the whole old and new text in a `diff` block. Claude sends `oldText: null` for a
Write (even when the file exists) and only the replaced snippet for an Edit, so its full after is
rebuilt from `rawInput` (`file_path`, `old_string`, `new_string`, `replace_all`) applied to the
current text (reference acp.md §2, §3).
"""

from __future__ import annotations

from typing import Any

EDIT_KINDS = ("edit", "delete", "move")


class NotRebuildable(ValueError):
    """The full new text cannot be built from the tool call; the message says why."""


def diff_blocks(tool_call: dict[str, Any]) -> list[dict[str, Any]]:
    content = tool_call.get("content") or []
    return [c for c in content if isinstance(c, dict) and c.get("type") == "diff"]


def is_edit(tool_call: dict[str, Any], kind: str | None = None) -> bool:
    """An edit by its kind (edit/delete/move) or by carrying a diff."""
    return (kind or tool_call.get("kind")) in EDIT_KINDS or bool(diff_blocks(tool_call))


def edit_path(tool_call: dict[str, Any]) -> str | None:
    """The file the tool call changes, as the agent named it."""
    for block in diff_blocks(tool_call):
        if isinstance(block.get("path"), str):
            return block["path"]
    raw = tool_call.get("rawInput")
    if isinstance(raw, dict):
        for key in ("file_path", "path", "filePath"):
            if isinstance(raw.get(key), str):
                return raw[key]
    for location in tool_call.get("locations") or []:
        if isinstance(location, dict) and isinstance(location.get("path"), str):
            return location["path"]
    return None


def proposed_text(tool_call: dict[str, Any], before: str) -> str:
    """The file's full text after the tool call, given its full text `before` (the buffer or disk)."""
    raw: dict[str, Any] = tool_call["rawInput"] if isinstance(tool_call.get("rawInput"), dict) else {}
    if isinstance(raw.get("old_string"), str) and isinstance(raw.get("new_string"), str):
        return _replace(before, raw["old_string"], raw["new_string"], bool(raw.get("replace_all")))
    if isinstance(raw.get("edits"), list):  # Claude's MultiEdit: each edit applies to the previous result
        text = before
        for edit in raw["edits"]:
            if not isinstance(edit, dict) or not isinstance(edit.get("old_string"), str):
                raise NotRebuildable("one of its edits has no old_string")
            text = _replace(text, edit["old_string"], str(edit.get("new_string", "")), bool(edit.get("replace_all")))
        return text
    for block in diff_blocks(tool_call):
        if isinstance(block.get("newText"), str):
            return block["newText"]
    if isinstance(raw.get("content"), str):
        return raw["content"]
    raise NotRebuildable("it carries neither a diff nor the new text")


def _replace(text: str, old: str, new: str, replace_all: bool) -> str:
    count = text.count(old) if old else 0
    if count == 0:
        raise NotRebuildable("the text it replaces is not in the file as it is now")
    if count > 1 and not replace_all:
        raise NotRebuildable(f"the text it replaces occurs {count} times in the file, so the change is ambiguous")
    return text.replace(old, new) if replace_all else text.replace(old, new, 1)

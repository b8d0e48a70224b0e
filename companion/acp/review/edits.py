"""What an agent's tool call proposes for a file, as full texts (no SDK import: plain dicts, the
tool call as the SDK dumps it with the protocol's field names).

Decided from the `diff` block itself, whatever the agent calls its arguments (reference acp.md §1):
- `oldText` null, or the file's whole text (the buffer's or the disk's, line breaks aside): a
  whole-file diff, `newText` is the new text (Gemini CLI; Claude's Write; agents that send the
  snippet in `rawInput` and the whole file in the diff);
- any other `oldText` is a snippet: replaced in the current text, once, where it occurs exactly
  once (else refused), or everywhere with the tool's `replace_all` (Claude's Edit sends the
  snippet as the diff; MultiEdit one diff per edit, each applied to the previous result).
Without a diff block, `rawInput` is read under its usual names, snake_case or camelCase
(`old_string`/`oldString`, `new_string`/`newString`, `replace_all`/`replaceAll`, `edits`,
`content`); anything else is refused, never guessed. Line breaks are compared as line breaks (a CRLF
file, an agent's LF snippet), and the text built keeps the file's own breaks.
"""

from __future__ import annotations

from typing import Any

from ...core.files.textfile import dominant_newline, keep_line_endings, same_text, to_newline

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
    raw = _raw_input(tool_call)
    for key in ("filepath", "path", "absolutepath", "filename"):
        if isinstance(raw.get(key), str):
            return raw[key]
    for location in tool_call.get("locations") or []:
        if isinstance(location, dict) and isinstance(location.get("path"), str):
            return location["path"]
    return None


def proposed_text(tool_call: dict[str, Any], before: str, disk: str | None = None) -> str:
    """The file's full text after the tool call, given its full text `before` (the buffer or the
    disk) and, when `before` is an unsaved buffer, `disk`: the text the agent may have read."""
    raw = _raw_input(tool_call)
    path = edit_path(tool_call)
    blocks = [b for b in diff_blocks(tool_call) if isinstance(b.get("newText"), str) and b.get("path") in (None, path)]
    for block in blocks:
        old = block.get("oldText")
        if old is None or same_text(old, before) or (disk is not None and same_text(old, disk)):
            return _with_breaks_of(before, block["newText"])
    if blocks:
        return _apply(before, [(b["oldText"], b["newText"]) for b in blocks], _replace_all_flags(raw, len(blocks)))
    old, new = raw.get("oldstring", raw.get("oldstr")), raw.get("newstring", raw.get("newstr"))
    if isinstance(old, str) and isinstance(new, str):
        return _apply(before, [(old, new)], [bool(raw.get("replaceall"))])
    if isinstance(raw.get("edits"), list):
        edits = [_normalised(e) if isinstance(e, dict) else {} for e in raw["edits"]]
        if not all(isinstance(e.get("oldstring"), str) for e in edits):
            raise NotRebuildable("one of its edits has no old_string")
        pairs = [(str(e["oldstring"]), str(e.get("newstring", ""))) for e in edits]
        return _apply(before, pairs, [bool(e.get("replaceall")) for e in edits])
    for key in ("content", "newcontent"):
        if isinstance(raw.get(key), str):
            return _with_breaks_of(before, raw[key])
    raise NotRebuildable("it carries neither a diff nor the new text")


def agent_text(tool_call: dict[str, Any], before: str, disk: str | None = None) -> str | None:
    """The whole new text exactly as the agent sent it (a whole-file diff's raw `newText`, or
    `rawInput`'s `content`), before `proposed_text` keeps the file's own line breaks on it: what an
    agent writing the file itself writes. None for a snippet edit (the agent's bytes are unknown)."""
    path = edit_path(tool_call)
    for block in diff_blocks(tool_call):
        if isinstance(block.get("newText"), str) and block.get("path") in (None, path):
            old = block.get("oldText")
            if old is None or same_text(old, before) or (disk is not None and same_text(old, disk)):
                return block["newText"]
    if diff_blocks(tool_call):
        return None
    raw = _raw_input(tool_call)
    return next((raw[k] for k in ("content", "newcontent") if isinstance(raw.get(k), str)), None)


def _raw_input(tool_call: dict[str, Any]) -> dict[str, Any]:
    raw = tool_call.get("rawInput")
    return _normalised(raw) if isinstance(raw, dict) else {}


def _normalised(arguments: dict[str, Any]) -> dict[str, Any]:
    """Argument names without case, `_` or `-`: `old_string`, `oldString` and `OldString` are one."""
    return {str(k).replace("_", "").replace("-", "").lower(): v for k, v in arguments.items()}


def _replace_all_flags(raw: dict[str, Any], count: int) -> list[bool]:
    """Each diff block's `replace_all`: MultiEdit's per edit, else the tool's own for a single one."""
    edits = raw.get("edits")
    if isinstance(edits, list) and len(edits) == count:
        return [bool(_normalised(e).get("replaceall")) if isinstance(e, dict) else False for e in edits]
    return [bool(raw.get("replaceall"))] * count if count == 1 else [False] * count


def _with_breaks_of(before: str, text: str) -> str:
    """`text` with the lines it shares with `before` ending as they end there (what the write keeps)."""
    newline = dominant_newline(before)
    if newline is None or ("\r" not in before and "\r" not in text):
        return text  # a new file, or LF on both sides: nothing to restore
    return keep_line_endings(before, text, newline)


def _apply(before: str, pairs: list[tuple[str, str]], replace_all: list[bool]) -> str:
    """Each (old, new) replaced in turn, line breaks compared as line breaks."""
    text = to_newline(before, "\n")
    for (old, new), every in zip(pairs, replace_all, strict=True):
        text = _replace(text, to_newline(old, "\n"), to_newline(new, "\n"), every)
    return _with_breaks_of(before, text)


def _replace(text: str, old: str, new: str, replace_all: bool) -> str:
    count = text.count(old) if old else 0
    if count == 0:
        raise NotRebuildable("the text it replaces is not in the file as it is now")
    if count > 1 and not replace_all:
        raise NotRebuildable(f"the text it replaces occurs {count} times in the file, so the change is ambiguous")
    return text.replace(old, new) if replace_all else text.replace(old, new, 1)

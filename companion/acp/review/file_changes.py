"""The files one tool call changes, each with what it proposes for it: a permission that names
several files is reviewed file by file (never one review for several), and a rename as a rename.

Where an agent says which files a call touches (no SDK import; the call as the SDK dumps it):
- several `diff` blocks with different paths: one change per path, its blocks only;
- a patch in `rawInput` (an argument named for one, `_PATCH_KEYS`): Codex's apply_patch format
  (`*** Begin Patch`, `*** Update File:` / `*** Add File:` / `*** Delete File:`, `*** Move to:`,
  `@@` hunks of ` `/`-`/`+` lines) or a unified diff with `---`/`+++` headers (`/dev/null` for
  a new or deleted file, a different `+++` path for a rename);
- kind `move`: the source from `rawInput` (`source`, `from`, `old_path`, …) or the first
  location, the target from the diff's path, `rawInput` (`destination`, `to`, `new_path`, …) or
  the second location; a diff of the source's text is the content change;
- `locations` (`location_paths`): files the call says it affects; one it carries no change for
  cannot be reviewed, so session.py refuses the whole call, never reviewing a subset.
`file_changes` returns [] for the ordinary call (one file, no rename, no patch): edits.py decides it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from .edits import NotRebuildable, _normalised, agent_text, diff_blocks, edit_path, proposed_text

# Where agents put a patch: Codex's freeform `input` and `command: ["apply_patch", PATCH]`,
# opencode's `patchText`, others' `patch` / `diff`.
_PATCH_KEYS = ("input", "patch", "patchtext", "diff", "unifieddiff", "command", "args", "cmd")
_SOURCE_KEYS = ("source", "from", "oldpath", "sourcepath", "src", "frompath")
_PATH_KEYS = ("filepath", "path", "absolutepath", "filename")  # edits.edit_path's, normalised
_TARGET_KEYS = ("destination", "to", "newpath", "targetpath", "dest", "dst", "topath", "target")


@dataclass(frozen=True)
class FileChange:
    """One file of a tool call: `path` as the agent named it (a rename's source), `new_path` a
    rename's target, `delete` a deletion; `call` the part of the tool call about this file only
    (for edits.proposed_text), or `text` the file's whole new text when the patch carries it."""

    path: str
    new_path: str | None = None
    delete: bool = False
    call: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    hunks: tuple[tuple[str, str], ...] = ()  # a patch's (old, new) pieces, applied in turn

    @property
    def target(self) -> str:
        """The file that holds the proposal once the change is made."""
        return self.new_path or self.path

    def proposal(self, before: str, disk: str | None = None) -> str:
        """The target's full new text, given the source's text `before` (NotRebuildable if not)."""
        if self.delete:
            return ""
        if self.text is not None:
            return self.text
        if self.hunks:
            edits = [{"old_string": old, "new_string": new} for old, new in self.hunks]
            return proposed_text({"rawInput": {"edits": edits}}, before, disk)
        if not diff_blocks(self.call) and not self.call.get("rawInput"):
            return before  # a rename alone: the text moves unchanged
        return proposed_text(self.call, before, disk)

    def agent_text(self, before: str, disk: str | None = None) -> str | None:
        """The whole new text as the agent sent it (edits.agent_text), None when it sent none."""
        if self.delete or self.hunks:
            return None
        if self.text is not None:
            return self.text
        return agent_text(self.call, before, disk) if diff_blocks(self.call) or self.call.get("rawInput") else None

    def describe(self) -> str:
        if self.new_path is not None:
            return f"rename {self.path} → {self.new_path}"
        return f"delete {self.path}" if self.delete else self.path


def file_changes(tool_call: dict[str, Any], kind: str | None = None) -> list[FileChange]:
    """Each file the call changes, or [] for an ordinary one-file edit. NotRebuildable when its
    patch cannot be read or a move does not say from where to where."""
    kind = kind or tool_call.get("kind")
    patch = _patch_of(tool_call)
    structured = _structured_changes(tool_call)
    if structured is not None:
        changes = _codex_changes(tool_call, structured)
        one = changes[0] if len(changes) == 1 else None
        if one and one.new_path is None and not one.delete and one.call:
            return []  # one file with its whole-text diff: edits.py as always
        return changes
    if patch is not None:
        try:
            changes = _codex_patch(patch) if "*** Begin Patch" in patch else _unified_diff(patch)
        except NotRebuildable:
            one = edit_path(tool_call)
            if one is None or _patch_paths(patch) != {one} or not _has_diff_for(tool_call, one):
                raise
            # opencode's write of a new file: a `@@ -0,0` hunk without /dev/null (lines with no
            # context), and the whole text in its diff block, which decides instead
            patch, changes = None, _by_diff_path(tool_call)
    elif kind == "move":
        changes = [_move(tool_call)]
    else:
        changes = _by_diff_path(tool_call)
    if len(changes) == 1 and changes[0].new_path is None and patch is None:
        return []  # one file: edits.py as always
    return changes


def _has_diff_for(tool_call: dict[str, Any], path: str) -> bool:
    return any(b.get("path") == path and isinstance(b.get("newText"), str) for b in diff_blocks(tool_call))


def location_paths(tool_call: dict[str, Any]) -> list[str]:
    """The files the call's `locations` name, each once: every one must be among the files it
    changes (session.py compares them as real paths), or the call is refused whole."""
    paths = [loc.get("path") for loc in tool_call.get("locations") or [] if isinstance(loc, dict)]
    return list(dict.fromkeys(p for p in paths if isinstance(p, str)))


def named_paths(tool_call: dict[str, Any]) -> list[str]:
    """Every file the call names: its `locations`, its `rawInput`'s file arguments (`file_path`,
    `path`, …) and its diff blocks' paths, each once. Each must be among the files it changes and
    gets reviewed (session.py), or the call is refused whole: a rawInput editing a.txt beside a
    diff block of b.txt must never pass as a review of b.txt alone."""
    raw = tool_call.get("rawInput")
    raw = _normalised(raw) if isinstance(raw, dict) else {}
    paths = [raw.get(k) for k in _PATH_KEYS]
    paths += [b.get("path") for b in diff_blocks(tool_call)]
    return list(dict.fromkeys([*location_paths(tool_call), *(p for p in paths if isinstance(p, str))]))


def _by_diff_path(tool_call: dict[str, Any]) -> list[FileChange]:
    blocks = [b for b in diff_blocks(tool_call) if isinstance(b.get("path"), str)]
    paths = list(dict.fromkeys(b["path"] for b in blocks))
    if len(paths) <= 1:
        return [FileChange(paths[0], call=tool_call)] if paths else []
    # Several files: each is rebuilt from its own blocks; the call's rawInput describes no one file.
    return [FileChange(p, call={"content": [b for b in blocks if b["path"] == p]}) for p in paths]


def _move(tool_call: dict[str, Any]) -> FileChange:
    raw = tool_call.get("rawInput")
    raw = _normalised(raw) if isinstance(raw, dict) else {}
    locations = location_paths(tool_call)
    source = next((raw[k] for k in _SOURCE_KEYS if isinstance(raw.get(k), str)), None)
    target = next((raw[k] for k in _TARGET_KEYS if isinstance(raw.get(k), str)), None)
    diff_paths = [b["path"] for b in diff_blocks(tool_call) if isinstance(b.get("path"), str)]
    source = source or (locations[0] if locations else None)
    target = target or next((p for p in diff_paths + locations[1:] if p != source), None)
    if source is None or target is None:
        raise NotRebuildable("it moves a file but does not say from where to where")
    # The diff (of the source's text, whatever path it names) is the content change.
    blocks = [{**b, "path": None} for b in diff_blocks(tool_call)]
    return FileChange(source, new_path=target, call={"content": blocks} if blocks else {})


def _structured_changes(tool_call: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """Codex's `rawInput.changes`: each changed file's path (a rename's source) mapped to
    `{type: "add", content}`, `{type: "delete"}` or `{type: "update", unified_diff, move_path}`;
    None when the call carries no such map."""
    raw = tool_call.get("rawInput")
    changes = raw.get("changes") if isinstance(raw, dict) else None
    if not isinstance(changes, dict) or not changes:
        return None
    kinds = ("add", "delete", "update")
    if not all(isinstance(k, str) and isinstance(v, dict) and v.get("type") in kinds for k, v in changes.items()):
        return None
    return changes


def _codex_changes(tool_call: dict[str, Any], changes: dict[str, dict[str, Any]]) -> list[FileChange]:
    """One FileChange per entry of Codex's `changes`. A file's whole-text diff block (Codex names a
    rename's target there, with the source's text as `oldText`) is its proposal when there is one:
    it is the text the agent writes; else the entry's own content or unified diff."""
    blocks = [b for b in diff_blocks(tool_call) if isinstance(b.get("path"), str)]
    result: list[FileChange] = []
    for path, change in changes.items():
        if change["type"] == "delete":
            result.append(FileChange(path, delete=True))
            continue
        move = change.get("move_path")
        new_path = move if isinstance(move, str) and move != path else None
        own = [{**b, "path": None} for b in blocks if b["path"] == (new_path or path)]
        if own:
            result.append(FileChange(path, new_path=new_path, call={"content": own}))
        elif change["type"] == "add" and isinstance(change.get("content"), str):
            result.append(FileChange(path, text=change["content"]))
        elif change["type"] == "update" and isinstance(change.get("unified_diff"), str):
            read = _unified_section(path, path, change["unified_diff"].splitlines())
            result.append(replace(read, new_path=new_path))
        else:
            raise NotRebuildable(f"its change of {path} carries neither a diff nor the new text")
    return result


def _patch_of(tool_call: dict[str, Any]) -> str | None:
    """The patch the tool applies, from an argument named for one (a file's `content` that holds a
    diff is a file's text, never a patch to apply)."""
    raw = tool_call.get("rawInput")
    values = [v for k, v in _normalised(raw).items() if k in _PATCH_KEYS] if isinstance(raw, dict) else [raw]
    for value in values:
        if isinstance(value, list):  # apply_patch's `command: ["apply_patch", PATCH]`
            value = next((v for v in value if isinstance(v, str) and _is_patch(v)), None)
        if isinstance(value, str) and _is_patch(value):
            return value
    return None


def _patch_paths(patch: str) -> set[str]:
    """Every file a patch names in its headers (never /dev/null)."""
    found = re.findall(r"^(?:\+\+\+|---) (.+)$", patch, re.M)
    found = [_diff_path(p) for p in found]
    found += [p.strip() for p in re.findall(r"^\*\*\* (?:(?:Update|Add|Delete) File|Move to): (.+)$", patch, re.M)]
    return {p for p in found if p != "/dev/null"}


def _is_patch(text: str) -> bool:
    return "*** Begin Patch" in text or bool(re.search(r"^\+\+\+ ", text, re.M) and re.search(r"^--- ", text, re.M))


def _codex_patch(patch: str) -> list[FileChange]:
    """Codex's apply_patch: one section per file, `@@` hunks of context/removed/added lines."""
    changes: list[FileChange] = []
    op, path, new_path, lines = "", "", None, []  # the section being read
    for line in [*patch.splitlines(), "*** End Patch"]:
        header = re.match(r"\*\*\* (Update|Add|Delete) File: (.+)$", line)
        if header or line.startswith("*** End Patch"):
            if op:
                changes.append(_codex_section(op, path, new_path, lines))
            if header:
                op, path, new_path, lines = header.group(1), header.group(2).strip(), None, []
            else:
                op = ""
        elif line.startswith("*** Move to: ") and op:
            new_path = line[len("*** Move to: ") :].strip()
        elif op and not line.startswith(("*** Begin Patch", "*** End of File")):
            lines.append(line)
    return changes


def _codex_section(op: str, path: str, new_path: str | None, lines: list[str]) -> FileChange:
    if op == "Delete":
        return FileChange(path, delete=True)
    if op == "Add":
        if any(not line.startswith("+") for line in lines):
            raise NotRebuildable(f"its patch adds {path} with lines that do not start with '+'")
        return FileChange(path, text="".join(line[1:] + "\n" for line in lines))
    hunks: list[tuple[str, str]] = []
    old: list[str] = []
    new: list[str] = []
    last: tuple[list[str], ...] = ()
    for line in [*lines, "@@"]:
        if line.startswith("@@"):
            if old or new:
                hunks.append(_hunk(path, old, new))
            old, new, last = [], [], ()
        else:
            last = _patch_line(path, line, old, new, last)
    return FileChange(path, new_path=new_path, hunks=tuple(hunks))


def _patch_line(
    path: str, line: str, old: list[str], new: list[str], last: tuple[list[str], ...]
) -> tuple[list[str], ...]:
    """Add one patch line (its line break included) to the sides it belongs to, which it returns;
    `last`: the sides the line before went to, whose final break a "\\ No newline" marker removes."""
    sign, rest = line[:1], line[1:] + "\n"
    if line == "" or sign == " ":  # context (an empty line is an empty context line)
        old.append(rest)
        new.append(rest)
        return (old, new)
    if sign == "-":
        old.append(rest)
        return (old,)
    if sign == "+":
        new.append(rest)
        return (new,)
    if line.startswith("\\"):  # "\ No newline at end of file": the line before has no break
        for side in last:
            if side:
                side[-1] = side[-1].removesuffix("\n")
        return ()
    raise NotRebuildable(f"its patch of {path} has a line that is not context, '-' or '+': {line[:60]!r}")


def _hunk(path: str, old: list[str], new: list[str]) -> tuple[str, str]:
    if not any(x.removesuffix("\n") for x in old):
        raise NotRebuildable(f"its patch of {path} adds lines with no context to place them")
    return "".join(old), "".join(new)


def _unified_diff(patch: str) -> list[FileChange]:
    """A unified diff of one or more files (`--- a/x` / `+++ b/x`, `@@ -l,n +l,n @@` hunks)."""
    sections: list[tuple[str, str, list[str]]] = []
    lines = patch.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            sections.append((_diff_path(lines[i][4:]), _diff_path(lines[i + 1][4:]), []))
            i += 2
            continue
        if sections and not lines[i].startswith(
            ("diff ", "index ", "similarity ", "rename ", "new file", "deleted file")
        ):
            sections[-1][2].append(lines[i])
        i += 1
    return [_unified_section(*s) for s in sections]


def _diff_path(header: str) -> str:
    name = header.split("\t")[0].strip()
    return name[2:] if name.startswith(("a/", "b/")) else name


def _unified_section(old_path: str, new_path: str, lines: list[str]) -> FileChange:
    old: list[str] = []
    new: list[str] = []
    hunks: list[tuple[str, str]] = []
    last: tuple[list[str], ...] = ()
    for line in [*lines, "@@"]:
        if line.startswith("@@"):
            if old or new:
                hunks.append(("".join(old), "".join(new)))
            old, new, last = [], [], ()
        else:
            last = _patch_line(new_path, line, old, new, last)
    if old_path == "/dev/null":
        return FileChange(new_path, text="".join(n for _, n in hunks))
    if new_path == "/dev/null":
        return FileChange(old_path, delete=True)
    for piece, _ in hunks:
        if not piece:
            raise NotRebuildable(f"its patch of {old_path} adds lines with no context to place them")
    return FileChange(old_path, new_path=None if new_path == old_path else new_path, hunks=tuple(hunks))

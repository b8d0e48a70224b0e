"""A turn's change set: every file that differs between the checkpoint before a prompt and the state
recorded when the turn ended, with +/- line counts for text, who made it and whether it was reviewed.

A path that became a folder is listed as deleted (its files as added), one that was a folder and
became a file as added; a file that became a FIFO, device, socket or symbolic link is listed as
modified with a note, and never read. Attribution comes from the caller's record of what the agent
wrote through us (`turn_writes.py`); everything else is "outside" (a shell command, the agent
writing by itself without telling, another program).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..files import line_diff
from ..files.textfile import BinaryFile, lines, text_of
from .checkpoint_store import CheckpointStore
from .checkpoints import Checkpoint, Entry

OUTSIDE = "outside"
# The note of a file the user reviewed whose bytes at the turn's end are not the ones accepted
# (core/history/turn_writes.py): never "reviewed", whoever wrote them.
CHANGED_AFTER_REVIEW = "changed after your review"


@dataclass(frozen=True)
class FileChange:
    path: str
    change: str  # added | modified | deleted
    before: Entry | None
    after: Entry | None
    by: str
    reviewed: bool
    added: int | None = None  # lines; None for binary or unread content
    removed: int | None = None
    binary: bool = False
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "change": self.change, "reviewed": self.reviewed, "by": self.by}

    def line(self) -> str:
        """One line of `chat`'s summary: change, path, +/-, by, reviewed."""
        counts = "binary" if self.binary else "" if self.added is None else f"+{self.added} -{self.removed}"
        reviewed = "reviewed" if self.reviewed else "not reviewed"
        parts = [self.change, self.path, counts, f"by {self.by}", reviewed, self.note]
        return "  ".join(p for p in parts if p)


def _file_side(entry: Entry | None) -> Entry | None:
    """A folder is not a file of the change set: its own files are."""
    return None if entry is None or entry.kind == "dir" else entry


def changed_paths(before: Checkpoint, after: Checkpoint) -> list[str]:
    """Every path (folders included) whose entry differs, sorted."""
    paths = set(before.entries) | set(after.entries)
    return sorted(p for p in paths if not same_entry(before.entries.get(p), after.entries.get(p)))


def same_entry(a: Entry | None, b: Entry | None) -> bool:
    """Both absent, or what a restore brings back is equal."""
    return (a is None and b is None) or (a is not None and b is not None and a.same_content(b))


def diff(
    before: Checkpoint,
    after: Checkpoint,
    store: CheckpointStore,
    writes: Mapping[str, bool],
    agent: str,
    counted: bool = True,
    changed: Collection[str] = (),
) -> list[FileChange]:
    """The files that differ, sorted by path; `writes`: path -> reviewed, for what the agent wrote.
    `counted`: with +/- line counts (each changed file's two contents read and compared).
    `changed`: the reviewed files whose bytes were not the accepted ones (CHANGED_AFTER_REVIEW)."""
    found: list[FileChange] = []
    for path in changed_paths(before, after):
        old, new = _file_side(before.entries.get(path)), _file_side(after.entries.get(path))
        if old is None and new is None:
            continue  # a folder appeared or went: its files are listed
        change = "added" if old is None else "deleted" if new is None else "modified"
        by = agent if path in writes else OUTSIDE
        change_of_file = FileChange(path, change, old, new, by, writes.get(path, False))
        if path in changed:
            change_of_file = replace(change_of_file, reviewed=False, note=CHANGED_AFTER_REVIEW)
        found.append(_counted(change_of_file, store) if counted else change_of_file)
    return found


def _counted(change: FileChange, store: CheckpointStore) -> FileChange:
    old, new = change.before, change.after
    note = _note(old, new)
    if note:
        return replace(change, note="; ".join(n for n in (change.note, note) if n))
    try:
        old_bytes = store.read_blob(old.digest) if old is not None else b""
        new_bytes = store.read_blob(new.digest) if new is not None else b""
    except OSError as exc:
        return replace(change, note="; ".join(n for n in (change.note, f"content not available: {exc}") if n))
    try:
        added, removed = line_counts(old_bytes, new_bytes)
    except BinaryFile:  # what the review calls binary (textfile.decode)
        return replace(change, binary=True)
    return replace(change, added=added, removed=removed)


def _note(old: Entry | None, new: Entry | None) -> str:
    """Why the content is not compared, or "" when both sides are covered regular files."""
    for side, entry in (("now", new), ("before", old)):
        if entry is None:
            continue
        if entry.kind == "symlink":
            return f"{side} a symbolic link to {entry.target}"
        if not entry.covered:
            return f"{side} not covered ({entry.reason})"
    if old is not None and new is not None and old.digest == new.digest:
        return "executable bit " + ("set" if new.mode & 0o111 else "cleared")
    return ""


def line_counts(old: bytes, new: bytes) -> tuple[int, int]:
    """Lines added and removed from `old` to `new` (as a unified diff counts them), each decoded and
    split into lines as the review shows it (`textfile`); BinaryFile when either is not text."""
    a, b = lines(text_of(old)), lines(text_of(new))
    added = removed = 0
    for tag, i1, i2, j1, j2 in line_diff.opcodes(a, b):
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed

"""Restore the workspace to any checkpoint of a chat: first a plan of what will change, then the
restore with the user's choice for each conflict.

A conflict is a file the restore would write whose current state is not the one the last turn left
(`settled`, the turn-end checkpoint, updated by each revert and restore): someone changed it after the
agent, so both texts are shown and the user chooses "take the checkpoint" or "keep mine". An open
buffer with unsaved text that differs from the disk is a conflict too. A conflict the user does not
take is left exactly as it is. Applying refuses, nothing written, when a file it would write is no
longer as the plan saw it (`restore.py` does the writing under the same rule as a revert).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ..files.paths import is_inside
from ..files.textfile import BinaryFile, decode, same_text
from .change_set import OUTSIDE, FileChange, changed_paths, diff, same_entry
from .checkpoint_store import CheckpointStore
from .checkpoints import Checkpoint, Entry, unknown_before
from .restore import RestoreRefused, restore


@dataclass(frozen=True)
class Conflict:
    """A file changed after the agent: what the checkpoint has and what is there now (None: no file;
    a binary or unreadable side is described in words). `in_buffer`: "now" is an unsaved buffer."""

    path: str
    checkpoint_text: str | None
    current_text: str | None
    in_buffer: bool = False


@dataclass(frozen=True)
class RestorePlan:
    label: str  # "prompt 2", "before restore to prompt 2"
    target: Checkpoint
    current: Checkpoint  # the workspace when the plan was made
    changes: list[FileChange]  # each file the restore changes, +/- from now to the checkpoint
    conflicts: list[Conflict]
    not_covered: list[str]  # the checkpoint did not keep their content: left as they are
    writes: tuple[str, ...]  # every path (folders too) written when every conflict is taken

    def lines(self) -> list[str]:
        """What will change, one line a file (the headless `/restore` prints these)."""
        conflicted = {c.path for c in self.conflicts}
        shown = [_line(c, c.path in conflicted) for c in self.changes]
        return shown + [f"not covered  {p}  (left as it is)" for p in self.not_covered]


def _line(change: FileChange, conflict: bool) -> str:
    verb = {"added": "create", "deleted": "delete", "modified": "change"}[change.change]
    counts = "binary" if change.binary else "" if change.added is None else f"+{change.added} -{change.removed}"
    parts = [verb, change.path, counts, change.note, "CONFLICT: changed after the agent" if conflict else ""]
    return "  ".join(p for p in parts if p)


def make_plan(
    store: CheckpointStore,
    label: str,
    target: Checkpoint,
    current: Checkpoint,
    settled: Checkpoint,
    buffers: Mapping[str, str] | None = None,
) -> RestorePlan:
    """The plan to bring `current` back to `target`. `buffers`: path -> the unsaved text of its open
    buffer (only dirty ones)."""
    paths = changed_paths(current, target)
    # Ignored when `target` was taken (or below a folder ignored then): it may have existed, unknown how.
    unknown = unknown_before(target, [p for p in paths if p not in target.entries])
    not_covered = [p for p in paths if p in unknown or (p in target.entries and not target.entries[p].covered)]
    writes = tuple(p for p in paths if p not in not_covered)
    not_covered = [p for p in not_covered if not _is_dir(current.entries.get(p))]  # a folder: its files are listed
    changes = [c for c in diff(current, target, store, {}, OUTSIDE) if c.path not in not_covered]
    buffers = {os.path.abspath(p): text for p, text in (buffers or {}).items()}
    conflicts = [c for p in writes if (c := _conflict(store, p, target, current, settled, buffers.get(p))) is not None]
    return RestorePlan(label, target, current, changes, conflicts, not_covered, writes)


def _is_dir(entry: Entry | None) -> bool:
    return entry is not None and entry.kind == "dir"


def _conflict(
    store: CheckpointStore, path: str, target: Checkpoint, current: Checkpoint, settled: Checkpoint, buffer: str | None
) -> Conflict | None:
    now, then = current.entries.get(path), target.entries.get(path)
    if (now is not None and now.kind == "dir") or (now is None and then is not None and then.kind == "dir"):
        return None  # a folder: its files are what conflict
    on_disk = _text(store, now)
    if buffer is not None and (on_disk is None or not same_text(buffer, on_disk)):
        return Conflict(path, _text(store, then), buffer, in_buffer=True)
    if same_entry(now, settled.entries.get(path)):
        return None
    return Conflict(path, _text(store, then), on_disk)


def _text(store: CheckpointStore, entry: Entry | None) -> str | None:
    """The text to show for one side: None for no file."""
    if entry is None:
        return None
    if entry.kind == "symlink":
        return f"(a symbolic link to {entry.target})"
    if not entry.digest:
        return f"(a {entry.kind}: {entry.reason or 'not read'})"
    try:
        data = store.read_blob(entry.digest)
    except OSError as exc:
        return f"(its content is not available: {exc})"
    try:
        return decode(data)[0]
    except BinaryFile:
        return f"(binary, {len(data)} bytes)"


def apply_plan(store: CheckpointStore, plan: RestorePlan, now: Checkpoint, take: Collection[str]) -> Checkpoint:
    """Restore every file of the plan but the conflicts not in `take` (kept as they are, with the
    folders that hold them). `now`: a checkpoint taken just before, which the undo keeps. Refused,
    nothing written, when a file to write is no longer as the plan saw it. Returns the new state."""
    kept = [c.path for c in plan.conflicts if c.path not in take]
    writes = [p for p in plan.writes if not any(k == p or is_inside(k, p) for k in kept)]
    for path in writes:
        if not same_entry(plan.current.entries.get(path), now.entries.get(path)):
            raise RestoreRefused(
                f"{path} changed after the restore plan was shown, so nothing was written; "
                "restore again to see the new plan."
            )
    if not writes:
        return now
    return restore(store, plan.target, now, writes)[0]

"""Where a change set comes from, and its file I/O (issue #30). Every method here blocks on the
disk: call it on a worker thread (the change-set tab runs each on a thread of its own), never on
Sublime's main thread.

- `TurnsSource`: a chat's last turn (core `Turns`: the checkpoint before the prompt, the state at
  the turn's end, what the agent wrote through us).
- `apply_text`: the file's new text written through the guarded write path (`core/files/writing.py`),
  refused when the file is no longer what the review showed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol

from ...core.files import disk_text, line_diff
from ...core.files.disk_text import DiskText
from ...core.files.paths import PathPolicy
from ...core.files.textfile import BinaryFile, TextFormat, decode, encode, with_breaks_of_sources
from ...core.files.writing import existing_format, write_bytes
from ...core.history.change_set import FileChange
from ...core.history.turns import Turns


class ChangeSource(Protocol):
    """One change set: the files, each file's text at the checkpoint, and revert (worker thread)."""

    title: str

    @property
    def folders(self) -> Sequence[str]: ...

    def changes(self) -> list[FileChange]: ...

    def checkpoint_bytes(self, change: FileChange) -> bytes: ...

    def revert(self, paths: Sequence[str] | None) -> list[str]:
        """Back to the checkpoint (all when None); RestoreRefused writes nothing."""
        ...

    def applied(self, path: str, shown: str, written: str) -> None:
        """The user applied `written` over the turn's `shown` text of `path` (hunks reverted or edited)."""
        ...


class TurnsSource:
    """The last turn a chat left in these folders."""

    def __init__(self, turns: Turns, folders: Sequence[str], title: str) -> None:
        self.turns = turns
        self._folders = list(folders)
        self.title = title

    @property
    def folders(self) -> Sequence[str]:
        return self._folders

    def changes(self) -> list[FileChange]:
        return self.turns.change_set(counted=True)

    def checkpoint_bytes(self, change: FileChange) -> bytes:
        return self.turns.store.read_blob(change.before.digest) if change.before is not None else b""

    def revert(self, paths: Sequence[str] | None) -> list[str]:
        return self.turns.revert(paths)  # the chat's next prompt tells the agent (Turns.revert)

    def applied(self, path: str, shown: str, written: str) -> None:
        """The turn's end state takes the user's version (a later Revert of the file is not refused
        for it), and the chat's next prompt tells the agent which lines of its version went."""
        self.turns.applied(path, changed_lines(shown, written))


def changed_lines(agent: str, final: str) -> list[tuple[int, int]]:
    """The (first, last) lines of `agent`'s text that differ in `final` (1-based; a place where
    lines were put back between two lines names the line before it)."""
    old, new = agent.splitlines(), final.splitlines()
    found: list[tuple[int, int]] = []
    for tag, i1, i2, _j1, _j2 in line_diff.opcodes(old, new):
        if tag != "equal":
            found.append((i1 + 1, i2) if i2 > i1 else (max(i1, 1), max(i1, 1)))
    return found


class NotReviewable(Exception):
    """The file cannot be shown as text; the message says why and what to do instead."""


def checkpoint_text(source: ChangeSource, change: FileChange) -> str:
    """The file's text at the checkpoint ("" when the turn added it)."""
    if change.binary or change.note:
        raise NotReviewable(f"{_name(change)}: {change.note or 'a binary file'}; Revert or Keep it as a whole.")
    try:
        return decode(source.checkpoint_bytes(change), _name(change))[0]
    except BinaryFile:
        raise NotReviewable(f"{_name(change)} was a binary file; Revert or Keep it as a whole.") from None


def current_text(change: FileChange) -> DiskText:
    """What the file holds now (`not_shown` says why it cannot be reviewed)."""
    return disk_text.read(change.path)


class ApplyRefused(Exception):
    """Nothing was written; the message (one line) says why and what to do."""


def apply_text(folders: Sequence[str], path: str, text: str, shown: DiskText, checkpoint: str) -> bytes:
    """Write `text` (the review's, every break "\n") to `path`, unless the file changed on disk
    since `shown` was read; returns the bytes written. Each line is stored with its own break: a
    line of the file now (the agent's) as it is there, a line put back from `checkpoint` (a
    reverted hunk) as it was at the checkpoint, a line the user typed with the file's line ending.
    The encoding and BOM are the file's now (a reverted line is its checkpoint text in them)."""
    now = disk_text.read(path)
    if disk_text.changed(shown, now):
        raise ApplyRefused(
            f"{os.path.basename(path)} changed on disk since its review opened; nothing was written. "
            "Open it again from the change set to see the new text."
        )
    policy = PathPolicy(folders)
    target = policy.resolve(path, must_exist=False)
    name = os.path.basename(path)
    fmt = existing_format(target, name)
    lines = with_breaks_of_sources(text, shown.text, checkpoint, fmt.newline or "\n")
    data = encode(lines, TextFormat(fmt.encoding, fmt.bom, None), name)  # breaks as composed
    write_bytes(policy, target, data, name)
    return data


def _name(change: FileChange) -> str:
    return os.path.basename(change.path)

"""Checkpoints for the agents in a terminal (Gemini CLI, Claude Code; issue #30): "Start
Checkpoint" takes one of the window's folders now (kept per window); "Review Changes Since
Checkpoint" shows, in the change-set tab, every file that differs from it now.

Who made a change: "outside" (we do not see a terminal agent write), except a file whose review the
user accepted in this window since the checkpoint: those are the reviewing agent's, reviewed
(`WindowReviews.accepted`; the agent writes the accepted text itself). Its checkpoints share the
window's checkpoint store with its chats; a chat prunes the store to its last 20 checkpoints, so a
very old terminal checkpoint may be gone (Revert then says so).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace

import sublime

from ..core.change_set import OUTSIDE, FileChange, diff
from ..core.checkpoint_store import CheckpointStore
from ..core.checkpoints import Checkpoint, Checkpointer
from ..core.restore import restore
from . import change_set_view
from .chat_checkpoints import CheckpointConfig
from .review_ui import WindowReviews


@dataclass
class StartedPoint:
    checkpointer: Checkpointer
    before: Checkpoint
    accepted_from: int  # reviews accepted before it are not this change set's


_points: dict[int, StartedPoint] = {}  # window id -> its terminal checkpoint (main thread)
_taking: set[int] = set()  # windows whose checkpoint is being taken


def start(window: sublime.Window, reviews: WindowReviews, config: CheckpointConfig) -> None:
    """Take the window's checkpoint on a thread of its own (main thread here)."""
    if window.id() in _taking:
        sublime.status_message("Gemini Companion: a checkpoint is being taken already")
        return
    _taking.add(window.id())
    folders, accepted_from = list(window.folders()), len(reviews.accepted)
    window.status_message("Gemini Companion: checkpoint…")

    def work() -> None:
        try:
            store = CheckpointStore(config.cache_folder, folders)
            checkpointer = Checkpointer(store, folders, config.limits)
            point, error = StartedPoint(checkpointer, checkpointer.take(), accepted_from), None
        except Exception as exc:  # said in the status bar: the user asked for it
            point, error = None, exc
        sublime.set_timeout(lambda: _started(window, point, error))

    threading.Thread(target=work, name="gemini-companion-checkpoint", daemon=True).start()


def _started(window: sublime.Window, point: StartedPoint | None, error: BaseException | None) -> None:
    _taking.discard(window.id())
    if point is None:
        sublime.status_message(f"Gemini Companion: no checkpoint was taken ({error}); check the cache folder's space.")
        return
    _points[window.id()] = point
    covered = sum(1 for e in point.before.entries.values() if e.kind != "dir")
    if window.is_valid():
        window.status_message(f"Gemini Companion: checkpoint taken ({covered} files); Review Changes Since Checkpoint")


def review(window: sublime.Window, reviews: WindowReviews) -> bool:
    """The change-set tab on the window's checkpoint; False when none was started."""
    point = _points.get(window.id())
    if point is None:
        return False
    accepted = list(reviews.accepted[point.accepted_from :])
    change_set_view.show(window, reviews, SinceCheckpoint(point, list(window.folders()), accepted))
    return True


class SinceCheckpoint:
    """A change source (`change_sources.ChangeSource`): the window's folders now against its checkpoint."""

    title = "since the checkpoint"

    def __init__(self, point: StartedPoint, folders: Sequence[str], accepted: Sequence[tuple[str, str]]) -> None:
        self.point = point
        self._folders = list(folders)
        self.accepted = list(accepted)
        self.after: Checkpoint | None = None

    @property
    def folders(self) -> Sequence[str]:
        return self._folders

    def changes(self) -> list[FileChange]:
        after = self.after = self.point.checkpointer.take()
        by = {_real(path): agent for path, agent in self.accepted}
        found = diff(self.point.before, after, self.point.checkpointer.store, dict.fromkeys(by, True), OUTSIDE)
        return [replace(c, by=by[c.path]) if c.path in by else c for c in found]

    def checkpoint_bytes(self, change: FileChange) -> bytes:
        store = self.point.checkpointer.store
        return store.read_blob(change.before.digest) if change.before is not None else b""

    def revert(self, paths: Sequence[str] | None) -> list[str]:
        """Back to the checkpoint; refused (nothing written) when a file changed since it was listed."""
        if self.after is None:
            self.changes()
        assert self.after is not None
        self.after, skipped = restore(self.point.checkpointer.store, self.point.before, self.after, paths)
        return skipped

    def applied(self, path: str, shown: str, written: str) -> None:
        """No chat to tell: an agent in a terminal reads the file again itself."""


def _real(path: str) -> str:
    """The path as checkpoints name it (the folders' real paths)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))

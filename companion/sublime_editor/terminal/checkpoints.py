"""Checkpoints for the agents in a terminal (Gemini CLI, Claude Code; issue #30): "Start
Checkpoint" takes one of the window's folders now (kept per window); "Review Changes Since
Checkpoint" shows, in the change-set tab, every file that differs from it now.

Who made a change: "outside" (we do not see a terminal agent write), except a file whose review the
user accepted in this window since the checkpoint: those are the reviewing agent's
(`WindowReviews.accepted`; the agent writes the accepted text itself), reviewed only while the file
holds the accepted text as bytes: encoded as the file was stored (its encoding, BOM, line endings:
what our own write would store) or as the UTF-8 text the agent was sent. Any other bytes are
"changed after your review" (issue 36). Its checkpoints share the
window's checkpoint store with its chats, whose pruning keeps a store's last 20 checkpoints: the
window's active terminal checkpoint is pinned (`core/history/checkpoint_pins.py`), in this process and in
the store's pin files (a headless chat in another process prunes the same store), so it and its
contents stay however many turns the chats run, until Start Checkpoint replaces it or the window
closes (or Sublime ends: a pin file of a process that is gone is dropped). Pin files are written and
removed on worker threads, never on the main thread.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace

import sublime

from ...core.files.paths import WorkspaceError
from ...core.files.textfile import NEW_FILE, decode, encode
from ...core.history import checkpoint_pins
from ...core.history.change_set import OUTSIDE, FileChange, diff
from ...core.history.checkpoint_store import CheckpointStore
from ...core.history.checkpoints import Checkpoint, Checkpointer
from ...core.history.restore import restore
from ...core.history.turn_writes import digest_of
from ..changes import tab as change_set_view
from ..chat.history.checkpoints import CheckpointConfig
from ..review_ui import WindowReviews


@dataclass
class StartedPoint:
    checkpointer: Checkpointer
    before: Checkpoint
    accepted_from: int  # reviews accepted before it are not this change set's
    owner: str = ""  # its pin in the store (checkpoint_pins), while it is the window's

    def unpin(self) -> None:
        """Let it go (any thread; its pin file is removed on a thread of its own: no file I/O here)."""
        root = self.checkpointer.store.root
        checkpoint_pins.unpin(root, self.owner)
        threading.Thread(
            target=checkpoint_pins.unshare, args=(root, self.owner), name="gemini-companion-unpin", daemon=True
        ).start()

    def now(self) -> Checkpoint:
        """The folders now, with no prune of the store (in any process) while its new contents are
        saved (worker thread)."""
        root, taking = self.checkpointer.store.root, f"{self.owner} now"
        _hold_everywhere(self.checkpointer.store, taking)
        try:
            return self.checkpointer.take()
        finally:
            checkpoint_pins.unpin(root, taking)
            checkpoint_pins.unshare(root, taking)


def _hold_everywhere(store: CheckpointStore, owner: str) -> None:
    """No prune of the store, in this process or another, until `owner` pins (worker thread)."""
    store.prepare()
    checkpoint_pins.share(store.root, owner, None)  # other processes' prunes
    checkpoint_pins.hold(store.root, owner)  # this one's


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
        point: StartedPoint | None = None
        try:
            point = _take(CheckpointStore(config.cache_folder, folders), folders, config, accepted_from)
            error = None
        except Exception as exc:  # said in the status bar: the user asked for it
            error = exc
        sublime.set_timeout(lambda: _started(window, point, error))

    threading.Thread(target=work, name="gemini-companion-checkpoint", daemon=True).start()


def _take(store: CheckpointStore, folders: Sequence[str], config: CheckpointConfig, accepted_from: int) -> StartedPoint:
    """A checkpoint pinned from the moment it is taken: no chat's prune meanwhile (worker thread)."""
    owner = f"terminal checkpoint {secrets.token_hex(8)}"
    try:
        _hold_everywhere(store, owner)
        checkpointer = Checkpointer(store, folders, config.limits)
        point = StartedPoint(checkpointer, checkpointer.take(), accepted_from, owner)
        checkpoint_pins.share(store.root, owner, [point.before.id])  # for every process's prunes
    except BaseException:
        checkpoint_pins.unpin(store.root, owner)
        checkpoint_pins.unshare(store.root, owner)
        raise
    checkpoint_pins.pin(store.root, owner, point.before.id)
    return point


def _started(window: sublime.Window, point: StartedPoint | None, error: BaseException | None) -> None:
    _taking.discard(window.id())
    _forget_closed()
    if point is None:
        sublime.status_message(f"Gemini Companion: no checkpoint was taken ({error}); check the cache folder's space.")
        return
    if not window.is_valid():
        point.unpin()
        return
    replaced = _points.get(window.id())
    _points[window.id()] = point
    if replaced is not None:
        replaced.unpin()  # its contents may go at the next prune
    covered = sum(1 for e in point.before.entries.values() if e.kind != "dir")
    window.status_message(f"Gemini Companion: checkpoint taken ({covered} files); Review Changes Since Checkpoint")


def _forget_closed() -> None:
    """Unpin the checkpoints of windows closed since (main thread; no file I/O)."""
    open_windows = {w.id() for w in sublime.windows()}
    for window_id in [w for w in _points if w not in open_windows]:
        _points.pop(window_id).unpin()


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

    def __init__(self, point: StartedPoint, folders: Sequence[str], accepted: Sequence[tuple[str, str, str]]) -> None:
        self.point = point
        self._folders = list(folders)
        self.accepted = list(accepted)
        self.after: Checkpoint | None = None

    @property
    def folders(self) -> Sequence[str]:
        return self._folders

    def changes(self) -> list[FileChange]:
        after = self.after = self.point.now()
        by = {_real(path): agent for path, agent, _text in self.accepted}
        texts = {_real(path): text for path, _agent, text in self.accepted}  # the last accepted text of each
        store = self.point.checkpointer.store
        changed = [p for p, text in texts.items() if not _holds_accepted(store, self.point.before, after, p, text)]
        found = diff(self.point.before, after, store, dict.fromkeys(by, True), OUTSIDE, changed=changed)
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


def _holds_accepted(store: CheckpointStore, before: Checkpoint, after: Checkpoint, path: str, text: str) -> bool:
    """`after` holds `text` at `path` as bytes a write of it may store: encoded as the file was at
    the checkpoint (or as a new file), or as the UTF-8 text the agent was sent (worker thread)."""
    now, old = after.entries.get(path), before.entries.get(path)
    if now is None or now.kind != "file" or not now.digest:
        return False  # gone, not a file, or too large to compare
    forms = [text.encode("utf-8")]
    try:
        if old is not None and old.kind == "file" and old.digest:
            original, fmt = decode(store.read_blob(old.digest))
            forms.append(encode(text, fmt, original=original))
        else:
            forms.append(encode(text, NEW_FILE))
    except (OSError, WorkspaceError):
        pass  # not text before, or its content gone: the UTF-8 form alone
    return now.digest in {digest_of(form) for form in forms}


def _real(path: str) -> str:
    """The path as checkpoints name it (the folders' real paths)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))

"""What the user has open: the per-window list Gemini CLI receives as `ide/contextUpdate`.

Most recent first, at most ten files, and only the active file carries a cursor and selected text
(the CLI drops them from any other file). Editors feed the tracker from their own threads; the
server reads snapshots on its loop, so every method takes the lock.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Gemini CLI's limits for `ide/contextUpdate` (its zod schema), applied to every agent's view of the context.
MAX_OPEN_FILES = 10
MAX_SELECTED_TEXT = 16384


@dataclass(frozen=True)
class Position:
    """A cursor in the CLI's units: 1-based line, 1-based character counted in UTF-16 code units."""

    line: int
    character: int


DEFAULT_EXCLUDES = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "*.jks",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "*.secret",
    "secrets.*",
)


@dataclass(frozen=True)
class SharingPolicy:
    """What the user allows the CLI to see.

    `exclude` globs match a file's name or its whole path; such files are never listed and their
    selection never shared. With `share_selection` off, only cursors are shared.
    """

    exclude: Sequence[str] = field(default=DEFAULT_EXCLUDES)
    share_selection: bool = True

    def excludes(self, path: str) -> bool:
        matcher = _any_of(tuple(self.exclude))
        if matcher is None:
            return False
        name = os.path.normcase(os.path.basename(path))
        normalized = os.path.normcase(path.replace(os.sep, "/"))
        return matcher.match(name) is not None or matcher.match(normalized) is not None


@functools.lru_cache(maxsize=8)
def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One expression matching what `fnmatch.fnmatch` matches for any of `patterns` (each is
    normcased and translated as it does), or None for no patterns. Every context update checks
    each of up to ten files against ~30 default patterns; one fnmatch per pattern made that about
    a quarter of a millisecond of the server's loop per update (cProfile)."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in patterns))


@dataclass
class _Entry:
    path: str
    timestamp: int
    cursor: Position | None = None
    selected_text: str | None = None
    anchor: Position | None = None  # the selection's other end (Claude Code gets the whole range)


MAX_REMEMBERED = 1000


def _now_ms() -> int:
    return int(time.time() * 1000)


class ContextTracker:
    """Open files in most-recently-used order, with the active file first."""

    def __init__(self, on_change: Callable[[], None] | None = None, clock: Callable[[], int] = _now_ms) -> None:
        self._entries: list[_Entry] = []  # index 0 is the active file
        self._lock = threading.Lock()
        self._clock = clock
        self._on_change = on_change
        self._paused = False
        self._policy = SharingPolicy()

    @property
    def policy(self) -> SharingPolicy:
        return self._policy

    def set_policy(self, policy: SharingPolicy) -> None:
        self._policy = policy
        self._changed()

    def set_listener(self, on_change: Callable[[], None] | None) -> None:
        self._on_change = on_change

    def activate(
        self,
        path: str,
        cursor: Position | None = None,
        selected_text: str | None = None,
        anchor: Position | None = None,
    ) -> None:
        """`path` became the focused file: move it to the front with a fresh timestamp."""
        with self._lock:
            self._entries = [e for e in self._entries if e.path != path]
            newest = self._entries[0].timestamp if self._entries else 0
            # Strictly newer than every other entry: the CLI sorts by timestamp and treats the
            # newest file as the only one that may be active.
            entry = _Entry(path, max(self._clock(), newest + 1), cursor, _clip(selected_text), anchor)
            self._entries.insert(0, entry)
            # Remember more than the CLI is shown, so closing the newest files reveals older
            # ones that are still open instead of leaving the CLI with nothing.
            del self._entries[MAX_REMEMBERED:]
        self._changed()

    def select(
        self, path: str, cursor: Position | None, selected_text: str | None, anchor: Position | None = None
    ) -> None:
        """The cursor or selection moved in `path`; ignored unless it is the active file."""
        with self._lock:
            if not self._entries or self._entries[0].path != path:
                return
            active = self._entries[0]
            clipped = _clip(selected_text)
            if active.cursor == cursor and active.selected_text == clipped and active.anchor == anchor:
                return
            active.cursor, active.selected_text, active.anchor = cursor, clipped, anchor
        self._changed()

    def close(self, path: str) -> None:
        with self._lock:
            before = len(self._entries)
            self._entries = [e for e in self._entries if e.path != path]
            if len(self._entries) == before:
                return
        self._changed()

    def rename(self, old_path: str, new_path: str) -> None:
        with self._lock:
            for entry in self._entries:
                if entry.path == old_path:
                    entry.path = new_path
        self._changed()

    def clear(self) -> None:
        with self._lock:
            self._entries = []
        self._changed()

    @property
    def paused(self) -> bool:
        return self._paused

    def set_paused(self, paused: bool) -> None:
        """While paused the CLI is told that nothing is open (privacy switch)."""
        self._paused = paused
        self._changed()

    def paths(self) -> list[str]:
        with self._lock:
            return [e.path for e in self._entries]

    def params(self) -> dict[str, Any]:
        """The `ide/contextUpdate` params for the current state (wire form, not yet validated)."""
        policy = self._policy
        with self._lock:
            entries = [] if self._paused else list(self._entries)
        files: list[dict[str, Any]] = []
        for index, entry in enumerate(entries):
            if len(files) == MAX_OPEN_FILES:
                break
            if policy.excludes(entry.path):
                continue  # an excluded active file leaves no file active: its cursor stays private
            item: dict[str, Any] = {"path": entry.path, "timestamp": entry.timestamp}
            if index == 0:
                item["isActive"] = True
                if entry.cursor is not None:
                    item["cursor"] = {"line": entry.cursor.line, "character": entry.cursor.character}
                if entry.selected_text and policy.share_selection:
                    item["selectedText"] = entry.selected_text
            files.append(item)
        return {"workspaceState": {"openFiles": files}}

    def claude_selection(self) -> dict[str, Any] | None:
        """Claude Code's `selection_changed` params for the active file (0-based lines and
        characters), or None when no shared file is active (paused, excluded, nothing open)."""
        policy = self._policy
        with self._lock:
            active = None if self._paused or not self._entries else self._entries[0]
            if active is None or active.cursor is None or policy.excludes(active.path):
                return None
            cursor, anchor, text = active.cursor, active.anchor or active.cursor, active.selected_text
            path = active.path
        # Imported here, not above: this module is imported before a window's files are published,
        # and pathlib and urllib (what uris needs) would delay them; Claude Code asks only later.
        from .files.uris import file_uri

        start, end = sorted([(anchor.line, anchor.character), (cursor.line, cursor.character)])
        shared = text if text and policy.share_selection else ""
        return {
            "text": shared,
            "filePath": path,
            "fileUrl": file_uri(path),
            "selection": {
                "start": {"line": start[0] - 1, "character": start[1] - 1},
                "end": {"line": end[0] - 1, "character": end[1] - 1},
                "isEmpty": start == end,
            },
        }

    def snapshot_paths(self) -> list[str]:
        """The paths the CLI currently sees (after pausing and exclusions), most recent first."""
        files = self.params()["workspaceState"]["openFiles"]
        return [f["path"] for f in files]

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()


def _clip(text: str | None) -> str | None:
    if text is None:
        return None
    return text[:MAX_SELECTED_TEXT]

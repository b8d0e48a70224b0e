"""An Editor port whose user is played by the test."""

from __future__ import annotations

import threading
import time
from typing import Any, TypeVar

from companion.core.reviews import Review

T = TypeVar("T")


class ScriptedEditor:
    """The Editor port with the user played by the test: it records what it is asked to show and
    close; the test decides a review by calling `review.accept(...)` / `review.reject()`, or leaves
    it open for a client's closeDiff, which gets `edits[review.id]` if the user "typed" into the
    review, else the proposal."""

    def __init__(self) -> None:
        self.shown: list[tuple[Review, str, int]] = []  # (review, proposal shown, revision)
        self.closed: list[Review] = []
        self.edits: dict[int, str] = {}  # review id -> text the user typed into the proposal
        self.buffers: dict[str, str] = {}  # path -> unsaved buffer text
        self.written: dict[str, str] = {}
        self.opened: list[tuple[str, str, str]] = []  # openFile calls: (path, start text, end text)
        self.saved: list[str] = []
        self.problems: dict[str, list[dict[str, Any]]] = {}  # path -> diagnostics the editor has
        self.kept: list[tuple[str, str, str]] = []  # (path, accepted text, why it was not written)
        self._changed = threading.Condition()  # the server's loop thread records, test threads wait

    def type_into(self, review: Review, text: str) -> None:
        """The user edits the proposal in the review without deciding."""
        self.edits[review.id] = text

    # Editor port

    async def show_review(self, review: Review) -> None:
        with self._changed:
            self.shown.append((review, review.proposal, review.revision))
            self._changed.notify_all()

    async def close_review(self, review: Review) -> str:
        with self._changed:
            self.closed.append(review)
            self._changed.notify_all()
        return self.edits.get(review.id, review.proposal)

    async def unsaved_text(self, path: str) -> str | None:
        return self.buffers.get(path)

    async def write_through_buffer(self, path: str, text: str) -> bool | str:
        if path not in self.buffers:
            return False
        self.written[path] = text
        return True

    async def keep_unwritten(self, path: str, text: str, reason: str) -> bool:
        self.kept.append((path, text, reason))
        return True

    async def open_file(self, path: str, start_text: str, end_text: str) -> bool:
        self.opened.append((path, start_text, end_text))
        return True

    async def is_dirty(self, path: str) -> bool | None:
        return True if path in self.buffers else None

    async def save_file(self, path: str) -> bool | None:
        if path not in self.buffers:
            return None
        self.saved.append(path)
        return True

    async def diagnostics(self, path: str | None) -> dict[str, list[dict[str, Any]]]:
        return {p: d for p, d in self.problems.items() if path is None or p == path}

    # waiting (synchronous tests; never call these on the server's loop thread)

    def wait_shown(self, count: int = 1, timeout: float = 30) -> Review:
        """The `count`-th review shown."""
        return self._wait(self.shown, count, "show", timeout)[0]

    def wait_closed(self, count: int = 1, timeout: float = 30) -> Review:
        """The `count`-th review closed."""
        return self._wait(self.closed, count, "close", timeout)

    def _wait(self, records: list[T], count: int, verb: str, timeout: float) -> T:
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(records) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the editor was asked to {verb} {len(records)} reviews, not {count}")
                self._changed.wait(left)
            return records[count - 1]

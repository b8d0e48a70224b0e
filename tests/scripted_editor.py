"""An Editor port whose user is played by the test."""

from __future__ import annotations

import time

from companion.diffs import Review


class ScriptedEditor:
    """The Editor port with the user played by the test: it records what it is asked to show and
    close; the test decides a review by calling `review.accept(...)` / `review.reject()`."""

    def __init__(self) -> None:
        self.shown: list[tuple[Review, str, int]] = []  # (review, proposal shown, revision)
        self.closed: list[Review] = []
        self.edits: dict[int, str] = {}  # review id -> text the user typed into the proposal
        self.buffers: dict[str, str] = {}  # path -> unsaved buffer text
        self.written: dict[str, str] = {}

    async def show_review(self, review: Review) -> None:
        self.shown.append((review, review.proposal, review.revision))

    async def close_review(self, review: Review) -> str:
        self.closed.append(review)
        return self.edits.get(review.id, review.proposal)

    async def unsaved_text(self, path: str) -> str | None:
        return self.buffers.get(path)

    async def write_through_buffer(self, path: str, text: str) -> bool:
        if path not in self.buffers:
            return False
        self.written[path] = text
        return True

    def wait_shown(self, count: int = 1, timeout: float = 30) -> Review:
        """The `count`-th review shown (polling: for synchronous tests)."""
        deadline = time.monotonic() + timeout
        while len(self.shown) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"the editor was asked to show {len(self.shown)} reviews, not {count}")
            time.sleep(0.01)
        return self.shown[count - 1][0]

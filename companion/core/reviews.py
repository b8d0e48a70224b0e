"""Diff reviews: one per file path, opened by `openDiff`, ended by the user or by `closeDiff`.

A review ends exactly once. Whoever ends it first wins: the user's Accept/Reject in the editor, a
client's `closeDiff`, or the window going away. Only the user's decision produces a notification;
`closeDiff` must stay silent, or an accept typed in the CLI's terminal would turn into a reject.

A second `openDiff` for a path whose review is still open does not open a second review: the open
one shows the newer proposal (for the editor this is one undoable edit, so the user's edits to the
earlier proposal are an undo away). The single outcome is broadcast by path, so every client waiting
on that path is answered and no review is left behind.
"""

from __future__ import annotations

import enum
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from .files.disk_text import DiskText


class Outcome(enum.Enum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    CLOSED = "closed"  # closed by a client (closeDiff) or by shutdown: no notification


DecisionSink = Callable[["Review", Outcome, "str | None"], None]

# Who opened a review (`Review.agent`); each agent closes only its own reviews.
BY_GEMINI = "gemini"  # Gemini CLI's openDiff, over HTTP
BY_CLAUDE = "claude"  # Claude Code's openDiff, over its WebSocket
BY_TOOL = "tool"  # the write_file tool, for the other agents

_ids = itertools.count(1)


@dataclass(eq=False)
class Review:
    """One proposed change as the editor shows it. `accept`/`reject` may be called from any thread."""

    file_path: str  # exactly as the client sent it: notifications must echo it unchanged
    proposal: str
    requested_by: str
    _sink: DecisionSink = field(repr=False)
    id: int = field(default_factory=lambda: next(_ids))
    revision: int = 1
    outcome: Outcome | None = None
    # Set for reviews a tool waits on itself (write_file): the decision goes here instead of
    # being broadcast to Gemini CLI, which has no pending diff for it.
    on_decided: Callable[[Outcome, str | None], None] | None = field(default=None, repr=False)
    # What the file held when this proposal arrived, read off the editor's main thread
    # (None until the server has read it).
    disk: DiskText | None = field(default=None, repr=False)
    agent: str = BY_GEMINI  # who opened it (BY_GEMINI, BY_CLAUDE or BY_TOOL)
    # An ACP agent's "allow for this session" option, by its own name, when it offered one: the
    # editor may then offer `accept_always` beside Accept. `always` says the user chose it.
    allow_always: str | None = None
    always: bool = False
    # One file of an edit that changes several (ACP: one permission, several files): (n, count),
    # shown so the user knows the edit is allowed only when every file of it is accepted.
    part: tuple[int, int] | None = None
    renamed_from: str | None = None  # a rename: the file's path before (file_path is the new one)
    replaces: bool = False  # a rename onto a file that exists: its text (the left side) is lost
    delete: bool = False  # the agent deletes the file (the proposal is empty)
    # Why the user rejected it, in their words ("Reject and say why…", headless `n REASON`): an ACP
    # chat tells the agent (acp/prompt/reasons.py); "" when they gave none.
    reason: str = ""

    def accept(self, content: str) -> None:
        """The user accepted; `content` is the proposal as the user left it (edits included)."""
        self._sink(self, Outcome.ACCEPTED, content)

    def accept_always(self, content: str) -> None:
        """Accept, and let the agent make its later edits in this session without asking (only
        when `allow_always` is set; otherwise a plain accept)."""
        self.always = self.allow_always is not None
        self.accept(content)

    def reject(self, reason: str = "") -> None:
        """The user rejected; `reason`, when they said why, is for the agent to hear."""
        self.reason = reason.strip()
        self._sink(self, Outcome.REJECTED, None)

    @property
    def is_open(self) -> bool:
        return self.outcome is None


class ReviewBusy(Exception):
    """The path's open review belongs to a tool that waits on it; it cannot take a newer proposal."""


class Reviews:
    """The open reviews of one window, keyed by the exact `filePath` string."""

    def __init__(self, sink: DecisionSink) -> None:
        self._sink = sink
        self._open: dict[str, Review] = {}
        self._lock = threading.Lock()

    def open(self, file_path: str, proposal: str, requested_by: str) -> tuple[Review, bool]:
        """Start a review, or show a newer proposal in the open one; returns (review, replaced).

        Raises ReviewBusy when the open review is one a tool waits on (see `open_exclusive`).
        """
        with self._lock:
            current = self._open.get(file_path)
            if current is not None and current.on_decided is not None:
                # A tool (write_file) waits on this review: a newer proposal would make it write
                # another client's text, and that client would never hear an outcome.
                raise ReviewBusy(file_path)
            if current is not None:
                current.proposal = proposal
                current.requested_by = requested_by
                current.revision += 1
                return current, True
            review = Review(file_path, proposal, requested_by, self._sink)
            self._open[file_path] = review
            return review, False

    def open_exclusive(
        self,
        file_path: str,
        proposal: str,
        requested_by: str,
        on_decided: Callable[[Outcome, str | None], None],
        agent: str = BY_TOOL,
    ) -> Review | None:
        """Start a review a tool waits on; None when the path already has an open review."""
        with self._lock:
            if file_path in self._open:
                return None
            review = Review(file_path, proposal, requested_by, self._sink, on_decided=on_decided, agent=agent)
            self._open[file_path] = review
            return review

    def get(self, file_path: str) -> Review | None:
        with self._lock:
            return self._open.get(file_path)

    def finish(self, review: Review, outcome: Outcome) -> bool:
        """End `review` with `outcome`; False when it had already ended (the first ending wins)."""
        with self._lock:
            if review.outcome is not None or self._open.get(review.file_path) is not review:
                return False
            review.outcome = outcome
            del self._open[review.file_path]
            return True

    def all(self) -> list[Review]:
        with self._lock:
            return list(self._open.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

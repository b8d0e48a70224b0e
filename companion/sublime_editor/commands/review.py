"""Commands: Apply / Reject the review, move between its changes, and buffer helpers."""

from __future__ import annotations

import sublime
import sublime_plugin

from ..review_ui import ReviewViews, WindowReviews
from ..windows import CompanionTextCommand, CompanionWindowCommand, WindowState


def _reviews(state: WindowState | None) -> WindowReviews | None:
    """The reviews of the window, while the companion runs there."""
    return state.reviews if state is not None else None


def _target(state: WindowState | None) -> ReviewViews | None:
    reviews = _reviews(state)
    return reviews.target() if reviews is not None else None


class GeminiCompanionApplyCommand(CompanionWindowCommand):
    """Accept the focused review (or the newest one in this window) with the user's edits."""

    def run(self) -> None:
        reviews = _reviews(self.state())
        entry = reviews.target() if reviews is not None else None
        if reviews is not None and entry is not None:
            reviews.accept(entry)

    def is_enabled(self) -> bool:
        return _target(self.state()) is not None


class GeminiCompanionRejectCommand(CompanionWindowCommand):
    """Reject the focused review (or the newest one in this window); nothing is written."""

    def run(self) -> None:
        reviews = _reviews(self.state())
        entry = reviews.target() if reviews is not None else None
        if reviews is not None and entry is not None:
            reviews.reject(entry)

    def is_enabled(self) -> bool:
        return _target(self.state()) is not None


class GeminiCompanionNextChangeCommand(CompanionWindowCommand):
    def run(self, forward: bool = True) -> None:
        entry = _target(self.state())
        if entry is not None:
            self.window.focus_view(entry.proposal)
            entry.proposal.run_command("next_modification" if forward else "prev_modification")

    def is_enabled(self, forward: bool = True) -> bool:
        return _target(self.state()) is not None


class GeminiCompanionSaveReviewCommand(CompanionTextCommand):
    """What Save does in a proposal view: accept the review."""

    def run(self, edit: sublime.Edit, seen: int | None = None) -> None:
        reviews = _reviews(self.state())
        entry = reviews.for_view(self.view) if reviews is not None else None
        if reviews is not None and entry is not None:
            reviews.accept(entry, seen)


class GeminiCompanionReplaceTextCommand(sublime_plugin.TextCommand):
    """Replace the whole buffer in one undoable step."""

    def run(self, edit: sublime.Edit, text: str) -> None:
        self.view.replace(edit, sublime.Region(0, self.view.size()), text)

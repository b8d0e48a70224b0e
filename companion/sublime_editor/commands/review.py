"""Commands: Apply / Reject the review, move between its changes, and buffer helpers."""

from __future__ import annotations

import sublime
import sublime_plugin

from ..review_ui import ReviewViews, WindowReviews
from ..windows import registry


def _reviews(window: sublime.Window | None) -> WindowReviews | None:
    """The reviews of `window`, while the companion runs there."""
    reg = registry()
    state = reg.get(window) if reg is not None else None
    return state.reviews if state is not None else None


def _target(window: sublime.Window | None) -> ReviewViews | None:
    reviews = _reviews(window)
    return reviews.target() if reviews is not None else None


class GeminiCompanionApplyCommand(sublime_plugin.WindowCommand):
    """Accept the focused review (or the newest one in this window) with the user's edits."""

    def run(self) -> None:
        reviews = _reviews(self.window)
        entry = reviews.target() if reviews is not None else None
        if reviews is not None and entry is not None:
            reviews.accept(entry)

    def is_enabled(self) -> bool:
        return _target(self.window) is not None


class GeminiCompanionRejectCommand(sublime_plugin.WindowCommand):
    """Reject the focused review (or the newest one in this window); nothing is written."""

    def run(self) -> None:
        reviews = _reviews(self.window)
        entry = reviews.target() if reviews is not None else None
        if reviews is not None and entry is not None:
            reviews.reject(entry)

    def is_enabled(self) -> bool:
        return _target(self.window) is not None


class GeminiCompanionNextChangeCommand(sublime_plugin.WindowCommand):
    def run(self, forward: bool = True) -> None:
        entry = _target(self.window)
        if entry is not None:
            self.window.focus_view(entry.proposal)
            entry.proposal.run_command("next_modification" if forward else "prev_modification")

    def is_enabled(self, forward: bool = True) -> bool:
        return _target(self.window) is not None


class GeminiCompanionSaveReviewCommand(sublime_plugin.TextCommand):
    """What Save does in a proposal view: accept the review."""

    def run(self, edit: sublime.Edit, seen: int | None = None) -> None:
        reviews = _reviews(self.view.window())
        entry = reviews.for_view(self.view) if reviews is not None else None
        if reviews is not None and entry is not None:
            reviews.accept(entry, seen)


class GeminiCompanionReplaceTextCommand(sublime_plugin.TextCommand):
    """Replace the whole buffer in one undoable step."""

    def run(self, edit: sublime.Edit, text: str) -> None:
        self.view.replace(edit, sublime.Region(0, self.view.size()), text)

"""Commands: Apply / Reject the review, move between its changes, and buffer helpers."""

from __future__ import annotations

import sublime
import sublime_plugin

from .lifecycle import registry
from .review_ui import ReviewViews


def _target(window: sublime.Window | None) -> ReviewViews | None:
    reg = registry()
    state = reg.get(window) if reg is not None else None
    return state.reviews.target() if state is not None else None


class GeminiCompanionApplyCommand(sublime_plugin.WindowCommand):
    """Accept the focused review (or the newest one in this window) with the user's edits."""

    def run(self) -> None:
        entry = _target(self.window)
        reg = registry()
        state = reg.get(self.window) if reg is not None else None
        if entry is not None and state is not None:
            state.reviews.accept(entry)

    def is_enabled(self) -> bool:
        return _target(self.window) is not None


class GeminiCompanionRejectCommand(sublime_plugin.WindowCommand):
    def run(self) -> None:
        entry = _target(self.window)
        reg = registry()
        state = reg.get(self.window) if reg is not None else None
        if entry is not None and state is not None:
            state.reviews.reject(entry)

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

    def run(self, edit: sublime.Edit) -> None:
        reg = registry()
        state = reg.get(self.view.window()) if reg is not None else None
        entry = state.reviews.for_view(self.view) if state is not None else None
        if state is not None and entry is not None:
            state.reviews.accept(entry)


class GeminiCompanionReplaceTextCommand(sublime_plugin.TextCommand):
    """Replace the whole buffer in one undoable step."""

    def run(self, edit: sublime.Edit, text: str) -> None:
        self.view.replace(edit, sublime.Region(0, self.view.size()), text)

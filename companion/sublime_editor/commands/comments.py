"""Commands: Comment on Line/Selection, and Send Comments to Chat (sublime_editor/comments.py)."""

from __future__ import annotations

import sublime
import sublime_plugin

from ..changes import comments
from ..chat import sessions
from ..windows import CompanionTextCommand, state_of


class GeminiCompanionCommentCommand(CompanionTextCommand):
    """Comment on the selected lines of a review or of a file of the window (an input panel)."""

    def run(self, edit: sublime.Edit) -> None:
        path, window, view = self._path(), self.view.window(), self.view
        if path is None or window is None:
            return

        def done(text: str) -> None:
            if not text.strip():
                sublime.status_message("An empty comment: nothing was kept")
                return
            if not view.is_valid():  # closed meanwhile: the words are not lost
                sublime.set_clipboard(text)
                sublime.status_message("The view closed before the comment was kept; it is on the clipboard")
                return
            comments.comment_on(view, path, text)
            kept = comments.count(window)
            sublime.status_message(f"{kept} comment(s) kept in this window: Send Comments to Chat sends them")

        window.show_input_panel("Comment on these lines (for the agent):", "", done, None, None)

    def is_enabled(self) -> bool:
        return self._path() is not None

    def _path(self) -> str | None:
        """The file the view shows: a review's file, else the view's own file."""
        state = self.state()
        entry = state.reviews.for_view(self.view) if state is not None else None
        return entry.review.file_path if entry is not None else self.view.file_name()


class GeminiCompanionSendCommentsCommand(sublime_plugin.WindowCommand):
    """Every comment of the window to its chat's next prompt; outdated ones are named, not sent."""

    def run(self) -> None:
        chat = sessions.target(self.window)
        if chat is None or not chat.ready:
            sublime.status_message("No chat is ready in this window: start one, then send the comments (they are kept)")
            return
        note, outdated = comments.take(self.window, chat.folders[0])
        if outdated is not None:
            chat.panel.notice(outdated, "warning")
            sublime.status_message(outdated)
        if note is not None:
            chat.add_note(note)
            chat.panel.notice("Your comments go with your next prompt:\n" + note, "info")

    def is_enabled(self) -> bool:
        return state_of(self.window) is not None and comments.count(self.window) > 0

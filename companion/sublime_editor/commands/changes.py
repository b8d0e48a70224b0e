"""Palette commands and keys of the change-set tab: Review Turn Changes, Enter on a file, the
terminal agents' Start Checkpoint / Review Changes Since Checkpoint, and a chat's Restore Checkpoint."""

from __future__ import annotations

import sublime
import sublime_plugin

from ..changes import tab as change_set_view
from ..chat import sessions as chat_sessions
from ..chat.history import checkpoints as chat_checkpoints
from ..chat.history import restore as chat_restore
from ..terminal import checkpoints as terminal_checkpoints
from ..windows import CompanionWindowCommand


class GeminiCompanionReviewTurnChangesCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Review Turn Changes — the focused (or newest) chat's last turn."""

    def run(self) -> None:
        chat = chat_sessions.target(self.window) or next(
            (c for c in reversed(chat_sessions.chats(self.window)) if c.turns is not None), None
        )
        if chat is None or not chat.review_changes():
            sublime.status_message(
                "Gemini Companion: no chat with checkpoints in this window; start a chat (setting "
                "chat_checkpoints on) and send a prompt first."
            )


class GeminiCompanionChangeSetOpenCommand(sublime_plugin.TextCommand):
    """Enter in the change-set tab: the file under the caret against the checkpoint."""

    def run(self, edit: sublime.Edit) -> None:
        tab = change_set_view.for_view(self.view)
        change = tab.change_at_caret() if tab is not None else None
        if tab is not None and change is not None:
            tab.open_file(change)


class GeminiCompanionChangeSetListener(sublime_plugin.EventListener):
    def on_query_context(
        self, view: sublime.View, key: str, operator: int, operand: object, match_all: bool
    ) -> bool | None:
        if key != "gemini_companion.change_set":
            return None
        found = change_set_view.for_view(view) is not None
        expected = operand if isinstance(operand, bool) else True
        return found != expected if operator == sublime.QueryOperator.NOT_EQUAL else found == expected


class GeminiCompanionStartCheckpointCommand(CompanionWindowCommand):
    """Gemini Companion: Start Checkpoint — the window's folders now, for an agent in a terminal."""

    def run(self) -> None:
        state = self.running_state()
        if state is None:
            return
        if not self.window.folders():
            sublime.status_message("Gemini Companion: open a folder first; a checkpoint covers the window's folders")
            return
        terminal_checkpoints.start(self.window, state.reviews, chat_checkpoints.config(self.window))


class GeminiCompanionReviewCheckpointChangesCommand(CompanionWindowCommand):
    """Gemini Companion: Review Changes Since Checkpoint — in the change-set tab."""

    def run(self) -> None:
        state = self.running_state()
        if state is not None and not terminal_checkpoints.review(self.window, state.reviews):
            sublime.status_message("Gemini Companion: no checkpoint in this window; run Start Checkpoint first")


class GeminiCompanionRestoreCheckpointCommand(sublime_plugin.WindowCommand):
    """Restore Checkpoint (a link on a chat's prompt): the window's folders as they were before
    prompt `prompt` of the chat `chat`; with `undo`, as before the chat's last restore; with
    `rewind`, the conversation too (Rewind to Here, Undo rewind: chat/rewind.py)."""

    def run(self, chat: str, prompt: int = 0, undo: bool = False, rewind: bool = False) -> None:
        chat_restore.restore_checkpoint(self.window, chat, prompt, undo, rewind)

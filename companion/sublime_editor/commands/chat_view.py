"""A chat's view in Sublime's hands: the listener that keeps the prompt its only writable part (the
rules: chat/prompt.py), and the text commands its keys and the companion's writing run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sublime
import sublime_plugin

from ...acp.prompt.images import named_like_image
from ..chat import prompt
from ..chat import sessions as chat_sessions
from ..chat.attach import images as chat_images

if TYPE_CHECKING:
    from sublime_types import CommandArgs


class GeminiCompanionChatListener(sublime_plugin.EventListener):
    """The chat view's rules: the prompt is the only writable part, the key bindings' contexts, the
    agent's slash commands as completions, and closing the view stops its agent."""

    def on_query_context(
        self, view: sublime.View, key: str, operator: int, operand: object, match_all: bool
    ) -> bool | None:
        return prompt.query_context(view, key, operator, operand)

    def on_text_command(
        self, view: sublime.View, command_name: str, args: dict | None
    ) -> tuple[str, CommandArgs] | None:
        return prompt.text_command(view, command_name)

    def on_selection_modified(self, view: sublime.View) -> None:
        prompt.guard(view)

    def on_query_completions(
        self, view: sublime.View, prefix: str, locations: list[int]
    ) -> list[sublime.CompletionValue] | None:
        return prompt.completions(view, locations)

    def on_close(self, view: sublime.View) -> None:
        chat_sessions.view_closed(view)


class GeminiCompanionChatInsertCommand(sublime_plugin.TextCommand):
    """The companion's writing into the transcript (the view may be read-only for the user)."""

    def run(self, edit: sublime.Edit, point: int, characters: str) -> None:
        read_only = self.view.is_read_only()
        self.view.set_read_only(False)
        try:
            self.view.insert(edit, point, characters)
        finally:
            self.view.set_read_only(read_only)


class GeminiCompanionChatEraseCommand(sublime_plugin.TextCommand):
    def run(self, edit: sublime.Edit, begin: int, end: int) -> None:
        read_only = self.view.is_read_only()
        self.view.set_read_only(False)
        try:
            self.view.erase(edit, sublime.Region(begin, end))
        finally:
            self.view.set_read_only(read_only)


class GeminiCompanionChatCopyCommand(sublime_plugin.TextCommand):
    """Copy, when the selection holds line breaks the chat view made (a long line): without them."""

    def run(self, edit: sublime.Edit, text: str) -> None:
        sublime.set_clipboard(text)  # the selection without those breaks (ChatPanel.copied_text)


class GeminiCompanionChatNoopCommand(sublime_plugin.TextCommand):
    """What a refused keystroke in the chat becomes (on_text_command can only rewrite a command)."""

    def run(self, edit: sublime.Edit) -> None:
        pass


class GeminiCompanionChatSendCommand(sublime_plugin.TextCommand):
    """Enter in the chat's prompt: send it."""

    def run(self, edit: sublime.Edit) -> None:
        chat = chat_sessions.for_view(self.view)
        if chat is None:
            return
        text = chat.panel.prompt_text()
        if named_like_image(text) and chat.ready and not chat.busy:  # a pasted image path: the image goes
            chat_images.send_typed_path(chat, chat.panel.take_prompt())
        elif chat.send(text.strip()):
            chat.panel.take_prompt()


class GeminiCompanionChatHistoryCommand(sublime_plugin.TextCommand):
    """Up/down on the prompt's first/last line: the earlier/later prompts; Up in the empty prompt
    while a prompt is queued: that prompt, to edit (it leaves the queue)."""

    def run(self, edit: sublime.Edit, forward: bool = False) -> None:
        chat = chat_sessions.for_view(self.view)
        if chat is None:
            return
        if not forward and not chat.panel.prompt_text().strip() and chat.edit_queued():
            return
        text = chat.history.forward() if forward else chat.history.back(chat.panel.prompt_text())
        if text is not None:
            chat.panel.set_prompt(text)


class GeminiCompanionTerminalPanelWriteCommand(sublime_plugin.TextCommand):
    """The terminal output panel's text (chat/terminal_panel.py): appended, or replaced whole."""

    def run(self, edit: sublime.Edit, characters: str, replace: bool = False) -> None:
        self.view.set_read_only(False)
        try:
            if replace:
                self.view.replace(edit, sublime.Region(0, self.view.size()), characters)
            else:
                self.view.insert(edit, self.view.size(), characters)
        finally:
            self.view.set_read_only(True)

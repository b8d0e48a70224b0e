"""The chat's prompt: typed at the end of the chat view, sent with Enter, with a history (up/down).

Why the end of the view and not the input panel: the agent's slash commands are offered as
completions where the user types (`on_query_completions` runs for views, and the prompt is part of
the chat's view), the prompt may span lines and be edited with every editing command, and a prompt
that could not be sent stays in the view instead of vanishing with a closed panel."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sublime
import sublime_plugin

from . import chat_sessions

if TYPE_CHECKING:
    from sublime_types import CommandArgs

PROMPT_CONTEXT = "gemini_companion.chat_prompt"  # a caret in a chat's prompt
TURN_CONTEXT = "gemini_companion.chat_turn"  # a chat view whose agent is answering
FIRST_LINE_CONTEXT = "gemini_companion.chat_prompt_first_line"  # the caret on the prompt's first line
LAST_LINE_CONTEXT = "gemini_companion.chat_prompt_last_line"  # the caret on the prompt's last line
# Commands that change the text at the carets: in the transcript they would edit the companion's
# part, so they go to the prompt's end instead. Undo could take back streamed text: it is only let
# through while the user's own typing is the newest change.
EDITING = frozenset({"insert", "insert_snippet", "paste", "cut", "left_delete", "right_delete", "delete_word"})
UNDOING = frozenset({"undo", "soft_undo", "redo", "redo_or_repeat", "soft_redo"})


def _chat(view: sublime.View) -> chat_sessions.Chat | None:
    return chat_sessions.for_view(view)


class GeminiCompanionChatListener(sublime_plugin.EventListener):
    """The chat view's rules: the prompt is the only writable part, the key bindings' contexts, the
    agent's slash commands as completions, and closing the view stops its agent."""

    def on_query_context(
        self, view: sublime.View, key: str, operator: int, operand: object, match_all: bool
    ) -> bool | None:
        if key not in (PROMPT_CONTEXT, TURN_CONTEXT, FIRST_LINE_CONTEXT, LAST_LINE_CONTEXT):
            return None
        chat = _chat(view)
        if chat is None:
            value = False
        elif key == TURN_CONTEXT:
            value = chat.busy
        elif key == PROMPT_CONTEXT:
            value = chat.panel.in_prompt()
        else:
            panel = chat.panel
            caret = view.sel()[0].b if len(view.sel()) else -1
            line = view.full_line(caret)
            if key == FIRST_LINE_CONTEXT:
                value = panel.in_prompt() and line.begin() <= panel.input_start
            else:
                value = (
                    panel.in_prompt()
                    and line.end() >= view.size()
                    and "\n" not in view.substr(sublime.Region(caret, view.size()))
                )
        wanted = bool(operand)
        if operator == sublime.QueryOperator.NOT_EQUAL:
            return value != wanted
        return value == wanted

    def on_text_command(
        self, view: sublime.View, command_name: str, args: dict | None
    ) -> tuple[str, CommandArgs] | None:
        if command_name == "copy":  # the transcript's long lines carry breaks of the view's own
            chat = _chat(view)
            copied = chat.panel.copied_text() if chat is not None else None
            return None if copied is None else ("gemini_companion_chat_copy", {})
        chat = _chat(view) if command_name in EDITING or command_name in UNDOING else None
        if chat is None:
            return None
        panel = chat.panel
        if command_name in UNDOING:
            return None if panel.user_edited_last else ("gemini_companion_chat_noop", {})
        if not panel.in_prompt():
            panel.focus_prompt()  # the keystroke lands at the prompt's end
            return None
        if command_name in ("left_delete", "delete_word") and panel.caret_at_prompt_start():
            return ("gemini_companion_chat_noop", {})  # would delete the separator
        return None

    def on_selection_modified(self, view: sublime.View) -> None:
        chat = _chat(view)
        if chat is not None:
            chat.panel.guard()

    def on_modified(self, view: sublime.View) -> None:
        # Reported after the command that changed the buffer: the change count tells whose it was.
        chat = _chat(view)
        if chat is not None:
            chat.panel.user_edited_last = view.change_count() != chat.panel.own_change

    def on_query_completions(
        self, view: sublime.View, prefix: str, locations: list[int]
    ) -> list[sublime.CompletionValue] | None:
        chat = _chat(view)
        if chat is None or not locations or locations[0] < chat.panel.input_start:
            return None
        line_start = view.line(locations[0]).begin()
        typed = view.substr(sublime.Region(max(line_start, chat.panel.input_start), locations[0]))
        if not typed.lstrip().startswith("/"):
            return None
        offered: list[sublime.CompletionValue] = [
            (f"/{c.name}\t{c.description[:60]}", f"{c.name} ") for c in chat.panel.commands
        ]
        return offered

    def on_close(self, view: sublime.View) -> None:
        chat_sessions.view_closed(view)


class GeminiCompanionChatInsertCommand(sublime_plugin.TextCommand):
    """The companion's writing into the transcript (the view may be read-only for the user)."""

    def run(self, edit: sublime.Edit, point: int, characters: str) -> None:
        chat = _chat(self.view)
        read_only = self.view.is_read_only()
        self.view.set_read_only(False)
        try:
            self.view.insert(edit, point, characters)
        finally:
            if chat is not None:
                chat.panel.own_change = self.view.change_count()
                chat.panel.user_edited_last = False
            self.view.set_read_only(read_only)


class GeminiCompanionChatEraseCommand(sublime_plugin.TextCommand):
    def run(self, edit: sublime.Edit, begin: int, end: int) -> None:
        chat = _chat(self.view)
        read_only = self.view.is_read_only()
        self.view.set_read_only(False)
        self.view.erase(edit, sublime.Region(begin, end))
        self.view.set_read_only(read_only)
        if chat is not None:
            chat.panel.own_change = self.view.change_count()
            chat.panel.user_edited_last = False


class GeminiCompanionChatCopyCommand(sublime_plugin.TextCommand):
    """Copy, when the selection holds line breaks the chat view made (a long line): without them."""

    def run(self, edit: sublime.Edit) -> None:
        chat = _chat(self.view)
        copied = chat.panel.copied_text() if chat is not None else None
        if copied is not None:
            sublime.set_clipboard(copied)


class GeminiCompanionChatNoopCommand(sublime_plugin.TextCommand):
    """What a refused keystroke in the chat becomes (on_text_command can only rewrite a command)."""

    def run(self, edit: sublime.Edit) -> None:
        pass


class GeminiCompanionChatSendCommand(sublime_plugin.TextCommand):
    """Enter in the chat's prompt: send it."""

    def run(self, edit: sublime.Edit) -> None:
        chat = _chat(self.view)
        if chat is None:
            return
        text = chat.panel.prompt_text()
        if chat.send(text.strip()):
            chat.panel.take_prompt()


class GeminiCompanionChatHistoryCommand(sublime_plugin.TextCommand):
    """Up/down on the prompt's first/last line: the earlier/later prompts."""

    def run(self, edit: sublime.Edit, forward: bool = False) -> None:
        chat = _chat(self.view)
        if chat is None:
            return
        text = chat.history.forward() if forward else chat.history.back(chat.panel.prompt_text())
        if text is not None:
            chat.panel.set_prompt(text)

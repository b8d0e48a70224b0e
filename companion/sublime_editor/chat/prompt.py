"""The chat's prompt: typed at the end of the chat view, sent with Enter, with a history (up/down).

Why the end of the view and not the input panel: the agent's slash commands are offered as
completions where the user types (`on_query_completions` runs for views, and the prompt is part of
the chat's view), the prompt may span lines and be edited with every editing command, and a prompt
that could not be sent stays in the view instead of vanishing with a closed panel.

The rules live here; the listener and the text commands Sublime runs (commands/chat_view.py) hand
its events to them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sublime

from . import sessions as chat_sessions
from .view import ChatPanel

if TYPE_CHECKING:
    from sublime_types import CommandArgs

PROMPT_CONTEXT = "gemini_companion.chat_prompt"  # a caret in a chat's prompt
TURN_CONTEXT = "gemini_companion.chat_turn"  # a chat view whose agent is answering
QUEUED_CONTEXT = "gemini_companion.chat_queued"  # a chat view with a prompt queued (queued.py)
FIRST_LINE_CONTEXT = "gemini_companion.chat_prompt_first_line"  # the caret on the prompt's first line
LAST_LINE_CONTEXT = "gemini_companion.chat_prompt_last_line"  # the caret on the prompt's last line
# Commands that change the text at the carets: in the transcript they would edit the companion's
# part, so they go to the prompt's end instead. (Undo needs no guard: the companion's edits are kept
# out of the undo history, ChatPanel._edit.)
EDITING = frozenset({"insert", "insert_snippet", "paste", "cut", "left_delete", "right_delete", "delete_word"})
# Commands that rewrite whole lines (Default's Edit › Line and Comment menus, and its Delete Line /
# Delete to BOL / Add Line Before macros): the prompt's first line holds the `❯ ` separator, so on it
# (or, for Swap Line Up, below it) they would change or move the transcript's end.
LINE_EDITING = frozenset(
    {
        "indent",
        "unindent",
        "reindent",
        "toggle_comment",
        "duplicate_line",
        "join_lines",
        "swap_line_up",
        "swap_line_down",
        "paste_and_indent",
        "run_macro_file",
        "sort_lines",
        "permute_lines",
        "transpose",
    }
)
NOOP: tuple[str, CommandArgs] = ("gemini_companion_chat_noop", {})


def _chat(view: sublime.View) -> chat_sessions.Chat | None:
    return chat_sessions.for_view(view)


def query_context(view: sublime.View, key: str, operator: int, operand: object) -> bool | None:
    """The prompt's key binding contexts (None: the key is not ours)."""
    if key not in (PROMPT_CONTEXT, TURN_CONTEXT, QUEUED_CONTEXT, FIRST_LINE_CONTEXT, LAST_LINE_CONTEXT):
        return None
    chat = _chat(view)
    if chat is None:
        value = False
    elif key == TURN_CONTEXT:
        value = chat.busy
    elif key == QUEUED_CONTEXT:
        value = len(chat.queued) > 0
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


def text_command(view: sublime.View, command_name: str) -> tuple[str, CommandArgs] | None:
    """What a text command becomes in a chat view: the prompt is the only writable part (None: it
    runs as it is)."""
    if command_name == "copy":  # the transcript's long lines carry breaks of the view's own
        chat = _chat(view)
        copied = chat.panel.copied_text() if chat is not None else None
        return None if copied is None else ("gemini_companion_chat_copy", {"text": copied})
    if command_name not in EDITING and command_name not in LINE_EDITING:
        return None
    chat = chat_sessions.for_buffer(view)
    if chat is None:
        return None
    panel = chat.panel
    if view.id() != panel.view.id():  # a clone (New View into File): our offsets are the chat view's
        sublime.status_message("Gemini Companion: this is a second view of the chat; type in the chat's own tab.")
        return NOOP
    if command_name in LINE_EDITING:
        return _line_command(view, panel, command_name)
    if not panel.in_prompt():
        panel.focus_prompt()  # the keystroke lands at the prompt's end
        return None
    if command_name in ("left_delete", "delete_word") and panel.caret_at_prompt_start():
        return NOOP  # would delete the separator
    return None


def guard(view: sublime.View) -> None:
    """The selection moved: the view is read-only while a caret is in the transcript."""
    chat = _chat(view)
    if chat is not None:
        chat.panel.guard()


def completions(view: sublime.View, locations: list[int]) -> list[sublime.CompletionValue] | None:
    """The agent's slash commands, offered where the prompt's line starts with "/"."""
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


def _line_command(view: sublime.View, panel: ChatPanel, command_name: str) -> tuple[str, CommandArgs] | None:
    """A line command runs only on the prompt's own lines; Paste and Indent there is a plain paste."""
    if panel.in_prompt() and not _reaches_transcript(view, panel.input_start, command_name):
        return None
    if command_name == "paste_and_indent" and panel.in_prompt():
        return ("paste", {})  # re-indenting the pasted lines could re-indent the `❯ ` line
    sublime.status_message(
        "Gemini Companion: that command would change the chat's transcript or its ❯ line; "
        "line commands work on the prompt's own lines (Shift+Enter starts one)."
    )
    return NOOP


def _reaches_transcript(view: sublime.View, input_start: int, command_name: str) -> bool:
    """Whether the lines `command_name` rewrites at some caret begin before the prompt."""
    for region in view.sel():
        start = view.full_line(region.begin()).begin()
        if command_name == "swap_line_up":
            start = view.full_line(max(0, start - 1)).begin()
        elif command_name == "join_lines":
            start = region.begin()  # it changes only the line ends after the caret
        if start < input_start:
            return True
    return False

"""`@` in a chat's prompt: the window's files, folders, open files and indexed symbols as
completions (chat/mentions.py decides what may be offered, and fills them off the main thread)."""

from __future__ import annotations

import sublime
import sublime_plugin

from ..chat import sessions as chat_sessions
from ..chat.attach import mentions as chat_mentions


class GeminiCompanionChatMentionListener(sublime_plugin.EventListener):
    def on_query_completions(
        self, view: sublime.View, prefix: str, locations: list[int]
    ) -> sublime.CompletionList | None:
        chat = chat_sessions.for_view(view)
        if chat is None or not locations or locations[0] < chat.panel.input_start:
            return None  # not a chat, or the caret is in the transcript
        point = locations[0]
        start = max(view.line(point).begin(), chat.panel.input_start)
        before = view.substr(sublime.Region(start, point))
        paused = chat.state.handle.context.paused
        return chat_mentions.complete(chat.state.window, chat.folders, paused, prefix, before)

"""A chat that waits for the user where they do not look (issue #41): a permission card asked
while the chat's view is not the active view of its window, or its window is not the active one,
names the agent in the status bar of every view of the window until it is answered (or withdrawn).

Sublime Text's API (build 4213, sublime-text-stubs) has no bell and no way to flash a tab or ask
the window manager for attention: the status bar is what a package can do. Main thread."""

from __future__ import annotations

import sublime

STATUS_KEY = "gemini_companion.attention"

# window id -> (chat id, card key) -> the words for it
_waiting: dict[int, dict[tuple[str, str], str]] = {}


def is_seen(view: sublime.View) -> bool:
    """The view is the active view of the active window: the user sees its card."""
    window = view.window()
    if window is None:
        return False
    active = window.active_view()
    return sublime.active_window().id() == window.id() and active is not None and active.id() == view.id()


def asked(view: sublime.View, chat_id: str, key: str, agent: str, what: str = "permission") -> None:
    """A card waits for an answer in `view` (the chat's own view)."""
    window = view.window()
    if window is None or is_seen(view):
        return
    _waiting.setdefault(window.id(), {})[(chat_id, key)] = f"{agent} waits for you ({what})"
    _show(window)


def answered(chat_id: str, key: str | None) -> None:
    """The card was answered or withdrawn (or the chat closed: `key` None drops all of the chat's)."""
    for window_id, waiting in list(_waiting.items()):
        for found in [k for k in waiting if k[0] == chat_id and k[1] in (key, None)]:
            del waiting[found]
            _show(sublime.Window(window_id))
        if not waiting:
            del _waiting[window_id]


def _show(window: sublime.Window) -> None:
    if not window.is_valid():
        return
    words = list(dict.fromkeys(_waiting.get(window.id(), {}).values()))  # each once, in order
    text = "Gemini Companion: " + "; ".join(words) if words else ""
    for view in window.views():
        if text:
            view.set_status(STATUS_KEY, text)
        else:
            view.erase_status(STATUS_KEY)

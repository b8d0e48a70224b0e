"""What waits for the user where they do not look (issue #41): a chat's permission card asked
while the chat's view is not the active view of its window, or its window is not the active one,
or a review shown so (`focus_review` off, a window in the background), is named in the status bar
of every view of the window until it is answered, withdrawn or closed.

Sublime Text's API (build 4213, sublime-text-stubs) has no bell and no way to flash a tab or ask
the window manager for attention: the status bar is what a package can do. Main thread."""

from __future__ import annotations

import sublime

STATUS_KEY = "gemini_companion.attention"

# window id -> (owner: a chat's id or "review", key) -> the words for it
_waiting: dict[int, dict[tuple[str, str], str]] = {}


def is_seen(view: sublime.View) -> bool:
    """The view is the active view of the active window: the user sees its card."""
    window = view.window()
    if window is None:
        return False
    active = window.active_view()
    return sublime.active_window().id() == window.id() and active is not None and active.id() == view.id()


def asked(view: sublime.View, owner: str, key: str, words: str) -> None:
    """Something waits for an answer in `view` (a chat's own view, a review's proposal)."""
    window = view.window()
    if window is None or is_seen(view):
        return
    _waiting.setdefault(window.id(), {})[(owner, key)] = words
    _show(window)


def answered(owner: str, key: str | None) -> None:
    """It was answered or withdrawn (or its chat closed: `key` None drops all of the owner's)."""
    for window_id, waiting in list(_waiting.items()):
        for found in [k for k in waiting if k[0] == owner and (key is None or k[1] == key)]:
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

"""The status-bar item of each window: connected, waiting or paused (main thread only)."""

from __future__ import annotations

import sublime

from . import settings
from .window_state import WindowState

STATUS_KEY = "gemini_companion"


def status_text(state: WindowState) -> str:
    """`Gemini ● · Claude ○`: each agent the window serves, connected (●, with a count when several)
    or waiting (○), or refused (✕ unsafe folder: its file was not written, the doctor says why); one
    word for the whole window while it starts, failed or is paused."""
    handle = state.handle
    if not handle.ready.done() or handle.ready.exception() is not None:
        return "Gemini ✕" if handle.ready.done() else "Gemini …"
    agents = [("Gemini", handle.connected_clients, bool(handle.discovery_problem))] if handle.serves_gemini else []
    agents += [("Claude", handle.claude_clients, handle.lock_refused)] if handle.serves_claude else []
    if handle.context.paused:  # both agents see nothing while paused
        return " · ".join(name for name, _, _ in agents or [("Gemini", [], False)]) + " ⏸ paused"
    return " · ".join(_agent_state(name, len(clients), refused) for name, clients, refused in agents) or "Gemini ○"


def _agent_state(name: str, count: int, refused: bool = False) -> str:
    if refused and count == 0:  # no client can find the window: its file's folder was refused
        return f"{name} ✕ unsafe folder"
    if count == 0:
        return f"{name} ○"
    return f"{name} ●" if count == 1 else f"{name} ● {count}"


def show(state: WindowState) -> None:
    """Put the window's status on each of its views (Sublime's status bar is per view)."""
    window = state.window
    if not window.is_valid():
        return
    text = status_text(state) if settings.get("show_status_bar", True) else ""
    chat = state.chat_status if text else ""
    text = f"{text} · {chat}" if chat else text
    for view in window.views():
        if text:
            view.set_status(STATUS_KEY, text)
        else:
            view.erase_status(STATUS_KEY)


def show_later(state: WindowState) -> None:
    """From any thread: update the status bar on the main thread."""
    sublime.set_timeout(lambda: show(state))


def clear(window: sublime.Window) -> None:
    for view in window.views():
        view.erase_status(STATUS_KEY)

"""A window's views → its context tracker (what both agents see: open files, active file, cursor).

The listeners call these on Sublime's async worker. `seed` does the same for a window whose
server has just opened: Sublime synthesises `on_activated_async` right after loading the package
(`synthesize_on_activated_async` in its `sublime_plugin.py`), but our registry exists only once
the loop thread has checked the libraries, so that event finds no server. Without the seed, an
agent would see no active file after start, reload or upgrade until the user changed the focus.
"""

from __future__ import annotations

import os

import sublime

from ..core.context import MAX_SELECTED_TEXT, Position
from . import terminus as terminal
from .review_ui import REVIEW_SETTING
from .windows import WindowState


def tracked_path(view: sublime.View) -> str | None:
    """The file a view shows, if it belongs in the CLI's context: a real file on disk in a tab."""
    if not view.is_valid() or view.element() is not None or view.sheet() is None:
        return None
    view_settings = view.settings()
    if view_settings.get("terminus_view") or view_settings.get(REVIEW_SETTING) is not None:
        return None
    path = view.file_name()
    return path if path and os.path.isfile(path) else None


def cursor_and_selection(view: sublime.View) -> tuple[Position | None, str | None, Position | None]:
    """The primary selection in the agents' units (1-based line, UTF-16 character): the cursor, the
    selected text, and the selection's other end (Claude Code is told the whole range)."""
    selection = view.sel()
    if len(selection) == 0:
        return None, None, None
    region = selection[0]
    row, column = view.rowcol_utf16(region.b)
    anchor_row, anchor_column = view.rowcol_utf16(region.a) if region.a != region.b else (row, column)
    text = None
    if not region.empty():
        begin = region.begin()
        # Read at most what can be sent: a 10 MB selection must not be copied on every keystroke.
        text = view.substr(sublime.Region(begin, min(region.end(), begin + MAX_SELECTED_TEXT)))
    return Position(row + 1, column + 1), text, Position(anchor_row + 1, anchor_column + 1)


def activate(state: WindowState, view: sublime.View) -> None:
    """`view` has the focus in the state's window (async worker): it becomes the active file."""
    window = state.window
    agent = terminal.agent_of_terminal(view, window)
    if agent is not None:
        state.last_agent = agent.key  # the user is working with this agent: Send goes there
    path = tracked_path(view)  # a stat: never on the main thread
    if path is None:
        forget(state, view.id())  # e.g. its file was deleted while it was open
        return
    previous = state.paths.get(view.id())
    if previous is not None and previous != path:
        state.handle.context.rename(previous, path)  # "Save As" or a rename in the side bar
    state.paths[view.id()] = path
    cursor, text, anchor = cursor_and_selection(view)
    state.handle.context.activate(path, cursor, text, anchor)


def select(state: WindowState, view: sublime.View) -> None:
    """The selection of a view in the context changed (async worker)."""
    path = view.file_name()
    if path is None or view.id() not in state.paths:
        return
    cursor, text, anchor = cursor_and_selection(view)
    state.handle.context.select(path, cursor, text, anchor)


def forget(state: WindowState, view_id: int) -> None:
    """The view is gone (or shows no file any more): its file leaves the context unless another
    view of the window still shows it."""
    path = state.paths.pop(view_id, None)
    if path is not None and path not in state.paths.values():
        state.handle.context.close(path)


def seed(state: WindowState) -> None:
    """The window's server just opened: share the view that already has the focus (main thread or
    worker; the work runs on the async worker, where the listeners run)."""
    sublime.set_timeout_async(lambda: _seed_now(state))


def _seed_now(state: WindowState) -> None:
    if not state.window.is_valid() or state.handle.closed:
        return
    view = state.window.active_view()
    if view is not None and view.id() not in state.paths:  # a real activation got there first
        activate(state, view)

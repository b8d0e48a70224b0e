"""Editor events → each window's context, folder changes, and the user's review gestures.

The `_async` handlers run on Sublime's shared worker; they only read the view and update the
tracker, which hands the work to the server loop. `on_close` and the command hooks are
synchronous (Sublime offers no async variant), so they do the least possible.
"""

from __future__ import annotations

import os

import sublime
import sublime_plugin

from ..context import Position
from ..protocol import MAX_SELECTED_TEXT
from . import status, terminal
from .lifecycle import registry, shutdown
from .review_ui import REVIEW_SETTING, ROLE_SETTING
from .windows import WindowState

SAVE_COMMANDS = ("save", "prompt_save_as", "save_all")


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


def _state(window: sublime.Window | None) -> WindowState | None:
    reg = registry()
    return reg.get(window) if reg is not None else None


class GeminiCompanionContextListener(sublime_plugin.EventListener):
    def __init__(self) -> None:
        self._paths: dict[int, tuple[int, str]] = {}  # view id → (window id, path) for close/rename

    def on_activated_async(self, view: sublime.View) -> None:
        window = view.window()
        reg = registry()
        if reg is None or window is None:
            return
        reg.sync_folders(window)
        state = reg.get(window)
        if state is not None:
            status.show_later(state)  # the status bar is per view: a newly focused view needs it too
        path = tracked_path(view)
        if state is None:
            return
        agent = terminal.agent_of_terminal(view, window)
        if agent is not None:
            state.last_agent = agent.key  # the user is working with this agent: Send goes there
        if path is None:
            self._forget(view, state)  # e.g. its file was deleted while it was open
            return
        self._remember(view, window, state, path)
        cursor, text, anchor = cursor_and_selection(view)
        state.handle.context.activate(path, cursor, text, anchor)

    def on_selection_modified_async(self, view: sublime.View) -> None:
        path = view.file_name()
        state = _state(view.window())
        if path is None or state is None or view.id() not in self._paths:
            return
        cursor, text, anchor = cursor_and_selection(view)
        state.handle.context.select(path, cursor, text, anchor)

    def on_load_async(self, view: sublime.View) -> None:
        window = view.window()
        if window is not None and window.active_view() == view:
            self.on_activated_async(view)

    def on_post_save_async(self, view: sublime.View) -> None:
        window = view.window()
        if window is not None and window.active_view() == view:
            self.on_activated_async(view)

    def on_close(self, view: sublime.View) -> None:
        known = self._paths.pop(view.id(), None)
        if known is None:
            return
        window_id, path = known
        if any(w == window_id and p == path for w, p in self._paths.values()):
            return  # another view of the same file is still open in that window
        reg = registry()
        state = next((s for s in reg.all() if s.window.id() == window_id), None) if reg else None
        if state is not None:
            state.handle.context.close(path)

    def _forget(self, view: sublime.View, state: WindowState) -> None:
        known = self._paths.pop(view.id(), None)
        if known is not None and not any(p == known[1] for _w, p in self._paths.values()):
            state.handle.context.close(known[1])

    def _remember(self, view: sublime.View, window: sublime.Window, state: WindowState, path: str) -> None:
        previous = self._paths.get(view.id())
        if previous is not None and previous[1] != path:
            state.handle.context.rename(previous[1], path)  # "Save As" or a rename in the side bar
        self._paths[view.id()] = (window.id(), path)

    def on_new_window_async(self, window: sublime.Window) -> None:
        reg = registry()
        if reg is not None:
            reg.open(window)

    def on_pre_close_window(self, window: sublime.Window) -> None:
        reg = registry()
        if reg is not None:
            reg.close(window)

    def on_load_project_async(self, window: sublime.Window) -> None:
        reg = registry()
        if reg is not None:
            reg.sync_folders(window)

    def on_post_window_command(self, window: sublime.Window, command_name: str, args: dict | None) -> None:
        reg = registry()
        if reg is not None:
            reg.sync_folders(window)

    def on_exit(self) -> None:
        shutdown(api_alive=False)  # "after the API has shut down": no API calls here


class GeminiCompanionReviewListener(sublime_plugin.EventListener):
    """Save on a proposal accepts it; closing it rejects it."""

    def on_close(self, view: sublime.View) -> None:
        # Found by the proposal's view id among every window's reviews, never through
        # `view.window()`: it is None in on_close, and two ST4 regressions made it None in
        # on_pre_close too (sublimehq/sublime_text#3463, #3516), which left the agent waiting.
        reg = registry()
        for state in reg.all() if reg is not None else ():
            state.reviews.proposal_closed_by_user(view.id())

    def on_text_command(self, view: sublime.View, command_name: str, args: dict | None) -> tuple[str, dict] | None:
        if command_name in SAVE_COMMANDS and view.settings().get(ROLE_SETTING) == "proposal":
            return ("gemini_companion_save_review", {})
        return None

    def on_window_command(
        self, window: sublime.Window, command_name: str, args: dict | None
    ) -> tuple[str, dict] | None:
        if command_name in ("save", "prompt_save_as"):
            view = window.active_view()
            if view is not None and view.settings().get(ROLE_SETTING) == "proposal":
                return ("gemini_companion_apply", {})
        return None

    def on_query_context(
        self, view: sublime.View, key: str, operator: int, operand: object, match_all: bool
    ) -> bool | None:
        if key != "gemini_companion.review_proposal":
            return None
        is_proposal = view.settings().get(ROLE_SETTING) == "proposal"
        expected = operand if isinstance(operand, bool) else True
        if operator == sublime.QueryOperator.NOT_EQUAL:
            return is_proposal != expected
        return is_proposal == expected

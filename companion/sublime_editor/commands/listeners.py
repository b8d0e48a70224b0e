"""Editor events → each window's context, folder changes, and the user's review gestures.

The `_async` handlers run on Sublime's shared worker; they only read the view and update the
tracker, which hands the work to the server loop. `on_close` and the command hooks are
synchronous (Sublime offers no async variant), so they do the least possible.
"""

from __future__ import annotations

import sublime
import sublime_plugin

from .. import context_feed, status
from ..lifecycle import shutdown
from ..review_ui import ROLE_SETTING
from ..windows import registry, state_of

# Commands that save the view, ours to turn into Accept on a proposal. `lsp_save` is LSP's: its key
# binding replaces Ctrl+S / Cmd+S where a language server serves the view, runs code actions and
# formatting on save, then the native `save` (sublimelsp/LSP @ 7ffc721 `Default.sublime-keymap`
# L239–244, `plugin/save_command.py` LspSaveCommand): rewritten here, LSP never edits a proposal.
SAVE_COMMANDS = ("save", "prompt_save_as", "save_all", "lsp_save")


def _reconcile() -> None:
    reg = registry()
    if reg is not None:
        reg.reconcile()


class GeminiCompanionContextListener(sublime_plugin.EventListener):
    def on_activated_async(self, view: sublime.View) -> None:
        window = view.window()
        reg = registry()
        if reg is None or window is None:
            return
        reg.sync_folders(window)
        state = state_of(window)
        if state is not None:
            status.show_later(state)  # the status bar is per view: a newly focused view needs it too
            context_feed.activate(state, view)

    def on_selection_modified_async(self, view: sublime.View) -> None:
        state = state_of(view.window())
        if state is not None:
            context_feed.select(state, view)

    def on_load_async(self, view: sublime.View) -> None:
        window = view.window()
        if window is not None and window.active_view() == view:
            self.on_activated_async(view)

    def on_post_save_async(self, view: sublime.View) -> None:
        window = view.window()
        if window is not None and window.active_view() == view:
            self.on_activated_async(view)

    def on_close(self, view: sublime.View) -> None:
        reg = registry()  # view.window() is None by now: the window whose context has the view
        for state in reg.all() if reg is not None else []:
            if view.id() in state.paths:
                context_feed.forget(state, view.id())

    def on_new_window_async(self, window: sublime.Window) -> None:
        # Opened on the main thread, where the poll's reconcile opens windows too (one thread, so a
        # window never gets two servers); LSP's `on_new_window_async` does the same (boot.py @ 0194086).
        sublime.set_timeout(_reconcile)

    def on_pre_close_window(self, window: sublime.Window) -> None:
        # Only a hint: it has not fired on macOS and Windows since build 4126 (sublimehq/sublime_text
        # #5148), and the user may still cancel a save prompt. Once the close is over, the windows
        # that exist decide; the once-a-second poll does the same when the event never comes.
        sublime.set_timeout(_reconcile)

    def on_load_project_async(self, window: sublime.Window) -> None:
        reg = registry()
        if reg is not None:
            reg.sync_folders(window)

    def on_post_window_command(self, window: sublime.Window, command_name: str, args: dict | None) -> None:
        # After every window command, on the main thread: only the folders are compared (Add Folder,
        # Remove Folder show at once); nothing else is read unless they changed.
        reg = registry()
        if reg is not None:
            reg.sync_if_folders_changed(window)

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
            # The text as the user saw it when they asked: Accept sends nothing that changed since.
            return ("gemini_companion_save_review", {"seen": view.change_count()})
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

"""Commands: Open Gemini CLI in Terminus, and send selections, files and folders to it."""

from __future__ import annotations

import logging
import os

import sublime
import sublime_plugin

from ..workspace.paths import is_inside
from . import terminal
from .lifecycle import registry
from .windows import WindowState

log = logging.getLogger("gemini_companion")

TERMINAL_WAIT_MS = 10_000
TERMINAL_POLL_MS = 200


def _state(window: sublime.Window | None) -> WindowState | None:
    reg = registry()
    return reg.get(window) if reg is not None else None


def open_cli(window: sublime.Window, then: str | None = None) -> None:
    """Focus the window's Gemini CLI terminal, opening it first if needed; then type `then`."""
    state = _state(window)
    if state is None:
        sublime.status_message("Gemini Companion is not running in this window; see the console for why.")
        return
    editor_pid = state.handle.runtime.editor_pid
    existing = terminal.find_terminal(window, editor_pid)
    if existing is not None:
        terminal.focus_terminal(window, existing)
        if then:
            _send(window, then, editor_pid)
        return
    if not terminal.terminus_installed():
        sublime.message_dialog(
            "Gemini Companion opens Gemini CLI in a Terminus terminal, and Terminus is not installed.\n\n"
            "Install it with “Package Control: Install Package” → Terminus, or run `gemini` in any terminal "
            "inside this window's folder: it connects to this window all the same."
        )
        return
    folders = window.folders()
    if not folders:
        sublime.message_dialog(
            "Open a folder first (File › Open Folder…).\n\nGemini CLI works on a folder, and connects to the "
            "Sublime Text window that has that folder open."
        )
        return
    if len(folders) == 1:
        _launch(window, state, folders[0], then)
        return

    def chosen(index: int) -> None:
        if index >= 0:
            _launch(window, state, folders[index], then)

    window.show_quick_panel([[os.path.basename(f) or f, f] for f in folders], chosen, placeholder="Run Gemini CLI in…")


def _launch(window: sublime.Window, state: WindowState, folder: str, then: str | None) -> None:
    if not state.handle.ready.done() or state.handle.ready.exception() is not None:
        sublime.status_message("Gemini Companion: the server is not ready yet; try again in a moment.")
        return
    state.terminal_folder = folder
    editor_pid = state.handle.runtime.editor_pid
    args = terminal.open_args(window, state.handle, folder, editor_pid)
    log.debug("opening Gemini CLI in Terminus: %s in %s (server port %s)", args["cmd"], folder, state.handle.port)
    window.run_command("terminus_open", args)
    if then:
        _send_when_open(window, then, TERMINAL_WAIT_MS, editor_pid)


def _send_when_open(window: sublime.Window, text: str, remaining_ms: int, editor_pid: int) -> None:
    if terminal.find_terminal(window, editor_pid) is not None:
        _send(window, text, editor_pid)
    elif remaining_ms > 0:
        sublime.set_timeout(
            lambda: _send_when_open(window, text, remaining_ms - TERMINAL_POLL_MS, editor_pid), TERMINAL_POLL_MS
        )
    else:
        sublime.status_message("Gemini Companion: the Gemini CLI terminal did not open; nothing was sent.")


def _send(window: sublime.Window, text: str, editor_pid: int) -> None:
    window.run_command("terminus_send_string", {"string": text + " ", "tag": terminal.tag_for(window)})
    view = terminal.find_terminal(window, editor_pid)
    if view is not None:
        terminal.focus_terminal(window, view)


def _folder_for(window: sublime.Window, path: str) -> str | None:
    state = _state(window)
    if state is not None and state.terminal_folder:
        return state.terminal_folder
    containing = [f for f in window.folders() if is_inside(path, f)]  # Windows: case-insensitive
    return containing[0] if containing else None


class GeminiCompanionOpenCliCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Open Gemini CLI."""

    def run(self) -> None:
        open_cli(self.window)


class GeminiCompanionSendSelectionCommand(sublime_plugin.TextCommand):
    """Send the selection (or the current line) as `@path#Lstart-end`."""

    def run(self, edit: sublime.Edit) -> None:
        window, path = self.view.window(), self.view.file_name()
        if window is None or path is None:
            return
        region = self.view.sel()[0]
        first = self.view.rowcol(region.begin())[0] + 1
        end = region.end()
        if not region.empty() and self.view.rowcol(end)[1] == 0 and end > region.begin():
            end -= 1  # a selection ending at the start of a line does not include that line
        last = self.view.rowcol(end)[0] + 1
        open_cli(window, terminal.mention(path, _folder_for(window, path), (first, last)))

    def is_enabled(self) -> bool:
        return self.view.file_name() is not None and len(self.view.sel()) > 0


class GeminiCompanionSendFileCommand(sublime_plugin.TextCommand):
    """Send the whole file as `@path`."""

    def run(self, edit: sublime.Edit) -> None:
        window, path = self.view.window(), self.view.file_name()
        if window is not None and path is not None:
            open_cli(window, terminal.mention(path, _folder_for(window, path)))

    def is_enabled(self) -> bool:
        return self.view.file_name() is not None


class GeminiCompanionSendPathsCommand(sublime_plugin.WindowCommand):
    """Side bar: send the chosen files and folders."""

    def run(self, paths: list[str] | None = None) -> None:
        chosen = paths or []
        if chosen:
            open_cli(self.window, " ".join(terminal.mention(p, _folder_for(self.window, p)) for p in chosen))

    def is_enabled(self, paths: list[str] | None = None) -> bool:
        return bool(paths)

"""A stand-in for the Terminus package (randy3k/Terminus @ 403d10e), loaded into the fake Sublime.

It defines the commands Gemini Companion calls with Terminus' exact signatures, so an argument
Terminus does not accept fails (TypeError on the worker, recorded by the fake), and it resolves the
arguments the way Terminus does before spawning (`terminus/commands.py::TerminusOpenCommand.run_async`,
`terminus/terminal.py::Terminal.start`, `TerminusSendStringCommand.run`):

* `run` defers to the async worker; `cmd` and `cwd` go through `sublime.expand_variables` with the
  window's variables; `cwd` falls back to the first folder, then to the home folder when it is not
  a directory; `panel_name` implies `show_in_panel`; a tag that names a running terminal (in the
  active window) kills it and reuses its view;
* the child's environment is the host's `os.environ` updated with the passed `env`, in which
  Terminus forces `TERM_PROGRAM=Terminus-Sublime` and `TERMINUS_SUBLIME=1` and adds `TERM`/`LANG`;
* a terminal starts in three steps, as in Terminus: the view gets its settings (`terminus_view.tag`,
  `terminus_view.args`, the caller's `view_settings`: `commands.py` L463–537,
  `TerminusInitializeViewCommand`), then the `Terminal` is registered under the view's id and its
  process spawned (`terminal.py` L201–241, `Terminal.start`, run by `TerminusActivateCommand` right
  after the settings, `commands.py` L540–562), then its renderer draws the screen for the first
  time, which sets `terminus_view.viewport_y` (`render.py` L126–154 run `terminus_show_cursor`, whose
  `scroll_to_cursor` sets it on a later main-thread turn, L311–322 and L354–361). A test can hold
  terminals between the first two steps (`hold_starts`, `release_starts()`): the moment in which a
  terminal's settings exist and Terminus does not know it yet;
* `Terminal.from_tag(tag)` only finds a terminal of the **active** window (`current_window_only`
  defaults to true, `terminal.py` L53–65); `terminus_send_string` then falls back to the calling
  window's most recent terminal, then to any terminal panel or tab of it (`commands.py` L974–1061,
  `TerminusFindTerminalMixin.find_terminal`, shortened here to those three looks), and fails ("no
  terminal found" / "process is terminated") like Terminus;
* `terminus_paste_text` types into the terminal of its own view and does nothing when that view
  has no registered terminal (`commands.py` L827–844); it is what `terminus_send_string` runs on
  the terminal it found (L1110–1111).

Nothing is spawned: each `Terminal` records what would run (`cmd`, `cwd`, `env`) and what was typed
into it; a test runs the command itself when it wants the process. Terminus does its view work on
the worker thread (the real API allows it); the stand-in does it on the main thread so the fake's
thread checks keep pointing at Gemini Companion only.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sublime
import sublime_plugin

DEFAULT_PANEL = "Terminus"
DEFAULT_TITLE = "Terminus"


@dataclass
class Terminal:
    view: sublime.View
    window_id: int
    tag: str | None
    cmd: list[str]
    cwd: str
    env: dict[str, str]  # what the child process sees
    passed: dict[str, Any]  # the arguments as terminus_open received them
    show_in_panel: bool
    panel_name: str | None
    alive: bool = True
    typed: list[str] = field(default_factory=list)

    @property
    def window(self) -> sublime.Window | None:
        """The window the view is in now (Terminus' `Terminal.window`, terminal.py L77–84)."""
        return self.view.window() if self.view.is_valid() else None

    def finish(self) -> None:
        """The process exits (the user quits gemini); with auto_close false the view stays."""
        self.alive = False
        self.view.settings().set("terminus_view.finished", True)
        if self.passed.get("auto_close", True) is True:
            window = self.view.window()
            if self.show_in_panel and window is not None and self.panel_name:
                window.destroy_output_panel(self.panel_name)
            else:
                self.view.close()


terminals: dict[int, Terminal] = {}  # view id -> its terminal (Terminus' Terminal._terminals)
started: list[Terminal] = []  # every process started, in order
recent: dict[int, int] = {}  # window id -> view id of its most recent terminal (RecencyManager)
hold_starts = False  # a test's switch: terminals wait between their view settings and their start
held: list[Callable[[], None]] = []


def from_tag(tag: str, current_window_only: bool = True) -> Terminal | None:
    """terminal.py L53–65: with `current_window_only`, a terminal of another window is not found."""
    for terminal in terminals.values():
        if terminal.tag == tag:
            if not current_window_only:
                return terminal
            window = terminal.window
            if window is not None and window == sublime.active_window():
                return terminal
    return None


def release_starts() -> None:
    """The held terminals start (on this main-thread turn, one after another)."""
    while held:
        held.pop(0)()


def _find_terminal(window: sublime.Window, tag: str | None) -> Terminal | None:
    """`TerminusFindTerminalMixin.find_terminal`: by tag (active window only), else the window's
    most recent terminal, else a terminal panel of the window, else a terminal tab of it."""
    terminal = from_tag(tag) if tag else None
    if terminal is not None:
        return terminal
    recent_view = recent.get(window.id())
    if recent_view in terminals and terminals[recent_view].window == window:
        return terminals[recent_view]
    panels = [t for t in terminals.values() if t.window == window and t.show_in_panel]
    tabs = [t for t in terminals.values() if t.window == window and not t.show_in_panel]
    return (panels + tabs)[0] if panels or tabs else None


def _check_strings(what: str, value: Any) -> None:
    if not isinstance(value, list) or not value or not all(isinstance(part, str) for part in value):
        raise TypeError(f"{what} must be a non-empty list of strings, not {value!r}")


class TerminusOpenCommand(sublime_plugin.WindowCommand):
    def run(self, **kwargs: Any) -> None:
        kwargs = copy.deepcopy(kwargs)  # Sublime hands each command its own decoded copy of the arguments
        sublime.set_timeout_async(lambda: self.run_async(**kwargs))

    def run_async(  # Terminus' own signature, argument for argument
        self,
        config_name: str | None = None,
        cmd: list[str] | str | None = None,
        shell_cmd: str | None = None,
        cwd: str | None = None,
        working_dir: str | None = None,
        env: dict[str, str] | None = None,
        title: str | None = None,
        show_in_panel: bool | None = None,
        panel_name: str | None = None,
        focus: bool = True,
        tag: str | None = None,
        file_regex: str | None = None,
        line_regex: str | None = None,
        pre_window_hooks: list[Any] | None = None,
        post_window_hooks: list[Any] | None = None,
        post_view_hooks: list[Any] | None = None,
        view_settings: dict[str, Any] | None = None,
        auto_close: bool | str = True,
        cancellable: bool = False,
        reactivable: bool = True,
        timeit: bool = False,
        paths: list[str] | None = None,
    ) -> None:
        passed = copy.deepcopy({k: v for k, v in locals().items() if k != "self"})
        env = env or {}
        st_vars = self.window.extract_variables()
        if cmd and shell_cmd:
            raise Exception("both `cmd` are `shell_cmd` are passed to terminus_open")
        if shell_cmd is not None:
            if not isinstance(shell_cmd, str):
                raise ValueError("shell_cmd should be a string")
            cmd_to_run: Any = ["/usr/bin/env", "bash", "-c", shell_cmd]
        elif cmd is not None:
            cmd_to_run = [cmd] if isinstance(cmd, str) else cmd
        else:
            raise Exception("both `cmd` are `shell_cmd` are empty")  # (a config_name would be used)
        _check_strings("cmd", cmd_to_run)
        cmd_to_run = sublime.expand_variables(cmd_to_run, st_vars)
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise TypeError(f"env must map strings to strings (the pty's execvpe needs them): {env!r}")
        _env = env  # the same dict, as in Terminus: the forced values below win over the caller's
        _env["TERMINUS_SUBLIME"] = "1"
        _env["TERM_PROGRAM"] = "Terminus-Sublime"
        if not sys.platform.startswith("win"):
            settings = sublime.load_settings("Terminus.sublime-settings")
            _env.setdefault("TERM", settings.get("unix_term", "linux"))
            if _env["TERM"] not in ["linux", "xterm", "xterm-16color", "xterm-256color"]:
                raise Exception("{} is not supported.".format(_env["TERM"]))  # commands.py L137–138
            _env.setdefault("LANG", os.environ.get("LANG") or settings.get("unix_lang", "en_US.UTF-8"))
        _env.update(env)
        if "PROMPT_TOOLKIT_COLOR_DEPTH" not in os.environ and "PROMPT_TOOLKIT_COLOR_DEPTH" not in _env:
            _env["PROMPT_TOOLKIT_COLOR_DEPTH"] = "DEPTH_8_BIT"
        if paths:
            cwd = paths[0] if os.path.isdir(paths[0]) else os.path.dirname(paths[0])
        else:
            if not cwd and working_dir:
                cwd = working_dir
            if cwd:
                cwd = str(sublime.expand_variables(cwd, st_vars))
        if not cwd:
            folders = self.window.folders()
            cwd = folders[0] if folders else os.path.expanduser("~")
        if not os.path.isdir(cwd):
            cwd = os.path.expanduser("~")
        if show_in_panel is None and panel_name:
            show_in_panel = True
        child_env = os.environ.copy()
        child_env.update(_env)
        window_id = self.window.id()

        def on_main() -> None:
            window = sublime.Window(window_id)
            if not window.is_valid():
                return
            view = None
            name = panel_name
            existing = from_tag(tag) if tag else None
            if existing is None and show_in_panel and panel_name:
                panel = window.find_output_panel(panel_name)
                existing = terminals.get(panel.id()) if panel is not None else None
            if existing is not None:
                existing.alive = False  # terminal.kill()
                view = existing.view
                del terminals[view.id()]
            if view is None:
                name = name or DEFAULT_PANEL
                view = window.create_output_panel(name) if show_in_panel else window.new_file()
            for hook in pre_window_hooks or []:
                window.run_command(*hook)
            # terminus_initialize_view: the view's settings, before Terminus knows the terminal.
            view_settings_ = view.settings()
            view_settings_.erase("terminus_view.finished")
            view_settings_.erase("terminus_view.viewport_y")
            view_settings_.set("terminus_view", True)
            # Terminus keeps the arguments in the view's settings (terminus_activate's, which carry
            # the env), and Sublime writes a tab's settings to the session file.
            view_settings_.set("terminus_view.args", {**passed, "cmd": cmd_to_run, "cwd": cwd, "env": _env})
            if tag:
                view_settings_.set("terminus_view.tag", tag)
            view_settings_.set("terminus_view.reactivable", reactivable)
            for key, value in (view_settings or {}).items():  # "honor settings specified in API"
                view_settings_.set(key, value)
            view.set_scratch(True)
            terminal = Terminal(view, window_id, tag, cmd_to_run, cwd, child_env, passed, bool(show_in_panel), name)

            def start() -> None:  # Terminal.start, then the rest of run_async
                if not view.is_valid():
                    return
                _start(terminal)
                if show_in_panel:
                    window.run_command("show_panel", {"panel": f"output.{name}"})
                if focus:
                    window.focus_view(view)

            if hold_starts:
                held.append(start)
            else:
                sublime.set_timeout(start)

        sublime.set_timeout(on_main)


def _start(terminal: Terminal) -> None:
    """Terminal.start: registered under its view's id, the process spawned, made the window's
    recent terminal; its first render then sets `terminus_view.viewport_y` on a later turn."""
    terminals[terminal.view.id()] = terminal
    started.append(terminal)
    window = terminal.window
    if window is not None:
        recent[window.id()] = terminal.view.id()
    title = terminal.passed.get("title")
    st_vars = window.extract_variables() if window is not None else {}
    terminal.view.set_name(str(sublime.expand_variables(title, st_vars)) if title else DEFAULT_TITLE)

    def first_render() -> None:
        if terminals.get(terminal.view.id()) is terminal:
            terminal.view.settings().set("terminus_view.viewport_y", 0.0)

    sublime.set_timeout(first_render)


class TerminusSendStringCommand(sublime_plugin.WindowCommand):
    """Send string to a (tagged) terminal."""

    def run(self, string: str, tag: str | None = None, visible_only: bool = False, bracketed: bool = False) -> None:
        if not isinstance(string, str):
            raise TypeError(f"string must be a string, not {string!r}")
        terminal = _find_terminal(self.window, tag)
        if terminal is None:
            raise Exception("no terminal found")
        if not terminal.alive:
            raise Exception("process is terminated")
        if terminal.show_in_panel:
            self.window.run_command("show_panel", {"panel": f"output.{terminal.panel_name}"})
        terminal.view.run_command("terminus_paste_text", {"text": string, "bracketed": bracketed})


class TerminusPasteTextCommand(sublime_plugin.TextCommand):
    """Type `text` into this view's terminal; nothing when the view has none (yet)."""

    def run(self, edit: sublime.Edit, text: str, bracketed: bool = True) -> None:
        terminal = terminals.get(self.view.id())
        if terminal is None:
            return
        # Gemini CLI and Claude Code turn bracketed paste on; Terminus then wraps the text in the
        # paste markers (commands.py L834–844), which the stand-in leaves out of what it records.
        terminal.typed.append(text)


def restart() -> None:
    """Sublime Text restarts: every terminal process is gone; the views come back from the session
    with their settings (a panel's do not: Sublime does not restore output panels)."""
    terminals.clear()
    recent.clear()
    held.clear()


def reactivate(view: sublime.View) -> Terminal | None:
    """Terminus' on_activated (event_listeners.py) for a view without a running terminal: a restored
    terminal that did not finish is run again with its saved arguments, unless it said it is not
    reactivable (or the user turned `reactivate_terminals` off)."""
    view_settings = view.settings()
    if view.id() in terminals or not view_settings.has("terminus_view.args"):
        return None
    if view_settings.get("terminus_view.finished", False):
        return None
    if sublime.load_settings("Terminus.sublime-settings").get("reactivate_terminals", True) is not True:
        return None
    if not view_settings.get("terminus_view.reactivable", False):
        return None
    args = view_settings.get("terminus_view.args")
    window = view.window()
    assert window is not None
    child_env = {**os.environ, **args["env"]}
    terminal = Terminal(view, window.id(), args.get("tag"), args["cmd"], args["cwd"], child_env, args, False, None)
    view_settings.erase("terminus_view.viewport_y")  # terminus_activate initializes the view again
    _start(terminal)
    return terminal


class TerminusCoreEventListener(sublime_plugin.EventListener):
    def on_activated_async(self, view: sublime.View) -> None:
        """A terminal the user focuses becomes its window's recent one (event_listeners.py L17–35)."""
        terminal = terminals.get(view.id())
        window = terminal.window if terminal is not None else None
        if window is not None:
            recent[window.id()] = view.id()


def plugin_unloaded() -> None:
    global hold_starts
    terminals.clear()
    started.clear()
    recent.clear()
    held.clear()
    hold_starts = False

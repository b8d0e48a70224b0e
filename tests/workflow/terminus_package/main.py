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
* `terminus_send_string` finds the terminal by tag, else any terminal of the window, and fails
  ("no terminal found" / "process is terminated") like Terminus.

Nothing is spawned: each `Terminal` records what would run (`cmd`, `cwd`, `env`) and what was typed
into it; a test runs the command itself when it wants the process. Terminus does its view work on
the worker thread (the real API allows it); the stand-in does it on the main thread so the fake's
thread checks keep pointing at Gemini Companion only.
"""

from __future__ import annotations

import copy
import os
import sys
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


terminals: dict[int, Terminal] = {}  # view id -> its terminal
started: list[Terminal] = []  # every process started, in order


def from_tag(tag: str) -> Terminal | None:
    window = sublime.active_window()
    for terminal in terminals.values():
        if terminal.tag == tag and terminal.view.is_valid() and terminal.window_id == window.id():
            return terminal
    return None


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
            view_settings_ = view.settings()
            view_settings_.erase("terminus_view.finished")
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
            view.set_name(str(sublime.expand_variables(title, st_vars)) if title else DEFAULT_TITLE)
            terminal = Terminal(view, window_id, tag, cmd_to_run, cwd, child_env, passed, bool(show_in_panel), name)
            terminals[view.id()] = terminal
            started.append(terminal)
            if show_in_panel:
                window.run_command("show_panel", {"panel": f"output.{name}"})
            if focus:
                window.focus_view(view)

        sublime.set_timeout(on_main)


class TerminusSendStringCommand(sublime_plugin.WindowCommand):
    """Send string to a (tagged) terminal."""

    def run(self, string: str, tag: str | None = None, visible_only: bool = False, bracketed: bool = False) -> None:
        if not isinstance(string, str):
            raise TypeError(f"string must be a string, not {string!r}")
        terminal = from_tag(tag) if tag else None
        if terminal is None:  # Terminus falls back to the window's most recent (or any) terminal
            terminal = next(
                (t for t in terminals.values() if t.window_id == self.window.id() and t.view.is_valid()), None
            )
        if terminal is None:
            raise Exception("no terminal found")
        if not terminal.alive:
            raise Exception("process is terminated")
        if terminal.show_in_panel:
            self.window.run_command("show_panel", {"panel": f"output.{terminal.panel_name}"})
        terminal.typed.append(string)


def restart() -> None:
    """Sublime Text restarts: every terminal process is gone; the views come back from the session
    with their settings (a panel's do not: Sublime does not restore output panels)."""
    terminals.clear()


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
    terminals[view.id()] = terminal
    started.append(terminal)
    return terminal


def plugin_unloaded() -> None:
    terminals.clear()
    started.clear()

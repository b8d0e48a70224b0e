"""A mention sent to Gemini CLI reaches its terminal whatever Sublime and Terminus are doing: the
window is not the active one, the terminal is starting, another package holds the shared async
worker, or Terminus fails to open it (then the user is told, with what to do).

The Terminus stand-in starts a terminal the way Terminus does (view settings first, then the
terminal it registers, then its first render) and finds tags in the active window only; see its
docstring for the sources."""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import pytest

from tests.sublime_editor.conftest import Companion, write
from tests.sublime_fake import _state, control, sublime
from tests.workflow.conftest import BusyWorker, open_agent, open_cli

# The modules that hold TERMINAL_WAIT_MS (as the loaded package names them).
WAIT_MODULES = tuple(f"Gemini Companion.companion.sublime_editor.{m}" for m in ("terminal.launch", "commands.terminal"))


def short_waits(monkeypatch: pytest.MonkeyPatch, ms: int = 300) -> None:
    """The terminal waits, short: the tests wait on what the user sees, never on a clock."""
    for name in WAIT_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            monkeypatch.setattr(module, "TERMINAL_WAIT_MS", ms, raising=False)


def send_to_gemini(window: sublime.Window, path: str) -> None:
    """The side bar's Send to Gemini CLI on `path`."""
    window.run_command("gemini_companion_send_paths", {"paths": [path], "agent": "gemini"})


def test_a_send_for_a_window_that_is_not_active_lands_in_its_gemini_terminal(
    companion: Companion, terminus: types.ModuleType, workspace: str, tmp_path: Any, busy_worker: BusyWorker
) -> None:
    """Terminus finds a tag in the active window only; a Send for another window must not end up
    in that window's most recent terminal (here the user's own shell)."""
    other = os.path.join(str(tmp_path), "other")
    os.makedirs(other)
    first = control.new_window([workspace])
    companion.load()
    companion.ready(first)
    gemini = open_cli(first, terminus)
    first.run_command("terminus_open", {"cmd": ["/bin/sh"], "cwd": workspace, "title": "shell"})
    shell = control.pump_until(lambda: next((t for t in terminus.started if t.tag is None), None), 30)
    second = control.new_window([other])
    companion.ready(second)
    control.settle()
    assert sublime.active_window() == second
    path = write(workspace, "a.py", "x = 1\n")
    busy_worker.hold()  # and Terminus' own activation listener cannot make Gemini's terminal the recent one
    send_to_gemini(first, path)
    control.pump_until(lambda: gemini.typed or shell.typed, 10, "the mention to be typed somewhere")
    assert gemini.typed == ["@a.py "] and shell.typed == []
    busy_worker.release()


def test_sends_while_the_terminal_starts_land_once_it_is_live_in_order(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    """Between the view's settings (its tag included) and Terminus registering the terminal, a Send
    waits; and it never opens the terminal again (that would kill the one starting)."""
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    terminus.hold_starts = True
    assert control.run_from_palette(window, "gemini_companion_open_cli")
    tag = f"gemini-companion-{window.id()}"
    panel = control.pump_until(
        lambda: (
            (p := window.find_output_panel("Gemini CLI")) is not None
            and p.settings().get("terminus_view.tag") == tag
            and p
        ),
        30,
        "the terminal's view settings",
    )
    assert terminus.terminals == {}  # Terminus does not know it yet
    first, second = write(workspace, "a.py", "a\n"), write(workspace, "b.py", "b\n")
    send_to_gemini(window, first)
    send_to_gemini(window, second)
    control.settle()
    assert control.errors() == [] and terminus.started == []
    terminus.release_starts()
    (terminal,) = control.pump_until(lambda: len(terminus.started[0].typed) == 2 and terminus.started, 10)
    assert terminal.typed == ["@a.py ", "@b.py "] and terminal.alive and terminal.view == panel
    assert len([c for c in control.command_log() if c[1] == "terminus_open"]) == 1


def test_a_send_while_another_package_holds_the_worker_is_typed_when_the_terminal_opens(
    companion: Companion,
    terminus: types.ModuleType,
    workspace: str,
    busy_worker: BusyWorker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    short_waits(monkeypatch)
    path = write(workspace, "a.py", "x = 1\n")
    busy_worker.hold()
    send_to_gemini(window, path)
    told = control.pump_until(
        lambda: [m for m in control.status_messages() if "Gemini CLI has not opened yet" in m],
        10,
        "the status bar to say the terminal is late",
    )
    assert "another package is keeping Sublime's shared worker busy" in told[0]
    assert "What you sent will be typed when it opens" in told[0]
    assert terminus.started == []
    busy_worker.release()
    terminal = control.pump_until(lambda: terminus.started and terminus.started[0].typed and terminus.started[0], 30)
    control.settle()
    assert terminal.typed == ["@a.py "] and len(terminus.started) == 1
    assert not [m for m in control.status_messages() if "nothing was sent" in m]


@pytest.mark.skipif(sys.platform.startswith("win"), reason="Terminus checks TERM on Linux and macOS only")
def test_when_terminus_cannot_open_the_terminal_the_user_is_told_nothing_was_sent_and_what_to_do(
    companion: Companion, terminus: types.ModuleType, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    control.user_settings("Terminus.sublime-settings", {"unix_term": "screen"})  # Terminus refuses it
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    short_waits(monkeypatch)
    send_to_gemini(window, write(workspace, "a.py", "x = 1\n"))
    told = control.pump_until(
        lambda: [m for m in control.status_messages() if "nothing was sent" in m], 10, "the status bar to say so"
    )
    assert "View › Show Console" in told[0] and "send again" in told[0]
    errors = control.errors()
    assert len(errors) == 1 and "screen is not supported" in errors[0]  # only in the console
    _state.host().errors.clear()
    assert terminus.started == []


def test_send_goes_to_the_agent_opened_last_even_when_the_worker_reports_an_older_focus_late(
    companion: Companion, terminus: types.ModuleType, workspace: str, busy_worker: BusyWorker
) -> None:
    """The flaky workflow test's second race: the `_async` activation of Claude Code's terminal ran,
    on a late shared worker, after the user had opened Gemini CLI, and Send went to Claude Code."""
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    gemini = open_cli(window, terminus)
    claude = open_agent(window, terminus, "gemini_companion_open_claude", f"gemini-companion-claude-{window.id()}")
    path = write(workspace, "a.py", "x = 1\n")
    control.open_file(window, path)
    control.settle()
    first = busy_worker.hold()  # other packages' work, before and between the two activations
    window.focus_view(claude.view)  # the user clicks into Claude Code's terminal...
    second = busy_worker.queue()
    assert control.run_from_palette(window, "gemini_companion_open_cli")  # ...then opens Gemini CLI
    first.release()
    second.wait_inside()  # Claude Code's activation has run on the worker; Gemini CLI's waits
    window.run_command("gemini_companion_send_paths", {"paths": [path]})
    assert gemini.typed == ["@a.py "] and claude.typed == [] and control.quick_panels() == []
    second.release()

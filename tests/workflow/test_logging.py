"""Logging: one "gemini_companion" logger on the console, `debug` switches it live, never the token."""

from __future__ import annotations

import logging
import types
from collections.abc import Iterator
from typing import Any

import pytest

from tests.sublime_editor.conftest import Companion, write
from tests.sublime_fake import control, sublime
from tests.workflow.conftest import SETTINGS, cli_command, open_cli, run_in_terminal

LOGGER = "gemini_companion"


def our_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger(LOGGER).handlers if getattr(h, "_gemini_companion", False)]


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(self.format(record))


@pytest.fixture
def captured() -> Iterator[Capture]:
    """Every log record of the process at DEBUG: ours (which do not propagate) and every library's."""
    capture = Capture()
    root = logging.getLogger()
    ours = logging.getLogger(LOGGER)
    level = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(capture)
    ours.addHandler(capture)
    yield capture
    root.removeHandler(capture)
    ours.removeHandler(capture)
    root.setLevel(level)


def test_one_console_handler_and_debug_switches_live(companion: Companion, workspace: str) -> None:
    control.new_window([workspace])
    companion.load()
    logger = logging.getLogger(LOGGER)
    assert len(our_handlers()) == 1 and logger.level == logging.WARNING and not logger.propagate
    control.user_settings(SETTINGS, {"debug": True})
    assert logger.level == logging.DEBUG
    control.user_settings(SETTINGS, {"debug": False})
    assert logger.level == logging.WARNING
    control.user_settings(SETTINGS, {"debug": True})
    companion.load()  # a reload (package upgrade) must not double every line
    assert len(our_handlers()) == 1 and logger.level == logging.DEBUG
    companion.unload()
    control.settle()
    assert our_handlers() == [] and logger.propagate


def review_views(window: sublime.Window) -> list[sublime.View]:
    return [v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"]


@pytest.mark.conformance
def test_a_whole_session_at_debug_never_logs_the_token(
    companion: Companion,
    terminus: types.ModuleType,
    workspace: str,
    container_env: None,
    captured: Capture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    control.user_settings(SETTINGS, {"debug": True, "gemini_command": cli_command()})
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    token = handle.token
    path = write(workspace, "main.py", "value = 1\n")
    view = control.open_file(window, path)
    control.select(view, sublime.Region(0, 5))
    cli = run_in_terminal(open_cli(window, terminus))
    try:
        cli.wait_connected()
        cli.wait_context(lambda c: any(f.get("selectedText") == "value" for f in c["workspaceState"]["openFiles"]))
        diff = cli.open_diff(path, "value = 2\n")
        control.pump_until(lambda: review_views(window))
        assert control.run_from_palette(window, "gemini_companion_apply")
        assert cli.wait_diff(diff)["status"] == "accepted"
        diff = cli.open_diff(path, "value = 3\n")
        proposal = control.pump_until(lambda: review_views(window) and review_views(window)[0])
        control.close_tab(proposal)
        assert cli.wait_diff(diff)["status"] == "rejected"
        assert control.run_from_palette(window, "gemini_companion_toggle_sharing")
        assert control.run_from_palette(window, "gemini_companion_toggle_sharing")
        assert control.run_from_palette(window, "gemini_companion_status")
        view.run_command("gemini_companion_send_selection")
        control.settle()
    finally:
        cli.stop()
    control.close_window(window)
    companion.unload()
    control.settle()

    ours = [r for r in captured.records if r.name == LOGGER]
    assert any(r.levelno == logging.DEBUG for r in ours)  # debug output is there: it is verbose
    messages = [r.getMessage() for r in ours]
    assert any("opening Gemini CLI" in m and str(handle.port) in m for m in messages)
    assert any("listening" in m for m in messages)
    console = capsys.readouterr()
    assert "Gemini Companion: DEBUG: opening Gemini CLI" in console.out  # on the console, through our handler
    everything: list[Any] = [*captured.lines, console.out, console.err, *(str(r.args) for r in captured.records)]
    assert len(captured.records) > 0
    assert not [line for line in everything if token in line]

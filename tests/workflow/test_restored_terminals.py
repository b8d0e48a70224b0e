"""Sublime starts with an agent's terminal tab restored: the agent connects without being told to.

Terminus runs a restored terminal again as Sublime starts, at the same moment as our package loads.
Gemini CLI reads the discovery file once, as it starts (`../shared/reference/gemini-cli-contract.md`
§3), so the file must be out before the server stack (the MCP SDK: most of a second to import on a
warm start, more on the first) has loaded. Here the stack's import is held until the real `gemini`
has started and shown its prompt, as on a slow first start: the window must still be found, and the
connection, made while the stack loads, is served once it has. Claude Code finds its lock file by
polling, the same way.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

import pytest

from companion.runtime import THREAD_NAME
from tests.conformance.claude_harness import API_KEY, ClaudeTerminal, ModelStandIn, claude_binary, make_config
from tests.conformance.harness import PINNED, GeminiTerminal, make_gemini_home, node
from tests.sublime_editor.conftest import Companion
from tests.sublime_fake import control, sublime

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the pty harness is POSIX")

# Set by CI: they make a TUI draw as for a log, not a terminal (the pty tests drop them too).
UNTTY = ("CI", "GITHUB_ACTIONS", "NO_COLOR", "GEMINI_CLI_NO_RELAUNCH")
SERVER_STACK = f"{control.PACKAGE_NAME}.companion.core.server.window_server"


class HeldServerStack(importlib.abc.MetaPathFinder):
    """Holds the loop thread's import of the window server's module (the MCP SDK, uvicorn) until
    `release()`: a server stack that is slow to load."""

    def __init__(self) -> None:
        self.holding = threading.Event()
        self._released = threading.Event()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == SERVER_STACK and threading.current_thread().name == THREAD_NAME:
            self.holding.set()
            self._released.wait(120)
        return None  # then imported as usual

    def release(self) -> None:
        self._released.set()


@pytest.fixture
def held_stack() -> Iterator[HeldServerStack]:
    held = HeldServerStack()
    sys.meta_path.insert(0, held)
    yield held
    held.release()
    sys.meta_path.remove(held)


def restored_tab(window: sublime.Window, cmd: list[str], cwd: str, env: dict[str, str]) -> sublime.View:
    """A terminal tab the user opened in an earlier run, as hot exit restores it: Terminus' saved
    arguments (with the environment Terminus gave it: TERM_PROGRAM is forced) and reactivable."""
    view = window.new_file()
    view.settings().set("terminus_view.args", {"cmd": cmd, "cwd": cwd, "env": env, "tag": None})
    view.settings().set("terminus_view.reactivable", True)
    return view


def run(terminal: Any, pty: GeminiTerminal) -> GeminiTerminal:
    """Start what the reactivated terminal runs (its command, folder and environment) in a pty."""
    pty.argv, pty.cwd, pty.env = list(terminal.cmd), terminal.cwd, dict(terminal.env)
    return pty.start()


def test_a_restored_gemini_cli_tab_finds_the_window_while_its_server_stack_loads(
    companion: Companion, terminus: types.ModuleType, workspace: str, tmp_path: Any, held_stack: HeldServerStack
) -> None:
    home = make_gemini_home(os.path.join(str(tmp_path), "gemini-home"))
    env = {
        "TERM_PROGRAM": "Terminus-Sublime",
        "GEMINI_CLI_HOME": home,
        "HOME": home,
        "GEMINI_API_KEY": "fake",
        "SSH_CONNECTION": "x",  # inside this container, else the client dials host.docker.internal
        "TERM": "xterm-256color",
    }
    window = control.new_window([workspace])
    view = restored_tab(window, [node(), PINNED.gemini_js, "-m", "gemini-2.5-flash"], workspace, env)
    # Sublime starts: Terminus runs the tab again, and our package loads, at the same moment.
    terminal = terminus.reactivate(view)
    assert terminal is not None
    terminal.env = {k: v for k, v in terminal.env.items() if k not in UNTTY}
    gemini = run(terminal, GeminiTerminal([], workspace, {}))
    try:
        companion.load()
        assert held_stack.holding.wait(60), "the server stack was imported before the test could hold it"
        # gemini is up and has looked for its IDE (detection runs once, at start-up) while the
        # server stack is still loading.
        gemini.wait_text("Type your message", 90)
        assert companion.discovery_files(), "no discovery file while the server stack loads"
        held_stack.release()
        handle = companion.ready(window)
        gemini.wait_ide_connected("Sublime Text", 90)  # no `/ide enable`: it found the window at start
        control.pump_until(lambda: handle.connected_clients, 30, "gemini to be a client of this window")
    finally:
        gemini.stop()


def test_a_restored_claude_code_tab_finds_the_window_while_its_server_stack_loads(
    companion: Companion, terminus: types.ModuleType, workspace: str, held_stack: HeldServerStack
) -> None:
    config = make_config(os.environ["CLAUDE_CONFIG_DIR"], workspace)  # its ide/ folder is the window's lock folder
    env = {
        "CLAUDE_CONFIG_DIR": config,
        "CLAUDE_CODE_AUTO_CONNECT_IDE": "1",  # as a user who said "Yes" to connecting to the IDE
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
        "ANTHROPIC_API_KEY": API_KEY,
        "TERM_PROGRAM": "Terminus-Sublime",
        "TERM": "xterm-256color",
    }
    window = control.new_window([workspace])
    with ModelStandIn("Write", {}) as model:
        env["ANTHROPIC_BASE_URL"] = model.url
        view = restored_tab(window, [claude_binary()], workspace, env)
        terminal = terminus.reactivate(view)
        assert terminal is not None
        terminal.env = {k: v for k, v in terminal.env.items() if k not in UNTTY}
        claude = run(terminal, ClaudeTerminal([], workspace, {}))
        try:
            companion.load()
            assert held_stack.holding.wait(60), "the server stack was imported before the test could hold it"
            control.pump_until(lambda: any(n.endswith(".lock") for n in _locks()), 30, "the lock file")
            claude.wait_text("for agents", 60)  # its prompt is up while the stack loads
            held_stack.release()
            handle = companion.ready(window)
            control.pump_until(lambda: handle.claude_clients == ["claude-code"], 60, "Claude Code to connect")
        except AssertionError as exc:
            raise AssertionError(claude.explain(str(exc))) from None
        finally:
            claude.stop()


def _locks() -> list[str]:
    folder = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "ide")
    return os.listdir(folder) if os.path.isdir(folder) else []

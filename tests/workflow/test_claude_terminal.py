"""Open Claude Code and Send to Agent, through the fake Sublime and the Terminus stand-in, with
the real `claude` started from exactly what Terminus would run: it connects to this window by the
port in its environment, and a sent selection lands in its prompt as `@path#Lstart-end`."""

from __future__ import annotations

import concurrent.futures
import json
import os
import pwd
import signal
import threading
import types
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conformance.claude_harness import API_KEY, ClaudeTerminal, ModelStandIn, claude_binary, make_config
from tests.sublime_editor.conftest import Companion, write
from tests.sublime_editor.test_claude import ThreadedClaude
from tests.sublime_fake import control, sublime
from tests.workflow.conftest import SETTINGS, open_agent, open_cli, status_of

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the pty harness is POSIX")


def open_claude(window: sublime.Window, terminus: types.ModuleType) -> Any:
    return open_agent(window, terminus, "gemini_companion_open_claude", f"gemini-companion-claude-{window.id()}")


@pytest.fixture
def real_claude(tmp_path: Any) -> Iterator[list[ClaudeTerminal]]:
    """Real `claude` processes started by the test; stopped at the end."""
    started: list[ClaudeTerminal] = []
    yield started
    for terminal in started:
        terminal.stop()


def spawn(terminal: Any, config: str, model: ModelStandIn) -> ClaudeTerminal:
    """Run what the Terminus terminal runs (its command, folder and environment), in a pty, with an
    offline config and the model stand-in (the test's additions, never the window's)."""
    env = {**terminal.env, "CLAUDE_CONFIG_DIR": config, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": API_KEY}
    env.update({"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "TERM": "xterm-256color"})
    claude = ClaudeTerminal([], terminal.cwd, env)
    claude.argv = list(terminal.cmd)  # the login shell running claude_command
    return claude.start()


def test_open_claude_code_runs_it_with_the_windows_port_and_the_real_claude_connects(
    companion: Companion, terminus: types.ModuleType, workspace: str, tmp_path: Any, real_claude: list[ClaudeTerminal]
) -> None:
    control.user_settings(SETTINGS, {"claude_command": [claude_binary()]})
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    path = write(workspace, "app.py", "one\ntwo\nthree\n")
    view = control.open_file(window, path)
    terminal = open_claude(window, terminus)
    (call,) = [args for _target, name, args in control.command_log() if name == "terminus_open"]
    shell = os.environ.get("SHELL") or pwd.getpwuid(os.getuid()).pw_shell
    assert call["cmd"] == [shell, "-l", "-i", "-c", claude_binary()]
    assert call["env"] == {"CLAUDE_CODE_SSE_PORT": str(handle.port)}  # the lock file with that port wins
    assert call["panel_name"] == "Claude Code" and call["title"] == "Claude Code" and call["reactivable"] is False
    assert handle.claude_token not in json.dumps(terminal.view.settings().to_dict())
    with open(handle.lock_path, encoding="utf-8") as handle_file:
        assert json.load(handle_file)["workspaceFolders"] == [workspace]

    config = make_config(str(tmp_path / "claude-home"), workspace)
    os.symlink(os.path.dirname(handle.lock_path), os.path.join(config, "ide"))  # the window's lock folder
    with ModelStandIn("Write", {}) as model:
        claude = spawn(terminal, config, model)
        real_claude.append(claude)
        try:
            control.pump_until(lambda: handle.claude_clients == ["claude-code"], 60, "the real Claude Code to connect")
        except AssertionError as exc:
            raise AssertionError(claude.explain(str(exc))) from None
        control.settle()
        assert status_of(view) == "Gemini ○ · Claude ●"
        claude.wait_prompt()
        # Send Selection goes to Claude Code, the agent used last: its prompt gets the mention.
        control.select(view, sublime.Region(view.text_point(1, 0), view.text_point(2, 3)))
        assert control.run_from_palette(window, "gemini_companion_send_selection")
        claude.wait_screen("@app.py#L2-3", 30)
        assert control.quick_panels() == []  # nothing asked: the last used agent was known


def test_with_no_agent_used_yet_send_asks_which_and_claude_gets_an_at_mention(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    client = ThreadedClaude(handle.port, handle.claude_token)
    try:
        control.pump_until(lambda: handle.claude_clients, 30)
        path = write(workspace, "app.py", "one\ntwo\n")
        view = control.open_file(window, path)
        control.select(view, sublime.Region(view.text_point(1, 1)))
        assert control.run_from_palette(window, "gemini_companion_send_selection")
        (panel,) = control.quick_panels()
        assert panel["items"] == ["Gemini CLI", "Claude Code"]
        control.choose_quick_panel(1)
        assert client.notification("at_mentioned") == {"filePath": path, "lineStart": 1, "lineEnd": 1}
        # Claude Code is now the agent used last; a file from the side bar goes there without asking.
        window.run_command("gemini_companion_send_paths", {"paths": [workspace]})
        assert client.notification("at_mentioned") == {"filePath": workspace}
        assert control.quick_panels() == []
        # Opening Gemini CLI makes it the last used: Send types into its terminal instead.
        gemini = open_cli(window, terminus)
        control.select(view, sublime.Region(0, 0))
        assert control.run_from_palette(window, "gemini_companion_send_selection")
        control.pump_until(lambda: gemini.typed, 10)
        assert gemini.typed == ["@app.py#L1 "]
    finally:
        client.close()


def test_turning_claude_code_off_removes_its_lock_and_its_status(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    lock = handle.lock_path
    assert os.path.exists(lock)
    view = control.open_file(window, write(workspace, "a.txt", "a\n"))
    control.user_settings(SETTINGS, {"claude_code": False})  # restarts the servers
    registry = companion.registry
    control.pump_until(lambda: (s := registry().get(window)) is not None and s.handle is not handle, 30, "the restart")
    handle = companion.ready(window)
    control.settle()
    assert not os.path.exists(lock) and handle.lock_path == "" and handle.claude is None
    assert status_of(view) == "Gemini ○"
    assert not control.palette_shows(window, "gemini_companion_open_claude")
    # Send goes to Gemini CLI without asking: it is the only agent served.
    control.select(view, sublime.Region(0, 0))
    assert control.run_from_palette(window, "gemini_companion_send_selection")
    terminal = control.pump_until(lambda: terminus.started and terminus.started[-1], 30)
    control.pump_until(lambda: terminal.typed, 10)
    assert terminal.typed == ["@a.txt#L1 "] and control.quick_panels() == []


def test_turning_gemini_cli_off_hides_the_window_from_it_but_not_from_the_bridge(
    companion: Companion, workspace: str
) -> None:
    control.user_settings(SETTINGS, {"gemini_cli": False})
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    name = os.path.basename(handle.discovery_path)
    assert name == f"sublime-companion-server-{handle.runtime.editor_pid}-{handle.port}.json"
    assert not [n for n in os.listdir(companion.discovery_dir) if n.startswith("gemini-ide-server-")]
    view = control.open_file(window, write(workspace, "a.txt", "a\n"))
    control.settle()
    assert status_of(view) == "Claude ○"


def test_send_selection_opens_claude_code_and_the_mention_waits_until_it_listens(
    companion: Companion, terminus: types.ModuleType, workspace: str, tmp_path: Any, real_claude: list[ClaudeTerminal]
) -> None:
    """Send Selection to Claude Code before it runs: the mention goes out once it has connected, and
    Claude Code takes it only once it has listed our tools and its prompt has subscribed. A Claude Code
    starved of CPU (here stopped from its handshake until after the Send) must still get it."""
    control.user_settings(SETTINGS, {"claude_command": [claude_binary()]})
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    view = control.open_file(window, write(workspace, "app.py", "one\ntwo\nthree\n"))
    control.select(view, sublime.Region(view.text_point(1, 0), view.text_point(2, 3)))
    before = len(terminus.started)
    view.run_command("gemini_companion_send_selection", {"agent": "claude"})
    terminal = control.pump_until(
        lambda: next((t for t in terminus.started[before:] if t.view.settings().has("terminus_view.viewport_y")), None),
        30,
        "Claude Code's terminal to be live",
    )
    config = make_config(str(tmp_path / "claude-home"), workspace)
    os.symlink(os.path.dirname(handle.lock_path), os.path.join(config, "ide"))
    mentions: list[concurrent.futures.Future[int]] = []
    send_mention = handle.at_mentioned

    def at_mentioned(path: str, first: int | None, last: int | None) -> concurrent.futures.Future[int]:
        mentions.append(send_mention(path, first, last))
        return mentions[-1]

    setattr(handle, "at_mentioned", at_mentioned)  # noqa: B010  (the product's own call, observed)
    with ModelStandIn("Write", {}) as model:
        claude = spawn(terminal, config, model)
        real_claude.append(claude)
        stopped = threading.Event()
        clients_changed = handle.on_clients_changed

        def stop_at_the_handshake(changed: Any) -> None:  # on the loop thread, as the handshake ends
            if changed.claude_clients and not stopped.is_set():
                os.killpg(claude.pid, signal.SIGSTOP)
                stopped.set()
            clients_changed(changed)

        handle.on_clients_changed = stop_at_the_handshake
        try:
            control.pump_until(stopped.is_set, 60, "the real Claude Code to connect")
            (sent,) = control.pump_until(lambda: mentions, 30, "the Send to go out")
            control.pump_until(sent.done, 30, "the mention to be handed to the connection")
            assert sent.result() == 1
        finally:
            os.killpg(claude.pid, signal.SIGCONT)
        claude.wait_screen("@app.py#L2-3", 30)

"""Agents that are missing, need a login, print garbage or huge lines, crash, never answer or flood:
each gets a one-line reason, nothing hangs, and no process is left behind."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from companion.acp.agents import process
from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatFailed, ChatSession
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.acp.scripted_agent import FLOOD, REPLY

pytestmark = pytest.mark.anyio

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripted_agent.py")


def chat_cli(workspace: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--prompt", "Hello", *args]
    base = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(argv, cwd=ROOT, env=env or base, capture_output=True, text=True, timeout=CEILING)


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def assert_gone(pid_file: str) -> None:
    with open(pid_file, encoding="utf-8") as handle:
        pid = int(handle.read())
    if psutil.pid_exists(pid):
        try:
            proc = psutil.Process(pid)
            proc.wait(CEILING)  # a zombie of ours is reaped already; anything else must end
        except psutil.NoSuchProcess:
            return
        raise AssertionError(f"the agent {pid} is still running")


def test_a_command_that_does_not_exist_says_so_in_one_line(workspace: str) -> None:
    result = chat_cli(workspace, "--", "no-such-acp-agent-for-the-test")
    assert result.returncode == 1
    assert "'no-such-acp-agent-for-the-test' was not found on PATH" in error_line(result)


def test_a_missing_preset_gives_its_install_command(workspace: str, tmp_path: str) -> None:
    env = {**os.environ, "PYTHONPATH": ROOT, "PATH": str(tmp_path)}  # nothing on PATH
    result = chat_cli(workspace, "--agent", "claude", env=env)
    assert result.returncode == 1
    assert "`npm install -g @agentclientprotocol/claude-agent-acp`" in error_line(result)


def test_both_an_agent_and_a_command_is_a_usage_error(workspace: str) -> None:
    result = chat_cli(workspace, "--agent", "gemini", "--", "gemini", "--acp")
    assert result.returncode == 2
    assert "either --agent or a command" in error_line(result)


def test_garbage_on_stdout_is_skipped_and_the_chat_works(workspace: str, tmp_path: str) -> None:
    pid_file = os.path.join(str(tmp_path), "pid")
    result = chat_cli(workspace, "--", sys.executable, AGENT, "garbage-then-ok", pid_file)
    assert result.returncode == 0, result.stderr
    assert REPLY in result.stdout
    assert result.stderr == ""  # no SDK traceback for what it could not route
    assert_gone(pid_file)


async def failed_start(workspace: str, *args: str, start_timeout: float = CEILING) -> str:
    """Start the scripted agent with `args`; the one-line reason it could not start."""
    spec = custom_agent([sys.executable, AGENT, *args])
    session = ChatSession(spec, [workspace], AsyncEditor(), RecordingView(), start_timeout=start_timeout)
    try:
        with pytest.raises(ChatFailed) as failure:
            await session.start()
    finally:
        await session.close()
    message = str(failure.value)
    assert message.startswith(spec.name) and "\n" not in message, message
    return message


async def test_an_agent_that_only_prints_garbage_times_out_with_what_it_printed(workspace: str, tmp_path: str) -> None:
    pid_file = os.path.join(str(tmp_path), "pid")
    message = await failed_start(workspace, "garbage-only", pid_file, start_timeout=3)
    assert message.startswith("python") and " did not answer initialize within 3 s" in message, message
    assert "printed 5 non-ACP line(s) on stdout, first: 'Starting the agent...'" in message
    assert "check that the command starts an ACP agent" in message
    assert_gone(pid_file)


async def test_a_line_over_the_limit_ends_the_chat_with_a_reason(
    workspace: str, tmp_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "MAX_LINE_BYTES", 2 * 1024 * 1024)
    pid_file = os.path.join(str(tmp_path), "pid")
    message = await failed_start(workspace, "huge", pid_file)
    assert "stopped: it sent a line of more than 2 MiB on stdout" in message
    assert_gone(pid_file)


async def test_a_crash_at_start_shows_its_exit_code_and_stderr(workspace: str) -> None:
    message = await failed_start(workspace, "crash")
    assert "exited (exit code 3) during initialize" in message
    assert "its stderr ends: fatal: the scripted agent crashed on purpose" in message


def test_auth_required_says_to_log_in(workspace: str) -> None:
    result = chat_cli(workspace, "--", sys.executable, AGENT, "auth")
    assert result.returncode == 1
    assert "needs a login (Authentication required)" in error_line(result)


async def test_a_flood_of_updates_is_shown_whole_and_the_turn_ends(workspace: str) -> None:
    view = RecordingView()
    session = ChatSession(custom_agent([sys.executable, AGENT, "flood"]), [workspace], AsyncEditor(), view)
    try:
        await session.start()
        assert await session.prompt("Hello") == "end_turn"
    finally:
        await session.close()
    assert len(view.text) == FLOOD and set(view.text) == {REPLY}

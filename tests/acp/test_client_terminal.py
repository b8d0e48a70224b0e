"""The client terminal (`terminal/*`, issue #41): the agent (tool_agent.py, the SDK's agent side)
runs commands through the chat; their output streams into the card embedding the terminal, the
agent's `outputByteLimit` is honoured on a character boundary, and every process a command started
is gone once it is killed or released, or the chat closes (psutil)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import psutil
import pytest

from companion.acp.agents.agents import AgentSpec
from companion.acp.session import ChatSession
from companion.acp.terminal.terminals import Terminal, Terminals
from companion.acp.view import ToolCall
from tests.acp.conftest import AsyncEditor, RecordingView
from tests.acp.test_tool_output import TOOL_AGENT, tool_chat

pytestmark = pytest.mark.anyio

# A command that starts a grandchild in a session of its own (out of its process group), writes
# both PIDs to argv[1], says "ready" and sleeps: only the tree's tracking finds the grandchild.
FAMILY = (
    "import os, subprocess, sys, time\n"
    "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\n"
    "open(sys.argv[1] + '.tmp', 'w').write(f'{os.getpid()} {g.pid}')\n"
    "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


def chat(workspace: str, answer: str = "allow_once") -> tuple[ChatSession, RecordingView]:
    view = RecordingView(answer_kind=answer)
    spec = AgentSpec("Tools", (sys.executable, TOOL_AGENT))
    return ChatSession(spec, [workspace], AsyncEditor(), view, env=dict(os.environ)), view


async def run(session: ChatSession, view: RecordingView, word: str, **spec: Any) -> dict[str, Any]:
    view.text.clear()
    assert await session.prompt(f"{word} {json.dumps(spec)}") == "end_turn"
    return json.loads("".join(view.text))


def family(record: str) -> list[int]:
    """The command's PID and its grandchild's (written before it says "ready")."""
    with open(record, encoding="utf-8") as handle:
        return [int(pid) for pid in handle.read().split()]


def alive(pids: list[int]) -> list[int]:
    found = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                found.append(pid)
        except psutil.NoSuchProcess:
            pass
    return found


def cards(view: RecordingView, call_id: str) -> list[ToolCall]:
    return [c for m, c in view.calls if m == "tool_call" and c.tool_call_id == call_id]


async def test_a_command_runs_in_the_workspace_with_the_agents_env_and_its_output_streams_into_its_card(
    workspace: str,
) -> None:
    os.makedirs(os.path.join(workspace, "sub"))
    script = "import os, sys; print(os.getcwd()); print(os.environ['ASKED']); sys.exit(3)"
    session, view = chat(workspace)
    try:
        await session.start()
        seen = await run(
            session, view, "term", command=sys.executable, args=["-c", script], cwd="sub", env={"ASKED": "yes"}
        )
    finally:
        await session.close()
    where = os.path.realpath(os.path.join(workspace, "sub"))
    assert seen["output"] == f"{where}\nyes\n"
    assert seen["truncated"] is False
    assert seen["exit"] == {"code": 3, "signal": None}
    assert any(c.output == seen["output"] for c in cards(view, "term1"))  # the card showed the terminal
    assert cards(view, "term1")[-1].output == seen["output"]  # and still does once completed


async def test_kill_then_release_leaves_no_process_of_the_command_not_even_a_grandchild(
    workspace: str, tmp_path: Any
) -> None:
    record = os.path.join(str(tmp_path), "family")
    session, view = chat(workspace)
    try:
        await session.start()
        seen = await run(session, view, "term-kill", command=sys.executable, args=["-c", FAMILY, record])
        processes = family(record)
        assert alive(processes) == []
        assert seen["exit"] == {"code": None, "signal": "SIGKILL"}
        assert seen["output"] == "ready\n"
        assert len(session.terminals) == 0  # released
    finally:
        await session.close()


async def test_closing_the_chat_ends_a_terminal_the_agent_never_released(workspace: str, tmp_path: Any) -> None:
    record = os.path.join(str(tmp_path), "family")
    session, view = chat(workspace)
    try:
        await session.start()
        await run(session, view, "term-keep", command=sys.executable, args=["-c", FAMILY, record])
        processes = family(record)
        assert len(alive(processes)) == 2
    finally:
        await session.close()
    assert alive(processes) == []


async def test_an_output_limit_cuts_from_the_start_on_a_character_boundary(workspace: str) -> None:
    text = "a" + "é€" * 40 + "\n"  # 2- and 3-byte characters: 201 bytes
    session, view = chat(workspace)
    try:
        await session.start()
        script = f"import sys; sys.stdout.buffer.write({text.encode()!r})"
        seen = await run(session, view, "term", command=sys.executable, args=["-c", script], limit=100)
    finally:
        await session.close()
    assert seen["truncated"] is True
    assert 96 <= len(seen["output"].encode("utf-8")) <= 100  # at most 3 bytes of a character dropped more
    assert text.endswith(seen["output"]) and "\ufffd" not in seen["output"]


async def test_a_folder_outside_the_workspace_and_too_many_terminals_are_refused_saying_why(workspace: str) -> None:
    session, view = chat(workspace)
    try:
        await session.start()
        outside = await run(session, view, "term", command=sys.executable, args=["-c", "pass"], cwd="..")
        assert outside["capable"] is True  # initialize advertised the terminal
        assert (
            "is outside the workspace" in outside["error"]
            and "run the command in a folder inside it" in outside["error"]
        )
        missing = await run(session, view, "term", command="no-such-program-gc41")
        assert "could not be started" in missing["error"] and "no shell runs the command" in missing["error"]
        session.terminals.max_live = 1
        sleeper = ["-c", "import time; time.sleep(600)"]
        kept = await run(session, view, "term-keep", command=sys.executable, args=sleeper, until="")
        refused = await run(session, view, "term-keep", command=sys.executable, args=sleeper, until="")
        assert "already holds 1 terminals; release one" in refused["error"], refused
        assert kept["id"]
    finally:
        await session.close()


def test_the_terminal_chat_shows_a_terminals_output_under_its_tool_call(workspace: str) -> None:
    spec = {"command": sys.executable, "args": ["-c", "print('from the terminal')"]}
    result = tool_chat(workspace, f"term {json.dumps(spec)}", "--diff-policy", "accept")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("[tool execute:") and "completed" in line)
    assert lines[at + 1] == "  │ from the terminal"


async def test_a_terminal_keeps_at_most_its_cap_whatever_limit_the_agent_asks(workspace: str) -> None:
    """Bounded memory: an agent asking for a limit of a terabyte gets the cap; its output is cut from
    the start, a character split between two reads is never shown half."""
    terminals = Terminals([workspace], dict(os.environ), max_output=1000)
    script = "import sys; sys.stdout.buffer.write('€'.encode() * 2000)"
    try:
        terminal = await terminals.create(sys.executable, ["-c", script], None, {}, 10**12)
        await terminals.wait_for_exit(terminal.id)
        assert terminal.truncated and len(terminal.output) <= 1000
        assert terminal.text() == "€" * (len(terminal.output) // 3)
        split = Terminal("t", ["x"], 100)
        split.add("a€".encode()[:2])  # the euro sign's first byte only
        assert split.text() == "a"
        split.add("a€".encode()[2:])
        assert split.text() == "a€"
    finally:
        await terminals.close()


# -- a command the user has not allowed never runs (terminal_permits.py) --

MARK = "import sys; open(sys.argv[1], 'w').write('ran')"  # the marker file exists only if it ran


def client_asks(view: RecordingView) -> list[str]:
    """The questions the client itself asked (its Allow/Reject card), not the agent's."""
    return [title for title, choices in view.asked if [c.option_id for c in choices] == ["allow", "reject"]]


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_a_hostile_agents_terminal_without_permission_runs_only_if_the_user_allows_it(
    workspace: str, answer: str
) -> None:
    marker = os.path.join(workspace, "ran.txt")
    session, view = chat(workspace, answer)
    try:
        await session.start()
        seen = await run(session, view, "term", command=sys.executable, args=["-c", MARK, marker], ask=False)
    finally:
        await session.close()
    line = f"{sys.executable} -c {MARK} {marker}"
    assert client_asks(view) == [f"The agent wants to run: {line} in {workspace}"]
    assert os.path.exists(marker) == (answer == "allow_once")
    if answer == "reject_once":
        assert "the user rejected running it" in seen["error"], seen
    else:
        assert seen["exit"] == {"code": 0, "signal": None}, seen


async def test_an_allowed_execute_call_runs_its_command_once_without_a_second_question(workspace: str) -> None:
    marker = os.path.join(workspace, "ran.txt")
    session, view = chat(workspace)
    try:
        await session.start()
        seen = await run(session, view, "term", command=sys.executable, args=["-c", MARK, marker])
        assert seen["exit"] == {"code": 0, "signal": None}, seen
        assert len(view.asked) == 1 and client_asks(view) == []  # the agent's question only
        view.answer_kind = "reject_once"  # the user rejects the client's question for another command
        other = os.path.join(workspace, "other.txt")
        spec = {"command": sys.executable, "args": ["-c", MARK, other], "asked": f"{sys.executable} -c {MARK} {marker}"}
        refused = await run(session, view, "term", **spec)
    finally:
        await session.close()
    assert "the user rejected running it" in refused["error"], refused
    assert len(client_asks(view)) == 1 and not os.path.exists(other)


async def test_one_permission_runs_one_terminal_the_same_command_again_is_asked(workspace: str) -> None:
    session, view = chat(workspace, "allow_once")
    try:
        await session.start()
        seen = await run(session, view, "term", command=sys.executable, args=["-c", "pass"], again=True)
    finally:
        await session.close()
    assert seen["exit"] == {"code": 0, "signal": None}, seen
    assert client_asks(view) == [f"The agent wants to run: {sys.executable} -c pass in {workspace}"]
    assert seen["again"] == "ran"  # the user allowed it when asked


async def test_always_allow_for_an_execute_call_lets_later_commands_run_without_asking(workspace: str) -> None:
    marker = os.path.join(workspace, "ran.txt")
    session, view = chat(workspace, "allow_always")
    try:
        await session.start()
        await run(session, view, "term", command=sys.executable, args=["-c", "pass"])
        seen = await run(session, view, "term", command=sys.executable, args=["-c", MARK, marker], ask=False)
    finally:
        await session.close()
    assert seen["exit"] == {"code": 0, "signal": None}, seen
    assert client_asks(view) == [] and os.path.exists(marker)


async def test_a_command_nobody_allows_is_refused_and_never_runs(workspace: str) -> None:
    """The question dismissed (no answer, as when the chat closes or the turn is cancelled)."""
    marker = os.path.join(workspace, "ran.txt")
    session, view = chat(workspace, "no answer")
    try:
        await session.start()
        seen = await run(session, view, "term", command=sys.executable, args=["-c", MARK, marker], ask=False)
    finally:
        await session.close()
    assert "the user did not answer" in seen["error"], seen
    assert len(client_asks(view)) == 1 and not os.path.exists(marker)

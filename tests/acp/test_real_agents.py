"""The ACP chat with the real agents, offline: Gemini CLI 0.61.0 (`--acp`, recorded model turns) and
claude-agent-acp 0.101.0 (a local Messages API stand-in). Every edit goes through the review.

Headless flows run `python -m companion chat --prompt` as a subprocess; the flows that need the user
to edit a proposal, cancel or kill the agent drive `ChatSession` with an Editor the test plays."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from typing import Any

import psutil
import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatFailed, ChatSession
from tests.acp.conftest import (
    CEILING,
    ROOT,
    AgentSetup,
    AsyncEditor,
    RecordingView,
    gemini_user_texts,
    model_messages_text,
)
from tests.conformance.harness import write_file_call

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]

NEW_TEXT = "first line\nsecond line ✓\n"
OLD_TEXT = "one\ntwo\nthree\n"
USERS_TEXT = "one\nTWO, as the user wants it\nthree\n"
NOTE = "the user changed your proposed edit of"


def gemini_writes(setup: AgentSetup, path: str, content: str, *after: str) -> None:
    """Gemini's model asks for one write_file, then answers each later turn with a text."""
    setup.record_turns([write_file_call(path, content)], [{"text": "Done."}], *[[{"text": t}] for t in after])


def agent_for(name: str, gemini: AgentSetup, claude_factory: Any, path: str, content: str) -> AgentSetup:
    """The agent `name`, whose model's first turn writes `content` to `path` (Claude: Write or Edit)."""
    if name == "gemini":
        gemini_writes(gemini, path, content, "Noted.")
        return gemini
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            before = handle.read()
        old, new = _changed_line(before, content)
        return claude_factory("Edit", {"file_path": path, "old_string": old, "new_string": new, "replace_all": False})
    return claude_factory("Write", {"file_path": path, "content": content})


def _changed_line(before: str, after: str) -> tuple[str, str]:
    pairs = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert len(pairs) == 1, "the test changes exactly one line"
    return pairs[0]


def run_chat_cli(setup: AgentSetup, workspace: str, policy: str) -> subprocess.CompletedProcess[str]:
    """`chat --prompt`: Gemini by its command line (it needs the recorded turns), Claude by its
    preset (`--agent claude`, found on PATH as after `npm install -g`)."""
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--diff-policy", policy]
    argv += ["--prompt", "Please write the file."]
    env = dict(setup.env)
    if setup.model is None:
        argv += ["--", *setup.command]
    else:
        argv += ["--agent", "claude"]
        env["PATH"] = os.path.dirname(setup.command[0]) + os.pathsep + env.get("PATH", "")
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=CEILING)


AGENTS = ["gemini", "claude"]


@pytest.mark.parametrize("agent", AGENTS)
def test_a_new_file_accepted_is_written_with_the_exact_bytes(
    agent: str, gemini: AgentSetup, claude_factory: Any, workspace: str
) -> None:
    path = os.path.join(workspace, "new.txt")
    setup = agent_for(agent, gemini, claude_factory, path, NEW_TEXT)
    result = run_chat_cli(setup, workspace, "accept")
    assert result.returncode == 0, result.stderr
    with open(path, "rb") as handle:
        assert handle.read() == NEW_TEXT.encode("utf-8")
    assert "Done." in result.stdout


@pytest.mark.parametrize("agent", AGENTS)
def test_an_existing_file_changed_and_rejected_is_unchanged(
    agent: str, gemini: AgentSetup, claude_factory: Any, workspace: str
) -> None:
    path = os.path.join(workspace, "old.txt")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(OLD_TEXT)
    setup = agent_for(agent, gemini, claude_factory, path, USERS_TEXT)
    result = run_chat_cli(setup, workspace, "reject")
    assert result.returncode == 0, result.stderr
    with open(path, "rb") as handle:
        assert handle.read() == OLD_TEXT.encode("utf-8")


async def started(setup: AgentSetup, workspace: str, editor: AsyncEditor, view: RecordingView) -> ChatSession:
    session = ChatSession(custom_agent(setup.command), [workspace], editor, view, env=setup.env)
    await session.start()
    return session


@pytest.mark.parametrize("agent", AGENTS)
async def test_accepted_with_the_users_edit_writes_the_users_text_and_tells_the_agent(
    agent: str, gemini: AgentSetup, claude_factory: Any, workspace: str
) -> None:
    path = os.path.join(workspace, "old.txt")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(OLD_TEXT)
    setup = agent_for(agent, gemini, claude_factory, path, "one\nTWO\nthree\n")
    editor, view = AsyncEditor(), RecordingView()
    editor.decide = lambda review: review.accept(USERS_TEXT)
    session = await started(setup, workspace, editor, view)
    try:
        assert await session.prompt("Please change the second line.") == "end_turn"
        with open(path, "rb") as handle:
            assert handle.read() == USERS_TEXT.encode("utf-8")
        assert editor.shown[0][1] == "one\nTWO\nthree\n"  # the review showed the agent's full after
        assert await session.prompt("Thanks. Anything else?") == "end_turn"
    finally:
        await session.close()
    told = gemini_user_texts(setup.home) if setup.model is None else model_messages_text(setup.model)
    notes = [text for text in told if NOTE in text]
    assert notes, f"the model was never told: {told!r}"
    assert path in notes[0] and USERS_TEXT in notes[0]


async def waiting_on_a_review(setup: AgentSetup, workspace: str) -> tuple[ChatSession, AsyncEditor, Any]:
    """A started chat whose turn waits on the review of its first edit (the user does not decide)."""
    editor = AsyncEditor()
    session = await started(setup, workspace, editor, RecordingView())
    turn = asyncio.ensure_future(session.prompt("Please write the file."))
    try:
        await editor.shown_review()
    except BaseException:
        await session.close()
        raise
    return session, editor, turn


@pytest.mark.parametrize("agent", AGENTS)
async def test_cancel_during_a_permission_writes_nothing_and_closes_the_review(
    agent: str, gemini: AgentSetup, claude_factory: Any, workspace: str
) -> None:
    path = os.path.join(workspace, "new.txt")
    session, editor, turn = await waiting_on_a_review(
        agent_for(agent, gemini, claude_factory, path, NEW_TEXT), workspace
    )
    review = editor.shown[0][0]
    try:
        await session.cancel()
        assert await asyncio.wait_for(turn, CEILING) == "cancelled"
    finally:
        await session.close()
    assert review in editor.closed and not review.is_open
    assert not os.path.exists(path)


@pytest.mark.parametrize("agent", AGENTS)
async def test_the_agent_killed_mid_turn_is_a_clear_failure_and_leaves_no_process(
    agent: str, gemini: AgentSetup, claude_factory: Any, workspace: str
) -> None:
    path = os.path.join(workspace, "new.txt")
    session, _, turn = await waiting_on_a_review(agent_for(agent, gemini, claude_factory, path, NEW_TEXT), workspace)
    try:
        assert session.agent is not None
        top = psutil.Process(session.agent.pid)
        tree = [top, *top.children(recursive=True)]
        top.kill()
        with pytest.raises(ChatFailed) as failure:
            await asyncio.wait_for(turn, CEILING)
    finally:
        await session.close()
    message = str(failure.value)
    assert message.startswith(f"{session.spec.name} exited (exit code ") and "during the prompt" in message, message
    assert "Start a new chat" in message and "\n" not in message
    _, alive = psutil.wait_procs(tree, timeout=CEILING)
    assert alive == [], f"left running: {alive}"
    assert not os.path.exists(path)


def test_the_repl_reads_prompts_and_the_y_n_review_from_stdin(gemini: AgentSetup, workspace: str) -> None:
    path = os.path.join(workspace, "new.txt")
    gemini_writes(gemini, path, NEW_TEXT)
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--", *gemini.command]
    result = subprocess.run(
        argv,
        cwd=ROOT,
        env=gemini.env,
        input="Please write the file.\ny\n",
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=CEILING,
    )
    assert result.returncode == 0, result.stderr
    assert "+second line ✓" in result.stdout  # the unified diff the user answered
    assert "Apply this change to" in result.stdout
    with open(path, "rb") as handle:
        assert handle.read() == NEW_TEXT.encode("utf-8")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to one process is POSIX; Windows sends Ctrl-C to a console")
def test_ctrl_c_during_a_review_cancels_the_turn_and_stops_the_agent(gemini: AgentSetup, workspace: str) -> None:
    path = os.path.join(workspace, "new.txt")
    gemini_writes(gemini, path, NEW_TEXT)
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--prompt", "Write it."]
    child = subprocess.Popen(
        [*argv, "--", *gemini.command],
        cwd=ROOT,
        env=gemini.env,
        stdin=subprocess.PIPE,  # kept open: the review waits for an answer
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    try:
        assert child.stdout is not None
        seen = ""
        while "Apply this change to" not in seen:  # the review is on screen: the agent waits on it
            chunk = child.stdout.read(1)
            assert chunk, f"the chat ended before its review: {seen!r}"
            seen += chunk
        agents = psutil.Process(child.pid).children(recursive=True)
        assert agents, "the agent is running"
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=CEILING)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err  # interrupted by the user: the shell's convention (chat --help)
    assert "[cancelling the turn; Ctrl-C again ends the chat]" in err and "error:" not in err, err
    _, alive = psutil.wait_procs(agents, timeout=CEILING)
    assert alive == [], f"left running: {alive}"
    assert not os.path.exists(path)


async def test_a_file_changed_on_disk_during_its_review_is_not_overwritten(gemini: AgentSetup, workspace: str) -> None:
    path = os.path.join(workspace, "old.txt")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(OLD_TEXT)
    gemini_writes(gemini, path, "one\nTWO\nthree\n")
    saved_meanwhile = "one\ntwo\nthree\nsaved by another program\n"

    def save_elsewhere_then_accept(review: Any) -> None:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(saved_meanwhile)
        review.accept(review.proposal)

    editor, view = AsyncEditor(), RecordingView()
    editor.decide = save_elsewhere_then_accept
    session = await started(gemini, workspace, editor, view)
    try:
        await session.prompt("Please change the second line.")
    finally:
        await session.close()
    with open(path, "rb") as handle:
        assert handle.read() == saved_meanwhile.encode("utf-8")
    assert any("changed on disk after the user reviewed the edit" in n for n in view.notices), view.notices


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_a_shell_command_is_asked_with_the_agents_own_options(
    gemini: AgentSetup, workspace: str, answer: str
) -> None:
    marker = os.path.join(workspace, "ran.txt")
    command = f"\"{sys.executable}\" -c \"open('ran.txt', 'w').write('ran')\""
    call = {"functionCall": {"name": "run_shell_command", "args": {"command": command}}}
    gemini.record_turns([call], [{"text": "Done."}])
    editor, view = AsyncEditor(), RecordingView(answer_kind=answer)
    session = await started(gemini, workspace, editor, view)
    try:
        assert await session.prompt("Run it.") == "end_turn"
    finally:
        await session.close()
    assert editor.shown == []  # not an edit: no review
    (title, choices), *_ = view.asked
    assert sys.executable in title  # the agent's own description of what it will run
    assert {c.kind for c in choices} >= {"allow_once", "reject_once"}
    assert all(c.name for c in choices)
    assert os.path.exists(marker) == (answer == "allow_once")


@pytest.mark.parametrize("agent", AGENTS)
async def test_a_rejection_with_a_reason_reaches_the_real_agents_model(
    agent: str, gemini: AgentSetup, claude_factory: Any, workspace: str
) -> None:
    """Issue #41: the reason for a reject reaches the model's next request (claude-agent-acp, which
    queues prompts: at once; Gemini CLI: leading the next prompt)."""
    path = os.path.join(workspace, "old.txt")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(OLD_TEXT)
    setup = agent_for(agent, gemini, claude_factory, path, "one\nTWO\nthree\n")
    reason = "keep it lower case, the tests grep for it"
    editor, view = AsyncEditor(), RecordingView()
    editor.decide = lambda review: review.reject(reason)
    session = await started(setup, workspace, editor, view)
    try:
        await session.prompt("Please change the second line.")
        assert session.queues_prompts == (agent == "claude")  # claude-agent-acp advertises promptQueueing
        await session.prompt("What now?")
    finally:
        await session.close()
    with open(path, "rb") as handle:
        assert handle.read() == OLD_TEXT.encode("utf-8")
    told = gemini_user_texts(setup.home) if setup.model is None else model_messages_text(setup.model)
    assert any(reason in text and path in text for text in told), f"the model was never told: {told!r}"

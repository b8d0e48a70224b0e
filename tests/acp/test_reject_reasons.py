"""Reject with a reason the agent hears (issue #41): the protocol's answer to a permission request
is only an option id, so the user's reason follows it as words. With `edit_agent.py` (the SDK's
agent side, a real subprocess): an agent that queues prompts (claude-agent-acp's
`promptQueueing`) gets the reason at once, as a prompt sent during its turn; one that does not
gets it as the note leading the user's next prompt. The transcript shows the reason either way."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from companion.acp.agents.agents import AgentSpec
from companion.acp.session import ChatSession
from companion.acp.view import Choice, Rejection
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.acp.test_any_agent_edits import AGENT, edit_call, file_with, records, script

pytestmark = pytest.mark.anyio

REASON = "keep the old name, other modules import it"


def edit_steps(path: str) -> list[dict[str, Any]]:
    """The first prompt proposes an edit of `path` (the agent writes only if allowed)."""
    return [
        {"read": path, "turn": 1},
        {"ask": edit_call(path, content=[{"diff_of_read": ["two", "2"], "path": path}]), "turn": 1},
        {"write": path, "content": {"read_with": ["two", "2"]}, "turn": 1},
    ]


async def two_turns(
    workspace: str, tmp_path: Any, steps: list[dict[str, Any]], queueing: bool, view: RecordingView | None = None
) -> tuple[RecordingView, list[dict[str, Any]]]:
    """Two prompts in one chat; every review is rejected with REASON. Returns the view and what
    the agent recorded."""
    view, editor = view or RecordingView(), AsyncEditor()
    editor.decide = lambda review: review.reject(REASON)
    env = {**os.environ, "EDIT_AGENT_RECORD": os.path.join(str(tmp_path), "record.jsonl"), "EDIT_AGENT_PROMPTS": "1"}
    if queueing:
        env["EDIT_AGENT_QUEUEING"] = "1"
    spec = AgentSpec("Edits", (sys.executable, AGENT, script(tmp_path, steps)))
    session = ChatSession(spec, [workspace], editor, view, env=env)
    try:
        await session.start()
        assert await session.prompt("rename it") == "end_turn"
        assert await session.prompt("what next?") == "end_turn"
    finally:
        await session.close()
    return view, records(tmp_path)


def prompts(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in recorded if "prompt" in entry]


async def test_an_agent_without_prompt_queueing_hears_the_reason_leading_the_next_prompt(
    workspace: str, tmp_path: Any
) -> None:
    path = file_with(workspace, b"one\ntwo\n")
    view, recorded = await two_turns(workspace, tmp_path, edit_steps(path), queueing=False)
    assert {"permission": {"outcome": "selected", "optionId": "reject"}} in recorded
    sent = prompts(recorded)
    assert [entry["prompt"] for entry in sent] == [
        ["rename it"],
        [f"[Note from the editor: the user rejected your edit of {path}: {REASON}]", "what next?"],
    ]
    assert any(REASON in notice for notice in view.notices)  # the transcript shows it
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "one\ntwo\n"


async def test_an_agent_with_prompt_queueing_hears_the_reason_at_once_as_a_queued_prompt(
    workspace: str, tmp_path: Any
) -> None:
    path = file_with(workspace, b"one\ntwo\n")
    view, recorded = await two_turns(workspace, tmp_path, edit_steps(path), queueing=True)
    sent = prompts(recorded)
    note = f"[Note from the editor: the user rejected your edit of {path}: {REASON}]"
    assert sent == [
        {"prompt": ["rename it"], "during_turn": False},
        {"prompt": [note], "during_turn": True},  # sent while the agent's turn ran: it queued it
        {"prompt": ["what next?"], "during_turn": False},  # told once, not again
    ]
    assert any(REASON in notice for notice in view.notices)


async def test_a_rejection_without_a_reason_sends_nothing_more(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"one\ntwo\n")
    view, editor = RecordingView(), AsyncEditor()
    editor.decide = lambda review: review.reject()
    env = {**os.environ, "EDIT_AGENT_RECORD": os.path.join(str(tmp_path), "record.jsonl"), "EDIT_AGENT_PROMPTS": "1"}
    spec = AgentSpec("Edits", (sys.executable, AGENT, script(tmp_path, edit_steps(path))))
    session = ChatSession(spec, [workspace], editor, view, env=env)
    try:
        await session.start()
        await session.prompt("rename it")
        await session.prompt("what next?")
    finally:
        await session.close()
    assert [entry["prompt"] for entry in prompts(records(tmp_path))] == [["rename it"], ["what next?"]]


class ReasonView(RecordingView):
    """A permission card answered "Reject and say why…"."""

    async def choose(self, title: str, choices: list[Choice]) -> str | Rejection | None:
        self.asked.append((title, choices))
        reject = next(c for c in choices if c.kind == "reject_once")
        return Rejection(reject.option_id, REASON)


async def test_a_permission_card_rejected_with_a_reason_tells_the_agent_why(workspace: str, tmp_path: Any) -> None:
    run = {"toolCallId": "t9", "title": "rm -rf build", "kind": "execute"}
    view = ReasonView()
    await two_turns(workspace, tmp_path, [{"ask": run, "turn": 1}], queueing=False, view=view)
    recorded = records(tmp_path)
    assert view.asked[0][0] == "rm -rf build"
    assert {"permission": {"outcome": "selected", "optionId": "reject"}} in recorded
    assert prompts(recorded)[1]["prompt"] == [
        f"[Note from the editor: the user rejected your request (rm -rf build): {REASON}]",
        "what next?",
    ]


def piped_chat(workspace: str, tmp_path: Any, steps: list[dict[str, Any]], lines: str) -> str:
    """`companion chat` in a pipe (`--diff-policy prompt`): `lines` are the user's prompts and
    answers; returns its output."""
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--"]
    argv += [sys.executable, AGENT, script(tmp_path, steps)]
    env = {
        **os.environ,
        "PYTHONPATH": ROOT,
        "EDIT_AGENT_RECORD": os.path.join(str(tmp_path), "record.jsonl"),
        "EDIT_AGENT_PROMPTS": "1",
    }
    result = subprocess.run(argv, cwd=ROOT, env=env, input=lines, capture_output=True, text=True, timeout=CEILING)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_headless_n_with_a_reason_rejects_the_edit_and_the_next_prompt_carries_why(
    workspace: str, tmp_path: Any
) -> None:
    path = file_with(workspace, b"one\ntwo\n")
    output = piped_chat(workspace, tmp_path, edit_steps(path), f"rename it\nn {REASON}\nwhat next?\n")
    recorded = records(tmp_path)
    assert {"permission": {"outcome": "selected", "optionId": "reject"}} in recorded
    assert prompts(recorded)[1]["prompt"] == [
        f"[Note from the editor: the user rejected your edit of {path}: {REASON}]",
        "what next?",
    ]
    assert REASON in output  # the transcript shows it
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "one\ntwo\n"


def test_headless_a_permission_menu_takes_a_reject_number_with_a_reason(workspace: str, tmp_path: Any) -> None:
    run = {"toolCallId": "t9", "title": "rm -rf build", "kind": "execute"}
    piped_chat(workspace, tmp_path, [{"ask": run, "turn": 1}], f"clean up\n2 {REASON}\nwhat next?\n")
    recorded = records(tmp_path)
    assert {"permission": {"outcome": "selected", "optionId": "reject"}} in recorded
    assert prompts(recorded)[1]["prompt"][0] == (
        f"[Note from the editor: the user rejected your request (rm -rf build): {REASON}]"
    )

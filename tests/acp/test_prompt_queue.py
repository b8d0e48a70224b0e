"""A prompt sent during a turn (issue #41), against `queue_agent.py` (the SDK's agent side, a real
subprocess): an agent that does not advertise prompt queueing (Gemini CLI cancels the running turn
on a second prompt) never gets a second prompt while a turn runs; one that advertises it
(claude-agent-acp's `_meta.claudeCode.promptQueueing`) gets it at once."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import pytest

from companion.acp.agents.agents import AgentSpec, custom_agent
from companion.acp.prompt.prompt_queue import PromptQueue, queues_prompts
from companion.acp.session import ChatSession
from tests.acp.conftest import (
    CEILING,
    AgentSetup,
    AsyncEditor,
    RecordingView,
    gemini_user_texts,
    model_messages_text,
)
from tests.conformance.harness import write_file_call

pytestmark = pytest.mark.anyio

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "queue_agent.py")


def _session(workspace: str, record: str, view: RecordingView, queueing: bool) -> ChatSession:
    argv = (sys.executable, AGENT, record, *(["queueing"] if queueing else []))
    return ChatSession(AgentSpec("Queue", argv), [workspace], AsyncEditor(), view, env=dict(os.environ))


def _events(record: str) -> list[dict[str, Any]]:
    with open(record, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


async def _yield_to_other_tasks() -> None:
    """Let a prompt task just created run up to its first wait (its request written, or the gate)."""
    for _ in range(10):
        await asyncio.sleep(0)


async def test_an_agent_without_queueing_gets_the_second_prompt_only_after_the_first_turn(
    workspace: str, tmp_path: Any
) -> None:
    record = str(tmp_path / "record.jsonl")
    view = RecordingView()
    session = _session(workspace, record, view, queueing=False)
    try:
        await session.start()
        assert not session.queues_prompts
        first = asyncio.ensure_future(session.prompt("hold"))
        await view.calls.until(lambda: "holding\n" in view.text, "the first turn")
        second = asyncio.ensure_future(session.prompt("second"))
        await _yield_to_other_tasks()
        await session.set_mode("release")  # a round trip: a prompt written before it has arrived
        assert await first == "end_turn"  # not cancelled by the second prompt, as Gemini CLI would
        assert await second == "end_turn"
    finally:
        await session.close()
    events = [(e["event"], e["text"]) for e in _events(record)]
    assert events == [
        ("received", "hold"),
        ("mode", "release"),
        ("ended", "hold"),
        ("received", "second"),
        ("ended", "second"),
    ]
    assert max(e["running"] for e in _events(record)) == 1  # never two prompts at once


async def test_an_agent_that_queues_prompts_gets_the_second_prompt_at_once(workspace: str, tmp_path: Any) -> None:
    record = str(tmp_path / "record.jsonl")
    view = RecordingView()
    session = _session(workspace, record, view, queueing=True)
    try:
        await session.start()
        assert session.queues_prompts
        first = asyncio.ensure_future(session.prompt("hold"))
        await view.calls.until(lambda: "holding\n" in view.text, "the first turn")
        second = asyncio.ensure_future(session.prompt("second"))
        await view.calls.until(lambda: "queued: second\n" in view.text, "the second prompt, queued by the agent")
        await session.set_mode("release")
        assert await first == "end_turn"
        assert await second == "end_turn"
    finally:
        await session.close()
    events = [(e["event"], e["text"], e["running"]) for e in _events(record)]
    assert ("received", "second", 2) in events  # it reached the agent during the first turn
    assert [e[1] for e in events if e[0] == "ended"] == ["hold", "second"]  # answered in order


def test_prompt_queueing_is_read_only_from_claude_codes_meta_flag() -> None:
    assert queues_prompts({"_meta": {"claudeCode": {"promptQueueing": True}}})
    for capabilities in (
        None,
        {},
        {"_meta": None},
        {"_meta": {"claudeCode": {"promptQueueing": "yes"}}},  # only a real true
        {"_meta": {"claudeCode": ["promptQueueing"]}},
        {"promptQueueing": True},  # not a standard field
    ):
        assert not queues_prompts(capabilities)


def test_the_queue_sends_oldest_first_and_up_takes_the_newest_back() -> None:
    queue: PromptQueue[int] = PromptQueue()
    for n, text in enumerate(("one", "two", "three")):
        queue.add(text, n)
    assert queue.take_last() == ("three", 2)
    assert queue.next() == ("one", 0)
    assert queue.lines() == ["two"]


@pytest.mark.conformance
async def test_real_claude_agent_acp_takes_a_prompt_during_its_turn_and_answers_both_in_order(
    claude_factory: Any, workspace: str
) -> None:
    """claude-agent-acp 0.101.0 offline (the Messages API stand-in): it advertises prompt queueing,
    so the 2nd prompt goes at once while the 1st turn waits on its review; both end `end_turn`, and
    the model hears the 2nd prompt after the 1st (research 40/41 §4)."""
    path = os.path.join(workspace, "new.txt")
    setup = claude_factory("Write", {"file_path": path, "content": "hello\n"})
    editor, view = AsyncEditor(), RecordingView()
    session = ChatSession(custom_agent(setup.command), [workspace], editor, view, env=setup.env)
    try:
        await session.start()
        assert session.queues_prompts
        first = asyncio.ensure_future(session.prompt("PROMPT-A: please write the file."))
        review = await editor.shown_review()
        second = asyncio.ensure_future(session.prompt("PROMPT-B: and then say done."))
        await _yield_to_other_tasks()
        assert session.turn_gate.running == 2  # sent at once: the agent queues it itself
        review.accept(review.proposal)
        assert await asyncio.wait_for(first, CEILING) == "end_turn"
        assert await asyncio.wait_for(second, CEILING) == "end_turn"
    finally:
        await session.close()
    told = model_messages_text(setup.model)
    assert any("PROMPT-B" in text for text in told), told
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "hello\n"


@pytest.mark.conformance
async def test_real_gemini_cli_never_gets_a_prompt_during_its_turn_so_the_turn_is_not_cancelled(
    gemini: AgentSetup, workspace: str
) -> None:
    """Gemini CLI 0.61.0 offline (recorded model turns): it advertises no prompt queueing and would
    cancel its running turn on a 2nd prompt (research 40/41 §4); the 2nd prompt waits until the 1st
    turn, held on its review, has ended, and both end `end_turn`."""
    path = os.path.join(workspace, "new.txt")
    gemini.record_turns([write_file_call(path, "hello\n")], [{"text": "Done."}], [{"text": "Second done."}])
    editor, view = AsyncEditor(), RecordingView()
    session = ChatSession(custom_agent(gemini.command), [workspace], editor, view, env=gemini.env)
    try:
        await session.start()
        assert not session.queues_prompts
        first = asyncio.ensure_future(session.prompt("PROMPT-A: please write the file."))
        review = await editor.shown_review()
        second = asyncio.ensure_future(session.prompt("PROMPT-B: and then say done."))
        await _yield_to_other_tasks()
        assert session.turn_gate.running == 1  # the 2nd waits in the gate, not at the agent
        review.accept(review.proposal)
        assert await asyncio.wait_for(first, CEILING) == "end_turn"  # not `cancelled`
        assert await asyncio.wait_for(second, CEILING) == "end_turn"
    finally:
        await session.close()
    told = gemini_user_texts(gemini.home)
    assert any("PROMPT-A" in t for t in told) and any("PROMPT-B" in t for t in told), told

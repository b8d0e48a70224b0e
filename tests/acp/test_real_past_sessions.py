"""Past sessions with the real agents, offline (issue #41). claude-agent-acp 0.101.0 against the
Messages API stand-in. A chat is closed (its agent process gone); Chat History's listing (a
connection of its own, `session/list` with this folder) finds it; opened again (`session/resume`,
which claude-agent-acp offers) the next prompt's model request holds the earlier turn. Gemini CLI 0.61.0 (recorded
model turns), which offers only session/load: reopened, it replays the earlier turn into the view
without its hidden `<session_context>` turn, and the chat goes on.
"""

from __future__ import annotations

import glob
import json
import os
from datetime import datetime, timedelta
from typing import Any

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatSession
from tests.acp.conftest import AgentSetup, AsyncEditor, RecordingView

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]

EARLIER = "Please remember the code word PELICAN-7 for later."


async def test_claude_resumed_from_the_history_after_its_chat_closed_continues_the_conversation(
    claude_factory: Any, workspace: str
) -> None:
    setup = claude_factory("NoSuchTool", {})  # the stand-in answers "Done." to every request
    spec = custom_agent(setup.command)

    def chat(view: RecordingView | None = None) -> ChatSession:
        return ChatSession(spec, [workspace], AsyncEditor(), view or RecordingView(), env=setup.env)

    first = chat()
    try:
        await first.start()
        assert await first.prompt(EARLIER) == "end_turn"
    finally:
        await first.close()  # the agent's process ends: only its own storage keeps the session

    lister = chat()
    try:
        await lister.connect()
        assert lister.offered.list and lister.offered.reopen_with == "session/resume"
        listing = await lister.sessions()
    finally:
        await lister.close()
    assert [s.session_id for s in listing.sessions] == [first.session_id], listing
    assert "PELICAN-7" in listing.sessions[0].title  # claude-agent-acp titles a session by its first prompt

    view = RecordingView()
    again = chat(view)
    before = len(setup.model.requests)
    try:
        await again.reopen(listing.sessions[0].session_id)
        assert again.session_id == first.session_id
        assert await again.prompt("What was the code word?") == "end_turn"
    finally:
        await again.close()
    later = [json.dumps(r) for r in setup.model.requests[before:]]
    answering = [r for r in later if "What was the code word?" in r]  # the model request of the new prompt
    assert answering, f"the resumed chat's prompt never reached the model: {later!r}"
    # (claude-agent-acp also asks the model for a title, with the new prompt alone)
    assert any(EARLIER in r for r in answering), "the earlier turn did not reach the model with it"
    assert any("Resumed an earlier session" in n for n in view.notices), view.notices


def _recorded_a_minute_earlier(home: str, session_id: str) -> None:
    """Gemini CLI 0.61.0 names a chat's recording `session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl` and a
    session/load starts a new recording named with the current minute: loaded in the minute of its
    last write, the session is lost (research 40/41 §2, an upstream bug). A user reopening it from
    the history does so later; the test, which reopens it at once, renames its recording to the
    minute before instead of waiting for the clock."""
    found = glob.glob(os.path.join(home, ".gemini", "tmp", "*", "chats", f"session-*-{session_id[:8]}.jsonl"))
    assert len(found) == 1, found
    folder, name = os.path.split(found[0])
    stamp = datetime.strptime(name[len("session-") : len("session-") + 16], "%Y-%m-%dT%H-%M")
    earlier = (stamp - timedelta(minutes=1)).strftime("%Y-%m-%dT%H-%M")
    os.rename(found[0], os.path.join(folder, f"session-{earlier}-{session_id[:8]}.jsonl"))


async def test_gemini_loaded_again_replays_the_earlier_turn_without_its_hidden_context(
    gemini: AgentSetup, workspace: str
) -> None:
    gemini.record_turns([{"text": "Noted."}])
    spec = custom_agent(gemini.command)

    def chat(view: RecordingView) -> ChatSession:
        return ChatSession(spec, [workspace], AsyncEditor(), view, env=gemini.env)

    first = chat(RecordingView())
    try:
        await first.start()
        assert await first.prompt(EARLIER) == "end_turn"
    finally:
        await first.close()
    _recorded_a_minute_earlier(gemini.home, first.session_id)
    gemini.record_turns([{"text": "It was PELICAN-7."}])  # each process answers from the first turn recorded

    view = RecordingView()
    again = chat(view)
    try:
        await again.reopen(first.session_id)  # Gemini offers no session/resume: session/load
        assert again.offered.reopen_with == "session/load" and not again.offered.list
        assert await again.prompt("What was the code word?") == "end_turn"
    finally:
        await again.close()
    replayed = view.called("user_text")  # the replay may arrive after session/load's answer
    assert replayed == [EARLIER], view.calls  # what the user typed; not Gemini's <session_context> turn
    assert "Noted." in "".join(view.text) and "It was PELICAN-7." in "".join(view.text)

"""Past sessions with the real agents, offline (issue #41): claude-agent-acp 0.101.0 against the
Messages API stand-in. A chat is closed (its agent process gone); Chat History's listing (a
connection of its own, `session/list` with this folder) finds it; opened again (`session/resume`,
which claude-agent-acp offers) the next prompt's model request holds the earlier turn."""

from __future__ import annotations

import json
from typing import Any

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatSession
from tests.acp.conftest import AsyncEditor, RecordingView

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

"""The chat UI's session features with the real agents offline: Gemini CLI 0.61.0 (`--acp`,
recorded model turns) and claude-agent-acp 0.101.0 (a local Messages API stand-in): modes and
models, continuing a session after the agent restarted, "allow for this session", and two chats
with different agents reviewing through one window's Reviews at the same time."""

from __future__ import annotations

import asyncio
import glob
import os
from typing import Any

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatSession
from companion.core.reviews import Review
from tests.acp.conftest import CEILING, AgentSetup, AsyncEditor, RecordingView, gemini_user_texts
from tests.conformance.harness import write_file_call

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]


def _session(setup: AgentSetup, workspace: str, editor: AsyncEditor, view: RecordingView, **kw: Any) -> ChatSession:
    return ChatSession(custom_agent(setup.command), [workspace], editor, view, env=setup.env, **kw)


async def test_gemini_switches_mode_and_model(gemini: AgentSetup, workspace: str) -> None:
    gemini.record_turns([{"text": "unused"}])  # the CLI reads its recorded turns on session/new
    view = RecordingView()
    session = _session(gemini, workspace, AsyncEditor(), view)
    try:
        await session.start()
        assert session.mode == "default" and view.called("mode")[-1][0] == "default"
        assert {"default", "autoEdit", "yolo", "plan"} <= {m.id for m in session.modes}
        other = next(m.id for m in session.models if m.id != session.model)
        await session.set_mode("plan")
        await session.set_model(other)
        assert (session.mode, session.model) == ("plan", other)
        assert view.called("mode")[-1][0] == "plan" and view.called("models")[-1][0] == other
    finally:
        await session.close()


async def test_claude_switches_mode_and_its_model_config_option(claude_factory: Any, workspace: str) -> None:
    setup = claude_factory("Write", {"file_path": os.path.join(workspace, "x.txt"), "content": "x\n"})
    view = RecordingView()
    session = _session(setup, workspace, AsyncEditor(), view)
    try:
        await session.start()
        assert session.mode == "default" and not session.models  # its model is a config option
        model = next(o for o in session.config if o.id == "model")
        other = next(c.value for c in model.choices if c.value != model.current)
        await session.set_model(other)
        assert next(o for o in session.config if o.id == "model").current == other
        assert next(o for o in view.called("config_options")[-1] if o.id == "model").current == other
        await session.set_mode("acceptEdits")
        assert session.mode == "acceptEdits" and view.called("mode")[-1][0] == "acceptEdits"
    finally:
        await session.close()


async def test_a_gemini_session_is_continued_after_the_agent_restarted(gemini: AgentSetup, workspace: str) -> None:
    gemini.record_turns([{"text": "Noted, kiwi."}], [{"text": "It was kiwi."}])
    first = _session(gemini, workspace, AsyncEditor(), RecordingView())
    try:
        await first.start()
        assert first.can_load
        assert await first.prompt("Remember the word kiwi.") == "end_turn"
        session_id = first.session_id
    finally:
        await first.close()  # the agent's process ends
    _as_if_saved_a_minute_earlier(gemini.home, session_id)
    view = RecordingView()
    second = _session(gemini, workspace, AsyncEditor(), view)
    try:
        await second.load(session_id)
        assert second.session_id == session_id and second.mode == "default"
        # The history is replayed as session/update notifications. Gemini CLI 0.61.0 does not await
        # that replay before answering session/load (`session.streamHistory(...)` without await in
        # loadSession, bundle/gemini-3HFX2LNT.js L16457), so it may still be arriving: wait for it.
        await view.calls.until(
            lambda: (
                "Remember the word kiwi." in "".join(view.called("user_text")) and "Noted, kiwi." in "".join(view.text)
            ),
            "the replayed history",
        )
        assert await second.prompt("Which word was it?") == "end_turn"
    finally:
        await second.close()
    told = gemini_user_texts(gemini.home)
    assert "Remember the word kiwi." in told and "Which word was it?" in told


def _as_if_saved_a_minute_earlier(home: str, session_id: str) -> None:
    """Gemini CLI's session/load starts a new recording under the name `session-<this minute>-<id
    prefix>` before it reads the saved one, so a load within the minute of the last turn erases that
    session (google-gemini/gemini-cli#28775, reproduced here with 0.61.0: "No previous sessions
    found for this project."). A user continues a chat later; the test renames the file to an
    earlier minute instead of waiting one."""
    pattern = os.path.join(home, ".gemini", "tmp", "*", "chats", f"session-*-{session_id[:8]}.jsonl")
    (saved,) = glob.glob(pattern)
    os.rename(saved, os.path.join(os.path.dirname(saved), f"session-2000-01-01T00-00-{session_id[:8]}.jsonl"))


async def test_allow_for_this_session_lets_gemini_edit_without_asking_and_says_so(
    gemini: AgentSetup, workspace: str
) -> None:
    first, second = os.path.join(workspace, "a.txt"), os.path.join(workspace, "b.txt")
    gemini.record_turns(
        [write_file_call(first, "a\n")], [{"text": "Done."}], [write_file_call(second, "b\n")], [{"text": "Done."}]
    )
    editor, view = AsyncEditor(), RecordingView()
    offered: list[str | None] = []

    def user(review: Review) -> None:
        offered.append(review.allow_always)
        review.accept_always(review.proposal)

    editor.decide = user
    session = _session(gemini, workspace, editor, view)
    try:
        await session.start()
        assert await session.prompt("Write a.txt.") == "end_turn"
        assert await session.prompt("Write b.txt.") == "end_turn"
    finally:
        await session.close()
    assert offered == ["Allow for this session"] and len(editor.shown) == 1  # the second edit was not asked
    for path, text in ((first, "a\n"), (second, "b\n")):
        with open(path, encoding="utf-8") as handle:
            assert handle.read() == text
    warnings = [text for text, kind in view.called("notice") if kind == "warning"]
    assert warnings[0].startswith("Later edits by node in this session are applied without review")
    assert f"node changed {second} without asking: applied without review." in warnings


async def test_two_chats_with_gemini_and_claude_review_through_one_window_at_once(
    gemini: AgentSetup, claude_factory: Any, workspace: str
) -> None:
    gemini_path, claude_path = os.path.join(workspace, "gemini.txt"), os.path.join(workspace, "claude.txt")
    gemini.record_turns([write_file_call(gemini_path, "from gemini\n")], [{"text": "Done."}])
    claude = claude_factory("Write", {"file_path": claude_path, "content": "from claude\n"})
    editor = AsyncEditor()  # the window's one editor
    both_shown = asyncio.Event()
    editor.decide = lambda review: both_shown.set() if len(editor.shown) == 2 else None
    chat_g = _session(gemini, workspace, editor, RecordingView())
    chat_c = _session(claude, workspace, editor, RecordingView(), reviews=chat_g.gate.reviews)
    try:
        await asyncio.gather(chat_g.start(), chat_c.start())
        turns = [
            asyncio.ensure_future(chat_g.prompt("Write gemini.txt.")),
            asyncio.ensure_future(chat_c.prompt("Write claude.txt.")),
        ]
        await asyncio.wait_for(both_shown.wait(), CEILING)
        reviews = {review.file_path: review for review, _, _ in editor.shown}
        assert set(reviews) == {gemini_path, claude_path} and len(chat_g.gate.reviews) == 2
        assert (reviews[gemini_path].requested_by, reviews[claude_path].requested_by) == ("node", "Claude")
        reviews[claude_path].reject()  # Claude's review ends; Gemini's stays open and waiting
        assert await asyncio.wait_for(turns[1], CEILING) == "end_turn"
        await chat_c.close()  # closing Claude's chat closes only its own reviews
        assert reviews[gemini_path].is_open and not turns[0].done()
        reviews[gemini_path].accept("from gemini, as the user wants it\n")
        assert await asyncio.wait_for(turns[0], CEILING) == "end_turn"
    finally:
        await asyncio.gather(chat_c.close(), chat_g.close())
    with open(gemini_path, encoding="utf-8") as handle:
        assert handle.read() == "from gemini, as the user wants it\n"
    assert not os.path.exists(claude_path)
    assert len(chat_g.gate.reviews) == 0

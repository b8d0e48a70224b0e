"""Past sessions of an agent (issue #41, "Get back to a past conversation"): every page of
`session/list`, only this folder's, newest first; a session opened again with `session/resume`
where offered, else `session/load` with its replay shown (and Gemini's hidden context turn not);
close and delete. Against the scripted agent `history_agent.py` (the SDK's agent side)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatFailed, ChatSession
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.acp.history_agent import CONTEXT, session, sessions_file

pytestmark = pytest.mark.anyio

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "history_agent.py")


def history(tmp_path: Any, workspace: str) -> list[dict[str, Any]]:
    """Five sessions over three pages of two: three of `workspace`, two of another folder, in no order."""
    other = os.path.join(str(tmp_path), "other")
    return [
        session("b", workspace, "Second", "2026-12-05T10:00:00Z", ("user", "hello b"), ("agent", "answer b")),
        session("x", other, "Elsewhere", "2026-12-06T09:00:00Z"),
        session("a", workspace, "First", "2026-12-04T10:00:00Z", ("user", "hello a"), ("agent", "answer a")),
        session("y", other, "Elsewhere too", "2026-12-01T09:00:00Z"),
        session("c", workspace, "Newest", "2026-12-06T08:00:00.500Z", ("user", "hello c"), ("agent", "answer c")),
    ]


def agent_env(tmp_path: Any, workspace: str, **env: str) -> dict[str, str]:
    root = str(tmp_path)
    return {
        **os.environ,
        "HISTORY_AGENT_SESSIONS": sessions_file(os.path.join(root, "sessions.json"), history(tmp_path, workspace)),
        "HISTORY_AGENT_RECORD": os.path.join(root, "record.jsonl"),
        **env,
    }


def recorded(env: dict[str, str]) -> list[dict[str, Any]]:
    if not os.path.exists(env["HISTORY_AGENT_RECORD"]):
        return []
    with open(env["HISTORY_AGENT_RECORD"], encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def chat(workspace: str, env: dict[str, str], view: RecordingView | None = None) -> ChatSession:
    spec = custom_agent([sys.executable, AGENT])
    return ChatSession(spec, [workspace], AsyncEditor(), view or RecordingView(), env=env)


async def test_every_page_of_this_folder_is_listed_newest_first(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path, workspace)
    session_ = chat(workspace, env)
    try:
        await session_.connect()
        listing = await session_.sessions()
    finally:
        await session_.close()
    assert [s.session_id for s in listing.sessions] == ["c", "b", "a"]  # all three pages; no other folder's
    assert [s.title for s in listing.sessions] == ["Newest", "Second", "First"]
    assert not listing.cut
    asked = [r["params"] for r in recorded(env) if r["method"] == "session/list"]
    assert asked == [{"cursor": c, "cwd": workspace} for c in (None, "offset:2", "offset:4")]


async def test_a_listing_stops_at_its_bound_and_says_so(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path, workspace)
    session_ = chat(workspace, env)
    try:
        await session_.connect()
        listing = await session_.sessions(limit=2)
    finally:
        await session_.close()
    assert len(listing.sessions) == 2 and listing.cut


async def test_an_agent_without_session_list_is_told_in_one_line(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path, workspace, HISTORY_AGENT_OFFERS="load")
    session_ = chat(workspace, env)
    try:
        await session_.connect()
        assert session_.offered.reopen_with == "session/load" and not session_.offered.list
        with pytest.raises(ChatFailed, match="does not list its sessions"):
            await session_.sessions()
    finally:
        await session_.close()
    assert not [r for r in recorded(env) if r["method"] == "session/list"]


async def test_an_agent_offering_resume_gets_session_resume_and_the_chat_goes_on(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path, workspace)
    view = RecordingView()
    session_ = chat(workspace, env, view)
    try:
        await session_.reopen("b")
        assert await session_.prompt("and now?") == "end_turn"
    finally:
        await session_.close()
    methods = [r["method"] for r in recorded(env)]
    assert "session/resume" in methods and "session/load" not in methods and "session/new" not in methods
    assert view.called("user_text") == []  # resume replays nothing
    assert any("Resumed an earlier session" in n for n in view.notices), view.notices
    assert "Earlier: hello b." in "".join(view.text)  # the earlier turn is the agent's context


async def test_an_agent_with_only_load_replays_the_session_into_the_view_without_its_hidden_context(
    workspace: str, tmp_path: Any
) -> None:
    env = agent_env(tmp_path, workspace, HISTORY_AGENT_OFFERS="load", HISTORY_AGENT_CONTEXT="1")
    view = RecordingView()
    session_ = chat(workspace, env, view)
    try:
        await session_.reopen("a")
        assert await session_.prompt("more") == "end_turn"
    finally:
        await session_.close()
    methods = [r["method"] for r in recorded(env)]
    assert "session/load" in methods and "session/resume" not in methods
    assert view.called("user_text") == ["hello a"]  # what the user typed; not the context turn
    assert CONTEXT not in str(view.calls)
    assert view.text[0] == "answer a" and "Earlier: hello a." in view.text[-1]


async def test_a_user_text_that_only_mentions_session_context_is_shown(workspace: str, tmp_path: Any) -> None:
    typed = "why does <session_context> appear in my logs?"
    sessions = [session("t", workspace, "Typed", "2026-12-06T01:00:00Z", ("user", typed))]
    env = agent_env(tmp_path, workspace, HISTORY_AGENT_OFFERS="load")
    sessions_file(env["HISTORY_AGENT_SESSIONS"], sessions)
    view = RecordingView()
    session_ = chat(workspace, env, view)
    try:
        await session_.reopen("t")
    finally:
        await session_.close()
    assert view.called("user_text") == [typed]


async def test_close_and_delete_reach_the_agent_and_delete_removes_it_from_the_list(
    workspace: str, tmp_path: Any
) -> None:
    env = agent_env(tmp_path, workspace)
    session_ = chat(workspace, env)
    try:
        await session_.connect()
        await session_.close_session("a")
        await session_.delete_session("b")
        listing = await session_.sessions()
    finally:
        await session_.close()
    assert [s.session_id for s in listing.sessions] == ["c", "a"]
    asked = [(r["method"], r["params"]) for r in recorded(env) if r["method"] in ("session/close", "session/delete")]
    assert asked == [("session/close", {"sessionId": "a"}), ("session/delete", {"sessionId": "b"})]


async def test_delete_where_the_agent_does_not_offer_it_is_refused_before_asking(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path, workspace, HISTORY_AGENT_OFFERS="load,list")
    session_ = chat(workspace, env)
    try:
        await session_.connect()
        with pytest.raises(ChatFailed, match="cannot delete its sessions"):
            await session_.delete_session("b")
    finally:
        await session_.close()
    assert not [r for r in recorded(env) if r["method"] == "session/delete"]


# -- headless: `chat --sessions [--json]`, `chat --resume ID` --


def chat_cli(workspace: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, *args, "--", sys.executable, AGENT]
    return subprocess.run(
        argv, cwd=ROOT, env={**env, "PYTHONPATH": ROOT}, capture_output=True, text=True, timeout=CEILING
    )


def test_chat_sessions_json_lists_this_folders_sessions_of_every_page_newest_first(
    workspace: str, tmp_path: Any
) -> None:
    env = agent_env(tmp_path, workspace)
    result = chat_cli(workspace, env, "--sessions", "--json")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert [(s["sessionId"], s["title"]) for s in listed] == [("c", "Newest"), ("b", "Second"), ("a", "First")]
    assert listed[0]["updatedAt"] == "2026-12-06T08:00:00.500Z" and listed[0]["cwd"] == workspace


def test_chat_sessions_prints_one_line_per_session(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path, workspace)
    result = chat_cli(workspace, env, "--sessions")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "c  2026-12-06T08:00:00.500Z  Newest",
        "b  2026-12-05T10:00:00Z  Second",
        "a  2026-12-04T10:00:00Z  First",
    ]


def test_chat_sessions_of_an_agent_that_lists_none_is_one_error_line(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path, workspace, HISTORY_AGENT_OFFERS="load")
    result = chat_cli(workspace, env, "--sessions")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().startswith("error: ") and "does not list its sessions" in result.stderr


def test_chat_resume_id_resumes_and_the_conversation_goes_on(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path, workspace)
    result = chat_cli(workspace, env, "--resume", "b", "--prompt", "and now?", "--diff-policy", "reject")
    assert result.returncode == 0, result.stderr
    assert "Earlier: hello b." in result.stdout
    methods = [r["method"] for r in recorded(env)]
    assert "session/resume" in methods and "session/new" not in methods


def test_chat_resume_id_loads_and_replays_where_the_agent_cannot_resume(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path, workspace, HISTORY_AGENT_OFFERS="load", HISTORY_AGENT_CONTEXT="1")
    result = chat_cli(workspace, env, "--resume", "a", "--prompt", "more", "--diff-policy", "reject")
    assert result.returncode == 0, result.stderr
    assert "> hello a" in result.stdout and "answer a" in result.stdout and "session_context" not in result.stdout
    assert "session/load" in [r["method"] for r in recorded(env)]

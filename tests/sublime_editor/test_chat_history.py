"""Chat History… in the fake Sublime (issue #41, "Get back to a past conversation"): this folder's
past sessions of every page, newest first; Open resumes where the agent offers it, else loads and
replays into the chat view; Close and Delete… from the panel; an agent that lists none offers the
session Continue Last Chat remembers. The agent is the scripted `tests/acp/history_agent.py`."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from tests.acp.history_agent import CONTEXT, session, sessions_file
from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_chat import CEILING, chat_of, chat_views, send, setup, text, wait_turn
from tests.sublime_fake import control, sublime

AGENT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "acp", "history_agent.py")


def history_agent(tmp_path: Any, workspace: str, **env: str) -> dict[str, Any]:
    """The `agents` entry of the scripted agent, with three pages of two: three sessions of this
    folder, two of another."""
    root = str(tmp_path)
    other = os.path.join(root, "other")
    sessions = [
        session("b", workspace, "Second", "2026-12-05T10:00:00Z", ("user", "hello b"), ("agent", "answer b")),
        session("x", other, "Elsewhere", "2026-12-06T09:00:00Z"),
        session("a", workspace, "First", "2026-12-04T10:00:00Z", ("user", "hello a"), ("agent", "answer a")),
        session("y", other, "Elsewhere too", "2026-12-01T09:00:00Z"),
        session("c", workspace, "Newest", "2026-12-06T08:00:00Z", ("user", "hello c"), ("agent", "answer c")),
    ]
    values = {
        "HISTORY_AGENT_SESSIONS": sessions_file(os.path.join(root, "sessions.json"), sessions),
        "HISTORY_AGENT_RECORD": os.path.join(root, "record.jsonl"),
        **env,
    }
    return {"name": "History", "command": sys.executable, "args": [AGENT], "env": values}


def recorded(agent: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    path = agent["env"]["HISTORY_AGENT_RECORD"]
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [(r["method"], r["params"]) for r in map(json.loads, handle)]


def history_panel(companion: Companion, window: sublime.Window) -> dict[str, Any]:
    """Chat History… from the palette, until its panel shows."""
    companion.ready(window)
    before = len(control.quick_panels())
    assert control.run_from_palette(window, "gemini_companion_past_chats", {"agent": "History"})
    return control.pump_until(
        lambda: control.quick_panels()[-1] if len(control.quick_panels()) > before else None,
        CEILING,
        "the history panel",
    )


def pick(index: int, label: str) -> dict[str, Any]:
    """Choose `index` in the newest panel; the next panel (the session's actions) must open."""
    control.choose_quick_panel(index)
    (panel,) = control.quick_panels()[-1:]
    assert any(item[0] == label for item in panel["items"]), panel["items"]
    return panel


def choose(panel: dict[str, Any], label: str) -> None:
    index = next(i for i, item in enumerate(panel["items"]) if item[0] == label)
    control.choose_quick_panel(index)


def opened_chat(window: sublime.Window, before: set[int]) -> sublime.View:
    view = control.pump_until(
        lambda: next((v for v in chat_views(window) if v.id() not in before), None), CEILING, "the chat tab"
    )
    control.pump_until(lambda: "is ready" in text(view) or "⚠" in text(view), CEILING, "the session to open")
    assert "is ready" in text(view), text(view)
    return view


def test_the_panel_lists_every_page_of_this_folder_only_newest_first(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    agent = history_agent(tmp_path, workspace)
    window = setup(companion, workspace, [agent])
    panel = history_panel(companion, window)
    titles = [item[0] for item in panel["items"]]
    assert titles == ["Newest", "Second", "First"], panel["items"]  # not "Elsewhere": another folder's
    assert all(item[1].startswith("History · 2026-12-0") for item in panel["items"]), panel["items"]
    lists = [params for method, params in recorded(agent) if method == "session/list"]
    assert [p["cursor"] for p in lists] == [None, "offset:2", "offset:4"]  # all three pages
    assert not chat_views(window)  # listing opens no chat


def test_open_resumes_where_the_agent_offers_it_and_the_chat_goes_on(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    agent = history_agent(tmp_path, workspace)
    window = setup(companion, workspace, [agent])
    history_panel(companion, window)
    actions = pick(1, "Open")  # "Second"
    choose(actions, "Open")
    view = opened_chat(window, set())
    assert ("session/resume", {"sessionId": "b", "cwd": workspace}) in recorded(agent)
    assert "Resumed an earlier session" in text(view)
    send(view, "and now?")
    wait_turn(view)
    assert "Earlier: hello b." in text(view)


def test_open_loads_and_replays_where_the_agent_only_loads_hiding_its_context_turn(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    # An agent that lists but cannot resume.
    agent = history_agent(tmp_path, workspace, HISTORY_AGENT_OFFERS="load,list", HISTORY_AGENT_CONTEXT="1")
    window = setup(companion, workspace, [agent])
    history_panel(companion, window)
    choose(pick(2, "Open"), "Open")  # "First"
    view = opened_chat(window, set())
    assert any(method == "session/load" for method, _ in recorded(agent))
    body = text(view)
    assert "## You\n\nhello a" in body and "answer a" in body, body
    assert "session_context" not in body and CONTEXT not in body


def test_delete_asks_first_and_then_the_agent_forgets_the_session(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    agent = history_agent(tmp_path, workspace)
    window = setup(companion, workspace, [agent])
    history_panel(companion, window)
    choose(pick(0, "Delete…"), "Delete…")  # "Newest", cancelled: nothing happens
    control.settle()
    assert control.dialogs()[-1].kind == "ok_cancel" and "Newest" in control.dialogs()[-1].message
    assert not [m for m, _ in recorded(agent) if m == "session/delete"]
    history_panel(companion, window)
    control.answer_dialogs(True)
    choose(pick(0, "Delete…"), "Delete…")
    control.pump_until(lambda: ("session/delete", {"sessionId": "c"}) in recorded(agent), CEILING, "the session/delete")
    control.pump_until(lambda: any("deleted" in m for m in control.status_messages()), CEILING, "the status")
    panel = history_panel(companion, window)
    assert [item[0] for item in panel["items"]] == ["Second", "First"]


def test_close_from_the_panel_closes_the_open_session_and_keeps_the_tab(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    agent = history_agent(tmp_path, workspace)
    window = setup(companion, workspace, [agent])
    history_panel(companion, window)
    choose(pick(0, "Open"), "Open")
    view = opened_chat(window, set())
    control.type_text(view, "a prompt I am still writing")
    panel = history_panel(companion, window)
    assert panel["items"][0][1].endswith("open in a tab"), panel["items"]
    choose(pick(0, "Close"), "Close")
    chat = chat_of(view)
    control.pump_until(lambda: chat.ended, CEILING, "the chat to end")
    assert ("session/close", {"sessionId": "c"}) in recorded(agent)
    control.pump_until(lambda: "This session was closed" in text(view), CEILING, "the notice")
    assert view.is_valid() and chat.panel.prompt_text() == "a prompt I am still writing"


def test_an_agent_that_lists_none_offers_the_session_continue_last_chat_remembers(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    agent = history_agent(tmp_path, workspace, HISTORY_AGENT_OFFERS="load")
    window = setup(companion, workspace, [agent])
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_new_chat", {"agent": "History"})
    first = opened_chat(window, set())
    first.close()
    control.settle()
    control.pump_until(
        lambda: os.path.exists(os.path.join(sublime.cache_path(), "Gemini Companion", "chat sessions.json")),
        CEILING,
        "the remembered session",
    )
    panel = history_panel(companion, window)
    assert [item[0] for item in panel["items"]] == ["Last chat (remembered by Continue Last Chat)"]
    choose(pick(0, "Open"), "Open")
    opened_chat(window, set())
    assert ("session/load", {"sessionId": "new-6", "cwd": workspace}) in recorded(agent)
    assert not [m for m, _ in recorded(agent) if m == "session/list"]


def test_a_history_over_the_bound_shows_the_newest_2000_and_a_line_saying_so(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    agent = history_agent(tmp_path, workspace, HISTORY_AGENT_PAGE="1000")
    many = [session(f"s{n}", workspace, f"Chat {n}", f"2026-12-0{1 + n % 5}T10:00:00Z") for n in range(2001)]
    sessions_file(agent["env"]["HISTORY_AGENT_SESSIONS"], many)
    window = setup(companion, workspace, [agent])
    panel = history_panel(companion, window)
    assert len(panel["items"]) == 2001, len(panel["items"])
    assert panel["items"][-1][0] == "Only the 2 000 newest sessions are listed"
    control.choose_quick_panel(2000)  # the line itself does nothing
    control.settle()
    assert not control.quick_panels() and not chat_views(window)


@pytest.mark.conformance
def test_real_claude_resumed_from_chat_history_after_its_tab_closed_continues_the_conversation(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    """claude-agent-acp 0.101.0 offline (the Messages API stand-in, as tests/acp runs it): the chat's
    tab is closed (its agent stops); Chat History lists the session and Open resumes it; the next
    prompt's model request holds the earlier turn."""
    from tests.acp.conftest import claude_agent_program, claude_offline_env
    from tests.conformance.claude_harness import ModelStandIn

    earlier = "Please remember the code word PELICAN-7 for later."
    with ModelStandIn("NoSuchTool", {}) as model:  # answers "Done." to every request
        env = claude_offline_env(os.path.join(str(tmp_path), "claude"), workspace, model.url)
        agent = {"name": "Claude", "command": claude_agent_program(), "args": [], "env": env}
        window = setup(companion, workspace, [agent])
        companion.ready(window)
        assert control.run_from_palette(window, "gemini_companion_new_chat", {"agent": "Claude"})
        first = opened_chat(window, set())
        send(first, earlier)
        wait_turn(first)
        chat = chat_of(first)
        assert control.close_tab(first)
        control.pump_until(lambda: chat.session is None or chat.session.agent.exited.is_set(), CEILING, "the stop")
        companion.ready(window)
        before = len(control.quick_panels())
        assert control.run_from_palette(window, "gemini_companion_past_chats", {"agent": "Claude"})
        panel = control.pump_until(
            lambda: control.quick_panels()[-1] if len(control.quick_panels()) > before else None, 90, "the panel"
        )
        assert len(panel["items"]) == 1 and "PELICAN-7" in panel["items"][0][0], panel["items"]
        choose(pick(0, "Open"), "Open")
        view = opened_chat(window, set())
        assert "Resumed an earlier session" in text(view)
        asked = len(model.requests)
        send(view, "What was the code word?")
        wait_turn(view)
        later = [json.dumps(r) for r in model.requests[asked:] if "What was the code word?" in json.dumps(r)]
    assert later, "the resumed chat's prompt never reached the model"
    assert any(earlier in r for r in later), "the earlier turn did not reach the model"

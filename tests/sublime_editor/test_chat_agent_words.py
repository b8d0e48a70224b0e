"""What an agent says outside its reply, in the chat view of the fake Sublime (issue #27): its
`_…` notifications as the chat's status, and an answer that is not ACP as a one-line reason that
names the agent, never "an unexpected error" blaming us (tests/acp/raw_agent.py, raw JSON-RPC)."""

from __future__ import annotations

import sys

from companion.sublime_editor.chat.view import AGENT_STATUS_KEY
from tests.acp.raw_agent import STATUSES
from tests.acp.test_agent_answers import RAW_AGENT
from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_chat import CEILING, chat_views, send, setup, start_chat, text, wait_turn
from tests.sublime_fake import control


def raw(behaviour: str) -> dict[str, object]:
    return {"name": "Raw", "command": sys.executable, "args": [RAW_AGENT, behaviour]}


def test_the_agents_notifications_are_the_chats_status_until_the_turn_ends(
    companion: Companion, workspace: str
) -> None:
    window = setup(companion, workspace, [raw("status-then-ask")])
    view = start_chat(companion, window, "Raw")
    send(view, "go")
    (card,) = control.pump_until(
        lambda: [p for p in control.phantoms(view) if "asks" in p["content"]], CEILING, "the permission card"
    )
    control.settle()
    assert view.get_status(AGENT_STATUS_KEY) == f"Raw: {STATUSES[-1]}"  # the last one, in place of the others
    control.click_link(view, "option-1", card["key"])
    wait_turn(view)
    assert view.get_status(AGENT_STATUS_KEY) == ""  # the turn is over: nothing stale stays


def test_a_prompt_answer_that_is_not_acp_is_one_line_naming_the_agent(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace, [raw("prompt-unknown-stop")])
    view = start_chat(companion, window, "Raw")
    send(view, "go")
    wait_turn(view)
    body = text(view)
    assert "Raw answered the prompt with something that is not ACP (stopReason: Input should be" in body, body
    assert "unexpected error" not in body and "Traceback" not in body


def test_an_initialize_answer_that_is_not_acp_is_one_line_naming_the_agent(
    companion: Companion, workspace: str
) -> None:
    window = setup(companion, workspace, [raw("init-null")])
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_new_chat", {"agent": "Raw"})
    (view,) = chat_views(window)
    control.pump_until(lambda: "⚠" in text(view), CEILING, "the failure")
    body = text(view)
    assert "Raw answered initialize with something that is not ACP (the answer: Input should be" in body, body
    assert "unexpected error" not in body

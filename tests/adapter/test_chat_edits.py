"""Edits from agents we never tested, in the chat view of the fake Sublime (issue #27), with
`tests/acp/edit_agent.py` (the SDK's agent side): a permission naming only the call's id opens the
review with the real change, a CRLF file keeps its bytes, and the card says what the user decided
even when the agent reports a rejected edit as completed."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from tests.adapter.conftest import Companion
from tests.adapter.test_chat import review_proposal, send, setup, start_chat, text, wait_turn
from tests.sublime_fake import control

AGENT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "acp", "edit_agent.py")


def edit_agent(tmp_path: Any, steps: list[dict[str, Any]]) -> dict[str, Any]:
    script = os.path.join(str(tmp_path), "script.json")
    with open(script, "w", encoding="utf-8") as handle:
        json.dump(steps, handle)
    return {"name": "Script", "command": sys.executable, "args": [AGENT, script]}


def crlf_file(workspace: str) -> str:
    path = os.path.join(workspace, "notes.txt")
    with open(path, "wb") as handle:
        handle.write(b"one\r\ntwo\r\n")
    return path


def steps_for(path: str, completed: bool) -> list[dict[str, Any]]:
    diff = {"diff_of_read": ["two", "2"], "path": path}
    steps: list[dict[str, Any]] = [
        {"read": path},
        {"update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit notes", "kind": "edit"}},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "content": [diff]}},
        {"ask": {"toolCallId": "t1"}},  # only the id: the path and diff came before
        {"write": path, "content": {"read_with": ["two", "2"]}},
    ]
    if completed:  # reported as done whatever the user decided
        steps.append({"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}})
    return steps


def card(view: Any) -> str:
    (found,) = [p["content"] for p in control.phantoms(view) if "Edit notes" in p["content"]]
    return found


def test_an_id_only_permission_reviews_the_real_change_and_a_crlf_file_keeps_its_bytes(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    path = crlf_file(workspace)
    window = setup(companion, workspace, [edit_agent(tmp_path, steps_for(path, completed=False))])
    view = start_chat(companion, window)
    send(view, "edit")
    proposal = review_proposal(window)
    assert text(proposal) == "one\n2\n"
    control.click_link(proposal, "accept", "gemini_companion.banner")
    wait_turn(view)
    with open(path, "rb") as handle:
        assert handle.read() == b"one\r\n2\r\n"
    assert "you accepted" in card(view)


def test_a_rejected_edit_reported_as_completed_is_marked_rejected_on_its_card(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    path = crlf_file(workspace)
    window = setup(companion, workspace, [edit_agent(tmp_path, steps_for(path, completed=True))])
    view = start_chat(companion, window)
    send(view, "edit")
    control.click_link(review_proposal(window), "reject", "gemini_companion.banner")
    wait_turn(view)
    with open(path, "rb") as handle:
        assert handle.read() == b"one\r\ntwo\r\n"
    content = card(view)
    assert "completed" in content and "you rejected" in content
    assert "as done, but you rejected it" in text(view)

"""Edits from agents we never tested, in the chat view of the fake Sublime (issue #27), with
`tests/acp/edit_agent.py` (the SDK's agent side): a permission naming only the call's id opens the
review with the real change, a CRLF file keeps its bytes, and the card says what the user decided
even when the agent reports a rejected edit as completed."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_chat import CEILING, review_proposal, send, setup, start_chat, text, wait_turn
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


def review_of_part(window: Any, part: str) -> Any:
    """The proposal view whose banner says it is `part` ("File 2 of 3") of one edit, once it shows."""

    def found() -> Any:
        for view in window.views():
            if view.settings().get("gemini_companion.role") != "proposal":
                continue
            if any(part in p["content"] for p in control.phantoms(view, "gemini_companion.banner")):
                return view
        return None

    return control.pump_until(found, CEILING, f"the review of {part}")


def test_an_edit_of_three_files_is_reviewed_one_after_another_and_one_reject_refuses_it(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    paths = []
    for name in ("a", "b", "c"):
        paths.append(os.path.join(workspace, f"{name}.txt"))
        with open(paths[-1], "w", encoding="utf-8") as handle:
            handle.write(f"{name} one\n")
    blocks = [
        {"type": "diff", "path": p, "oldText": f"{n} one\n", "newText": f"{n} two\n"}
        for p, n in zip(paths, "abc", strict=True)
    ]
    steps: list[dict[str, Any]] = [
        {"ask": {"toolCallId": "t1", "kind": "edit", "title": "Patch", "content": blocks}},
        *({"disk": p, "content": f"{n} two\n"} for p, n in zip(paths, "abc", strict=True)),
    ]
    window = setup(companion, workspace, [edit_agent(tmp_path, steps)])
    view = start_chat(companion, window)
    send(view, "edit")
    first = review_of_part(window, "File 1 of 3 of one edit")
    assert text(first) == "a two\n"
    control.click_link(first, "accept", "gemini_companion.banner")
    second = review_of_part(window, "File 2 of 3 of one edit")
    assert text(second) == "b two\n"
    control.click_link(second, "reject", "gemini_companion.banner")
    wait_turn(view)
    for path, name in zip(paths, "abc", strict=True):
        with open(path, encoding="utf-8") as handle:
            assert handle.read() == f"{name} one\n"  # the agent's reject option: nothing written
    assert f"You rejected {paths[1]}, so Script's whole edit of 3 files was rejected" in text(view)


def test_an_agent_that_ends_its_turn_cancelled_on_reject_is_said_to_have_stopped(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    path = crlf_file(workspace)
    diff = {"type": "diff", "path": path, "oldText": "one\r\ntwo\r\n", "newText": "one\r\n2\r\n"}
    steps = [{"ask": {"toolCallId": "t1", "kind": "edit", "content": [diff]}}, {"stop_if_rejected": "cancelled"}]
    window = setup(companion, workspace, [edit_agent(tmp_path, steps)])
    view = start_chat(companion, window)
    send(view, "edit")
    control.click_link(review_proposal(window), "reject", "gemini_companion.banner")
    wait_turn(view)
    assert "Script stopped its turn after you rejected its edit." in text(view)

"""Reject with a reason the agent hears, in the fake Sublime (issue #41): "Reject and say why…" on a
review's banner and on a permission card asks for the reason in an input panel; the agent
(`tests/acp/edit_agent.py`, the SDK's agent side) gets the reject option, then the reason leading
the next prompt (it does not queue prompts), and the transcript shows it. Escape leaves the review
open."""

from __future__ import annotations

import json
import os
from typing import Any

from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_chat import CEILING, review_proposal, send, setup, start_chat, text, wait_turn
from tests.sublime_editor.test_chat_edits import crlf_file, edit_agent
from tests.sublime_fake import control

REASON = "keep two as a word, the docs quote it"


def recorded_prompts(record: str) -> list[list[str]]:
    with open(record, encoding="utf-8") as handle:
        return [entry["prompt"] for line in handle if "prompt" in (entry := json.loads(line))]


def agent_with_record(tmp_path: Any, steps: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    record = os.path.join(str(tmp_path), "record.jsonl")
    return {**edit_agent(tmp_path, steps), "env": {"EDIT_AGENT_RECORD": record, "EDIT_AGENT_PROMPTS": "1"}}, record


def test_reject_and_say_why_on_the_banner_tells_the_agent_with_the_next_prompt(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    path = crlf_file(workspace)
    diff = {"type": "diff", "path": path, "oldText": "one\r\ntwo\r\n", "newText": "one\r\n2\r\n"}
    agent, record = agent_with_record(
        tmp_path, [{"ask": {"toolCallId": "t1", "kind": "edit", "content": [diff]}, "turn": 1}]
    )
    window = setup(companion, workspace, [agent])
    view = start_chat(companion, window)
    send(view, "edit")
    proposal = review_proposal(window)
    control.click_link(proposal, "reject-why", "gemini_companion.banner")
    control.answer_input_panel(None)  # Escape: the review stays open, nothing decided
    control.settle()
    assert proposal.is_valid()
    control.click_link(proposal, "reject-why", "gemini_companion.banner")
    control.answer_input_panel(REASON)
    wait_turn(view)
    with open(path, "rb") as handle:
        assert handle.read() == b"one\r\ntwo\r\n"
    assert REASON in text(view)  # the transcript shows it
    send(view, "what next?")
    wait_turn(view)
    assert recorded_prompts(record)[-1] == [
        f"[Note from the editor: the user rejected your edit of {path}: {REASON}]",
        "what next?",
    ]


def test_reject_and_say_why_on_a_permission_card_tells_the_agent(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    run = {"toolCallId": "t9", "title": "rm -rf build", "kind": "execute"}
    agent, record = agent_with_record(tmp_path, [{"ask": run, "turn": 1}])
    window = setup(companion, workspace, [agent])
    view = start_chat(companion, window)
    send(view, "clean up")
    (card,) = control.pump_until(
        lambda: [p for p in control.phantoms(view) if "asks" in p["content"]], CEILING, "the permission card"
    )
    assert "Reject and say why…" in card["content"]
    control.click_link(view, "reject-why", card["key"])
    control.answer_input_panel(REASON)
    wait_turn(view)
    (card,) = [p for p in control.phantoms(view) if "asks" in p["content"]]
    assert REASON in card["content"] and 'href="option-0"' not in card["content"]
    send(view, "what next?")
    wait_turn(view)
    assert (
        recorded_prompts(record)[-1][0]
        == f"[Note from the editor: the user rejected your request (rm -rf build): {REASON}]"
    )

"""A prompt sent while the chat's agent answers (issue #41), in the fake Sublime with the scripted
agent `chat_agent.py` (the SDK's agent side): queued and shown as queued, editable with Up,
cancellable with Escape, sent when the turn ends; sent at once to an agent that advertises prompt
queueing (`_meta.claudeCode.promptQueueing`)."""

from __future__ import annotations

from typing import Any

from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_chat import (
    CEILING,
    chat_of,
    prompts_file,
    recorded,
    scripted,
    send,
    setup,
    start_chat,
    text,
    wait_turn,
)
from tests.sublime_fake import control, sublime


def _permission_card(view: sublime.View) -> dict[str, Any]:
    (card,) = control.pump_until(
        lambda: [p for p in control.phantoms(view) if "asks" in p["content"]], CEILING, "the permission card"
    )
    return card


def _queued_card(view: sublime.View) -> list[str]:
    return [p["content"] for p in control.phantoms(view) if "queued: " in p["content"]]


def test_a_prompt_sent_during_a_turn_is_queued_and_sent_when_the_turn_ends(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = prompts_file(tmp_path)
    window = setup(companion, workspace, [scripted(env={"PROMPTS_FILE": record})])
    view = start_chat(companion, window)
    chat = chat_of(view)
    send(view, "run")
    card = _permission_card(view)
    send(view, "first queued")
    send(view, "second queued")
    assert chat.panel.prompt_text() == ""  # taken from the prompt: it is the queue's now
    (shown,) = _queued_card(view)
    assert "queued: first queued" in shown and "queued: second queued" in shown
    assert "Up in the empty prompt" in shown and "Escape" in shown
    assert recorded(record) == ["run"]  # the agent has not seen them: its turn runs
    control.click_link(view, "option-0", card["key"])
    control.pump_until(lambda: "echo: second queued" in text(view), CEILING, "the queued prompts' turns")
    wait_turn(view)
    assert recorded(record) == ["run", "first queued", "second queued"]  # each after the one before
    assert text(view).index("chosen: ") < text(view).index("echo: first queued")
    assert _queued_card(view) == []


def test_up_edits_the_queued_prompt_and_escape_cancels_it(companion: Companion, workspace: str, tmp_path: Any) -> None:
    record = prompts_file(tmp_path)
    window = setup(companion, workspace, [scripted(env={"PROMPTS_FILE": record})])
    view = start_chat(companion, window)
    chat = chat_of(view)
    send(view, "run")
    card = _permission_card(view)
    send(view, "helo")
    assert control.press_keys(view, "up") == "gemini_companion_chat_history"
    assert chat.panel.prompt_text() == "helo"  # back in the prompt, out of the queue
    assert _queued_card(view) == []
    control.type_text(view, " world")
    assert control.press_keys(view, "enter") == "gemini_companion_chat_send"
    send(view, "never mind")
    assert control.press_keys(view, "escape") == "gemini_companion_chat_cancel_queued"
    assert chat.busy  # the turn still runs: Escape took the queued prompt, not the turn
    (shown,) = _queued_card(view)
    assert "helo world" in shown and "never mind" not in shown
    control.click_link(view, "option-0", card["key"])
    control.pump_until(lambda: "echo: helo world" in text(view), CEILING, "the edited prompt's turn")
    wait_turn(view)
    assert recorded(record) == ["run", "helo world"]


def test_cancelling_the_turn_gives_the_queued_prompts_back_to_the_prompt(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    chat = chat_of(view)
    send(view, "wait")
    send(view, "next question")
    control.type_text(view, "still typing")
    assert control.run_from_palette(window, "gemini_companion_chat_cancel")
    wait_turn(view)
    assert chat.panel.prompt_text() == "next question\n\nstill typing"  # nothing typed is lost
    assert "echo: next question" not in text(view)


def test_an_agent_that_queues_prompts_gets_one_sent_during_a_turn_at_once(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = prompts_file(tmp_path)
    window = setup(companion, workspace, [scripted(env={"PROMPTS_FILE": record, "CHAT_AGENT_QUEUEING": "1"})])
    view = start_chat(companion, window)
    chat = chat_of(view)
    send(view, "run")
    card = _permission_card(view)
    send(view, "meanwhile")
    control.pump_until(lambda: "echo: meanwhile" in text(view), CEILING, "the agent's answer to the 2nd prompt")
    assert chat.busy and _queued_card(view) == []  # the first turn still waits for its permission
    assert recorded(record) == ["run", "meanwhile"]
    control.click_link(view, "option-0", card["key"])
    wait_turn(view)
    assert "chosen: " in text(view)

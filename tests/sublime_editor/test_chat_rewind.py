"""Rewind to Here in the fake Sublime (issue 41, "Rewind the conversation with the code"): under a
prompt, beside Restore checkpoint, it restores the files to before that prompt, opens a new session
of the agent whose first prompt carries the turns before it, puts the prompt's text back to edit
(keeping what the user had typed), says so in the chat; Undo rewind brings back the files and the
earlier session (session/load)."""

from __future__ import annotations

from typing import Any

from tests.sublime_editor.conftest import Companion, write
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
from tests.sublime_fake import control

CARD_KEY = "gemini_companion.chat.card."  # chat_view.CARD_KEY


def read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def confirm(label: str) -> None:
    panel = control.pump_until(lambda: (control.quick_panels() or [None])[-1], CEILING, "a quick panel")
    assert panel["items"][0][0] == label
    control.choose_quick_panel(0)


def test_rewind_to_here_restores_the_files_gives_the_prompt_back_and_undo_brings_back_the_old_session(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = prompts_file(tmp_path)
    path = write(workspace, "a.txt", "before")
    window = setup(companion, workspace, [scripted(env={"PROMPTS_FILE": record, "CHAT_AGENT_SESSION_IDS": "1"})])
    view = start_chat(companion, window)
    chat = chat_of(view)
    send(view, "hello")  # prompt 1
    wait_turn(view)
    sneak = f"sneak {path} after"
    send(view, sneak)  # prompt 2: the agent writes the file itself
    wait_turn(view)
    assert read(path) == "after"
    control.type_text(view, "a draft")  # typed, not sent: it must not be lost
    control.click_link(view, "rewind", CARD_KEY + "restore-2")  # Rewind to Here under prompt 2
    confirm("Restore prompt 2")
    control.pump_until(lambda: sneak in chat.panel.prompt_text(), CEILING, "prompt 2 back in the prompt")
    assert chat.panel.prompt_text() == f"{sneak}\n\na draft"
    assert read(path) == "before"
    shown = text(view)
    assert "Rewound to prompt 2; the conversation before it goes with your next prompt." in shown
    assert "what you had typed there is kept after it" in shown
    chat.panel.set_prompt("")
    send(view, "again")
    wait_turn(view)
    sent = recorded(record)[-1]
    assert sent.startswith("[s2] [Note from the editor: the user rewound this conversation."), sent
    assert "hello" in sent and "echo: hello" in sent and "sneak" not in sent, sent
    assert sent.endswith("again")
    control.click_link(view, "undo", CARD_KEY + "undo-restore")  # Undo rewind
    confirm("Restore before restore to prompt 2")
    control.pump_until(lambda: "load s1" in recorded(record), CEILING, "the old session loaded")
    control.pump_until(lambda: not chat.busy, CEILING, "the undo to end")
    assert read(path) == "after"
    assert "The earlier conversation is back" in text(view)
    send(view, "continue")
    wait_turn(view)
    sent = recorded(record)[-1]  # to the old session, with no transcript note (the restore's note, as always)
    assert sent.startswith("[s1] ") and sent.endswith("continue") and "rewound this conversation" not in sent, sent

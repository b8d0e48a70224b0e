"""Restore Checkpoint in the fake Sublime (issue 30): the window command restores the checkpoint before
a prompt of a chat, a clean open buffer shows the restored text, a dirty one is a conflict shown with
both texts and is never overwritten unless the user takes the checkpoint, and the restore undoes.

The chat's Turns (`Chat.turns`, which the Sublime chat sets up when checkpoints are on) is the one a
chat opened with the scripted agent takes; the turn's changes are made by the test, as an agent would."""

from __future__ import annotations

import os
from dataclasses import dataclass
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
from tests.sublime_fake import control, sublime

CARD_KEY = "gemini_companion.chat.card."  # chat_view.CARD_KEY

COMMAND = "gemini_companion_restore_checkpoint"
RESTORED = "Gemini Companion: Restored prompt 1 (undo: Restore checkpoint 'before restore to prompt 1')"


def read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def chat_with_a_turn(companion: Companion, workspace: str, tmp_path: Any) -> tuple[sublime.Window, Any]:
    """a.txt and b.txt changed by the turn of prompt 1, c.txt created by it."""
    write(workspace, "a.txt", "before a\n")
    write(workspace, "b.txt", "before b\n")
    window = setup(companion, workspace)
    chat = chat_of(start_chat(companion, window))
    control.pump_until(lambda: chat.turns, CEILING, "the chat's first checkpoint (chat_checkpoints is on by default)")
    chat.turns.begin()
    for name in ("a", "b", "c"):
        write(workspace, f"{name}.txt", f"agent {name}\n")
    chat.turns.end("Script", {})
    return window, chat


def open_files(window: sublime.Window, workspace: str) -> tuple[sublime.View, sublime.View]:
    a = control.open_file(window, os.path.join(workspace, "a.txt"))
    b = control.open_file(window, os.path.join(workspace, "b.txt"))
    control.type_text(b, "typed ")  # unsaved: "typed agent b\n"
    return a, b


def next_panel() -> dict[str, Any]:
    return control.pump_until(lambda: (control.quick_panels() or [None])[-1], CEILING, "a quick panel")


def restored() -> None:
    control.pump_until(lambda: RESTORED in control.status_messages(), CEILING, "the restore")


@dataclass
class Restoring:
    """A restore of prompt 1 asked for, its one conflict (b.txt's unsaved buffer) answered."""

    window: sublime.Window
    chat: Any
    a: sublime.View
    b: sublime.View
    conflict_panel: dict[str, Any]
    confirm_panel: dict[str, Any]


def restoring(companion: Companion, workspace: str, tmp_path: Any, answer: int) -> Restoring:
    """0: Keep mine, 1: Take the checkpoint; the final confirmation is left to the test."""
    window, chat = chat_with_a_turn(companion, workspace, tmp_path)
    a, b = open_files(window, workspace)
    window.run_command(COMMAND, {"chat": chat.id, "prompt": 1})
    conflict_panel = next_panel()
    control.choose_quick_panel(answer)
    return Restoring(window, chat, a, b, conflict_panel, next_panel())


def plan_tab(window: sublime.Window) -> sublime.View:
    (tab,) = [v for v in window.views() if v.settings().get("gemini_companion.restore_plan")]
    return tab


def test_restore_brings_back_the_files_updates_a_clean_buffer_and_keeps_a_dirty_one(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    r = restoring(companion, workspace, tmp_path, 0)  # Keep mine
    window, a, b = r.window, r.a, r.b
    assert r.conflict_panel["placeholder"] == "Conflict 1 of 1: changed after the agent"
    shown = text(plan_tab(window))
    real_b = os.path.join(os.path.realpath(workspace), "b.txt")
    assert f"## Conflict: {real_b}" in shown
    assert "### your unsaved buffer\n```\ntyped agent b\n```" in shown
    assert "### the checkpoint (before prompt 1)\n```\nbefore b\n```" in shown
    assert f"- delete  {os.path.join(os.path.realpath(workspace), 'c.txt')}" in shown
    assert r.confirm_panel["items"][0][0] == "Restore prompt 1"
    control.choose_quick_panel(0)
    restored()
    assert (read(os.path.join(workspace, "a.txt")), text(a), a.is_dirty()) == ("before a\n", "before a\n", False)
    assert (read(os.path.join(workspace, "b.txt")), text(b), b.is_dirty()) == ("agent b\n", "typed agent b\n", True)
    assert not os.path.exists(os.path.join(workspace, "c.txt"))
    assert text(plan_tab(window)).endswith(f"\n**{RESTORED.removeprefix('Gemini Companion: ')}.**\n")


def test_taking_the_checkpoint_replaces_a_dirty_buffer_and_the_restore_undoes(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    r = restoring(companion, workspace, tmp_path, 1)  # Take the checkpoint
    window, a, b = r.window, r.a, r.b
    control.choose_quick_panel(0)
    restored()
    assert (read(os.path.join(workspace, "b.txt")), text(b)) == ("before b\n", "before b\n")
    assert b.is_dirty()  # an edit of the user's buffer (one undo brings their text back), not a reload
    b.run_command("undo")
    assert text(b) == "typed agent b\n"  # the user's text is one undo away
    b.run_command("redo")
    plan_tab(window).close()
    window.run_command(COMMAND, {"chat": r.chat.id, "undo": True})
    assert next_panel()["items"][0][0] == "Restore before restore to prompt 1"
    control.choose_quick_panel(0)
    control.pump_until(lambda: "Restore checkpoint 'before restore to before" in "".join(control.status_messages()))
    assert read(os.path.join(workspace, "a.txt")) == "agent a\n"
    assert read(os.path.join(workspace, "b.txt")) == "agent b\n"
    assert read(os.path.join(workspace, "c.txt")) == "agent c\n"
    assert (text(a), a.is_dirty()) == ("agent a\n", False)


def test_a_buffer_edited_after_the_plan_was_shown_refuses_the_restore_with_nothing_written(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    a = restoring(companion, workspace, tmp_path, 0).a
    control.type_text(a, "late ")
    control.choose_quick_panel(0)
    a_path = os.path.join(workspace, "a.txt")
    assert control.status_messages()[-1] == (
        f"Gemini Companion: {a_path} changed after the restore plan was shown, so nothing was written; "
        "restore again to see the new plan."
    )
    control.settle()
    assert [read(os.path.join(workspace, f"{n}.txt")) for n in "abc"] == ["agent a\n", "agent b\n", "agent c\n"]
    assert text(a) == "late agent a\n"


def test_a_chat_without_checkpoints_says_so(companion: Companion, workspace: str) -> None:
    control.user_settings("Gemini Companion.sublime-settings", {"agents": [scripted()], "chat_checkpoints": False})
    window = control.new_window([workspace])
    companion.load()
    chat = chat_of(start_chat(companion, window))
    window.run_command(COMMAND, {"chat": chat.id, "prompt": 1})
    assert control.status_messages()[-1] == (
        "Gemini Companion: that chat keeps no checkpoints, so there is nothing to restore."
    )


def test_restore_checkpoint_under_a_prompt_restores_it_and_the_next_prompt_tells_the_agent(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = prompts_file(tmp_path)
    path = write(workspace, "a.txt", "before")
    window = setup(companion, workspace, [scripted(env={"PROMPTS_FILE": record})])
    view = start_chat(companion, window)
    send(view, "hello")  # prompt 1: nothing changes
    wait_turn(view)
    send(view, f"sneak {path} after")  # prompt 2: the agent writes the file itself
    wait_turn(view)
    assert read(path) == "after"
    assert len(control.phantoms(view, CARD_KEY + "restore-1")) == 1
    control.click_link(view, "restore", CARD_KEY + "restore-2")  # the link under prompt 2
    assert next_panel()["items"][0][0] == "Restore prompt 2"
    control.choose_quick_panel(0)
    control.pump_until(lambda: "Gemini Companion: Restored prompt 2" in "".join(control.status_messages()), CEILING)
    assert read(path) == "before"
    send(view, "again")
    wait_turn(view)
    sent = recorded(record)[-1]
    assert "[Note from the editor: the user changed files back since your last turn" in sent, sent
    assert os.path.realpath(path) in sent and sent.endswith("again"), sent
    send(view, "once more")
    wait_turn(view)
    assert recorded(record)[-1] == "once more"  # the note went once

"""The chat in the real Sublime Text (issue #28): what the fake now models of the real editor and the
chat relies on: Default's key bindings and their contexts, undo as a change, hot exit bringing chat
views back, clones and views moving between windows, line-editing commands."""

from __future__ import annotations

from typing import Any

import psutil

from tests.sublime_editor.conftest import Companion, loop_threads, pkg, write
from tests.sublime_editor.test_chat import CEILING, agent_pids, chat_of, send, setup, start_chat, text, wait_turn
from tests.sublime_fake import _session, _state, control, sublime


def test_escape_gives_way_to_defaults_escape_and_cancels_only_when_nothing_else_is_open(
    companion: Companion, workspace: str
) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, "wait")
    chat = chat_of(view)
    assert chat.busy
    control.show_ui(view, auto_complete=True)
    assert control.press_keys(view, "escape") == "hide_auto_complete"
    control.show_ui(view, popup=True)
    assert control.press_keys(view, "escape") == "hide_popup"
    control.show_ui(view, overlay=True)
    assert control.press_keys(view, "escape") == "hide_overlay"
    control.show_ui(view, fields=True)
    assert control.press_keys(view, "escape") == "clear_fields"
    window.run_command("show_panel", {"panel": "console"})
    assert control.press_keys(view, "escape") == "hide_panel"
    control.select(view, view.size() - 1, view.size())
    assert control.press_keys(view, "escape") == "single_selection"
    assert chat.busy  # none of those cancelled the turn
    assert control.press_keys(view, "escape") == "gemini_companion_chat_cancel"
    wait_turn(view)
    assert "The turn ended: cancelled." in text(view)


def test_enter_commits_an_open_completion_and_the_keypads_enter_sends(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    control.type_text(view, "hello")
    control.show_ui(view, auto_complete=True)
    assert control.press_keys(view, "keypad_enter") == "commit_completion"
    assert chat_of(view).panel.prompt_text() == "hello"
    assert control.press_keys(view, "keypad_enter") == "gemini_companion_chat_send"
    wait_turn(view)
    assert "## You\n\nhello\n" in text(view)


def transcript(view: sublime.View) -> str:
    return view.substr(sublime.Region(0, chat_of(view).panel.input_start))


def new_chat(companion: Companion, workspace: str) -> tuple[sublime.View, Any, str]:
    """A started chat's view, its panel and its transcript so far."""
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    return view, chat_of(view).panel, transcript(view)


def test_undo_and_redo_mixed_with_streamed_text_never_touch_the_transcript(
    companion: Companion, workspace: str
) -> None:
    view, panel, before = new_chat(companion, workspace)
    control.type_text(view, "abc")
    for _ in range(3):  # the first takes back the typing; an undo is itself a change, not the user's typing
        control.press_keys(view, "ctrl+z")
    assert text(view) == before
    assert control.press_keys(view, "ctrl+shift+z") == "redo"
    assert panel.prompt_text() == "abc" and transcript(view) == before
    control.press_keys(view, "ctrl+z")
    send(view, "stream 60")
    control.type_text(view, "draft")  # typed while the reply streams in
    control.pump_until(lambda: "chunk 5 " in text(view), 60, "the reply to start")
    control.press_keys(view, "ctrl+z")
    control.press_keys(view, "ctrl+y")
    control.press_keys(view, "ctrl+z")
    wait_turn(view)
    for key in ("ctrl+z", "ctrl+z", "ctrl+shift+z", "ctrl+z"):
        control.press_keys(view, key)
    body = transcript(view)
    assert "## You\n\nstream 60\n" in body
    assert "".join(f"chunk {i} " for i in range(60)) in body  # the whole reply, in order
    assert body.endswith("\n\n❯ ") and text(view) == body + panel.prompt_text()
    panel.set_prompt("")
    send(view, "stream 1")
    wait_turn(view)
    assert "## You\n\nstream 1\n" in transcript(view) and text(view).endswith("\n\n❯ ")


def test_chat_tabs_a_restart_brings_back_are_closed_and_never_act_on_a_new_chat(
    companion: Companion, workspace: str
) -> None:
    path = write(workspace, "quiet.txt", "before\n")
    window = setup(companion, workspace)
    old = start_chat(companion, window)
    send(old, f"sneak {path} after")
    wait_turn(old)
    (card,) = [p for p in control.phantoms(old) if "Edit quietly" in p["content"]]
    control.click_link(old, "diff-0", card["key"])  # the "applied without review" view
    (session,) = _session.write(_state.host())  # hot exit, as Sublime quits
    saved = _session.saved_buffers(session)
    assert len([b for b in saved if "sneak" in b.get("contents", "")]) == 1  # the transcript is in the file
    companion.unload()  # the old plugin host ends (its chats' agents stop)
    control.pump_until(lambda: not loop_threads(), CEILING, "the loop thread to end")
    for view in window.views():
        control.close_tab(view)
    restored = control.restore_views(window, saved)  # the next start brings the tabs back
    # the chat, its "applied without review" view and the turn's change-set tab
    assert len(restored) == 3 and all(v.is_valid() for v in restored)
    companion.load()
    companion.ready(window)
    control.settle()
    assert not any(v.is_valid() for v in restored)  # the dead chat, its diff and its change set are closed
    assert any("Continue Last Chat" in m for m in control.status_messages())
    new = start_chat(companion, window)
    chat = chat_of(new)
    (pid,) = agent_pids(new)
    stale = window.new_file()  # a view claiming the new chat's id (a copy of its settings)
    stale.settings().set("gemini_companion.chat", new.settings().get("gemini_companion.chat"))
    control.close_tab(stale)
    control.settle()
    assert not chat.ended and psutil.pid_exists(pid)  # only closing the chat's own view stops it
    send(new, "stream 1")
    wait_turn(new)
    assert "chunk 0" in text(new)


def test_line_commands_never_change_or_move_the_transcript_and_its_prompt_line(
    companion: Companion, workspace: str
) -> None:
    view, panel, before = new_chat(companion, workspace)
    control.type_text(view, "first")
    control.press_keys(view, "shift+enter")
    control.type_text(view, "second")
    first_line = panel.input_start + 1
    on_first = [
        ("indent", None),
        ("toggle_comment", {"block": False}),
        ("duplicate_line", None),
        ("swap_line_down", None),
        ("run_macro_file", {"file": "res://Packages/Default/Delete Line.sublime-macro"}),
        ("run_macro_file", {"file": "res://Packages/Default/Delete to Hard BOL.sublime-macro"}),
    ]
    for command, args in on_first:
        control.select(view, first_line)
        view.run_command(command, args)
        assert transcript(view) == before, command
        assert panel.prompt_text() == "first\nsecond", command
    control.select(view, view.size())  # the prompt's second line
    view.run_command("swap_line_up")
    assert transcript(view) == before and panel.prompt_text() == "first\nsecond"
    view.run_command("indent")  # on the prompt's own line, as usual
    assert panel.prompt_text() == "first\n\tsecond"
    control.select(view, first_line)
    view.run_command("join_lines")
    assert transcript(view) == before and panel.prompt_text() == "first second"


def test_a_clone_of_the_chat_is_read_only_and_closing_it_leaves_the_agent_running(
    companion: Companion, workspace: str
) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    chat = chat_of(view)
    (pid,) = agent_pids(view)
    clone = control.clone_view(view)
    assert clone.settings().get("gemini_companion.chat") == view.settings().get("gemini_companion.chat")
    before = text(view)
    control.select(clone, clone.size())
    control.type_text(clone, "typed in the clone")
    control.press_keys(clone, "enter")
    assert text(view) == before and chat_of(clone) is None
    send(view, "stream 3")  # the chat's offsets are intact: the reply lands before the prompt
    wait_turn(view)
    assert "## You\n\nstream 3\n" in transcript(view) and text(view).endswith("\n\n❯ ")
    control.close_tab(clone)
    control.settle()
    assert not chat.ended and psutil.pid_exists(pid)
    control.close_tab(view)
    control.pump_until(lambda: not psutil.pid_exists(pid), CEILING, "the agent to stop with the chat's own tab")


def test_a_chat_dragged_into_another_window_follows_its_tab(companion: Companion, workspace: str) -> None:
    path = write(workspace, "quiet.txt", "before\n")
    first = setup(companion, workspace)
    view = start_chat(companion, first)
    second = control.new_window([workspace])
    companion.ready(second)
    control.drag_to_window(view, second)
    assert view.window() == second
    chats = pkg("sublime_editor.chat.sessions")
    assert chats.target(second) is chat_of(view) and chats.target(first) is None
    send(view, f"sneak {path} after")
    wait_turn(view)
    (card,) = [p for p in control.phantoms(view) if "Edit quietly" in p["content"]]
    control.click_link(view, "diff-0", card["key"])
    diff = second.active_view()
    assert diff is not None and diff.name() == "quiet.txt (applied without review)"  # in the window it is in now
    other = control.open_file(second, write(workspace, "a.txt", "a\n"))
    chat_of(view).panel.focus_prompt()
    assert second.active_view() == view and other.is_valid()

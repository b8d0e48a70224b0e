"""The change-set tab (issue #30) in the fake Sublime, with the scripted ACP agent and real files:
what a turn changed, listed with who made it; each file reviewed against its checkpoint, a hunk
reverted through Sublime's own `revert_modification`, Apply / Revert / Revert All with exact bytes,
and refusals that write nothing when a file changed since it was shown or has unsaved changes."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import pytest
import sublime

from tests.sublime_editor.conftest import Companion, loop_threads, write
from tests.sublime_editor.test_chat import (
    CEILING,
    prompts_file,
    recorded,
    review_proposal,
    scripted,
    send,
    setup,
    start_chat,
    text,
    wait_turn,
)
from tests.sublime_fake import control

TAB = "gemini_companion.change_set"
BANNER = "gemini_companion.banner"


def put(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def a_turn(
    companion: Companion, workspace: str, during: Callable[[], None], agents: list[dict[str, Any]] | None = None
) -> tuple[sublime.Window, sublime.View]:
    """A chat turn during which `during` changes files (the agent waits on a permission meanwhile,
    after its checkpoint); returns the window and the change-set tab the turn's end opens."""
    window = setup(companion, workspace, agents)
    chat = start_chat(companion, window)
    send(chat, "run")
    (card,) = control.pump_until(
        lambda: [p for p in control.phantoms(chat) if "asks" in p["content"]], CEILING, "the permission card"
    )
    during()
    control.click_link(chat, "option-0", card["key"])
    wait_turn(chat)
    tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
    control.pump_until(lambda: "- " in text(tab), CEILING, "the change set in the tab")
    assert window.active_view() == chat  # the tab opens beside the chat; the prompt keeps the focus
    return window, tab


def tab_of(window: sublime.Window) -> sublime.View | None:
    return next((v for v in window.views() if v.settings().get(TAB) is not None), None)


def row_link(tab: sublime.View, what: str, name: str) -> str:
    rows = [line for line in text(tab).splitlines() if line.startswith("- ")]
    (index,) = [i for i, line in enumerate(rows) if f"  {name}  " in line]
    return f"{what}:{index}"


def open_review(window: sublime.Window, tab: sublime.View, name: str) -> sublime.View:
    control.click_link(tab, row_link(tab, "review", name), "gemini_companion.change_set.rows")
    return control.pump_until(
        lambda: next((v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"), None),
        CEILING,
        "the file's review",
    )


def wait_tab(tab: sublime.View, words: str) -> str:
    return control.pump_until(lambda: text(tab) if words in text(tab) else None, CEILING, words)


def test_the_tab_lists_added_modified_and_deleted_files_with_who_and_whether_reviewed(
    companion: Companion, workspace: str
) -> None:
    changed = write(workspace, "changed.txt", "one\n")
    gone = write(workspace, "gone.txt", "bye\n")

    def during() -> None:
        write(workspace, "changed.txt", "two\n")
        os.remove(gone)
        os.makedirs(os.path.join(workspace, "sub"))
        write(workspace, os.path.join("sub", "new.txt"), "new\n")

    _window, tab = a_turn(companion, workspace, during)
    rows = [line for line in text(tab).splitlines() if line.startswith("- ")]
    assert rows == [
        "- modified  changed.txt  +1 -1  by outside the agent  not reviewed",
        "- deleted   gone.txt  +0 -1  by outside the agent  not reviewed",
        f"- added     {os.path.join('sub', 'new.txt')}  +1 -0  by outside the agent  not reviewed",
    ], rows
    assert "3 files (1 added, 1 modified, 1 deleted)" in text(tab)
    assert os.path.exists(changed)


def test_a_hunk_reverted_with_revert_modification_then_apply_writes_exact_bytes(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    path = os.path.join(workspace, "lines.txt")
    put(path, b"a\r\nb\r\nc\r\nd\r\ne\r\n")
    record = prompts_file(tmp_path)
    agents = [scripted(env={"PROMPTS_FILE": record})]
    window, tab = a_turn(companion, workspace, lambda: put(path, b"A\r\nb\r\nc\r\nd\r\nE\r\n"), agents)
    proposal = open_review(window, tab, "lines.txt")
    assert text(proposal) == "A\nb\nc\nd\nE\n"
    assert control.reference_document(proposal) == "a\nb\nc\nd\ne\n"  # the checkpoint: the turn's hunks
    (banner,) = control.phantoms(proposal, BANNER)
    assert "Revert hunk" in banner["content"] and "Apply" in banner["content"]
    control.select(proposal, 0)
    assert control.press_keys(proposal, "ctrl+alt+z") == "revert_modification"
    assert text(proposal) == "a\nb\nc\nd\nE\n"  # the first hunk reverted, the second kept
    control.click_link(proposal, "apply", BANNER)
    wait_tab(tab, "applied")
    assert read(path) == b"a\r\nb\r\nc\r\nd\r\nE\r\n"
    assert not proposal.is_valid()
    control.click_link(tab, row_link(tab, "revert", "lines.txt"), "gemini_companion.change_set.rows")
    wait_tab(tab, "Reverted 1 file")  # the applied version is the turn's now: not refused as someone else's
    assert read(path) == b"a\r\nb\r\nc\r\nd\r\ne\r\n"
    chat = window.active_view()
    assert chat is not None
    send(chat, "next")  # the agent is told which lines of its version are gone
    wait_turn(chat)
    sent = recorded(record)[-1]
    assert f"In {os.path.realpath(path)}, lines 1 of your version were reverted; the rest of your change stays." in sent


def test_revert_of_a_file_and_revert_all_give_the_checkpoints_bytes(companion: Companion, workspace: str) -> None:
    first, second = os.path.join(workspace, "first.txt"), os.path.join(workspace, "second.bin")
    put(first, b"one\r\n")
    put(second, b"\x00\x01binary")
    gone = write(workspace, "gone.txt", "bye\n")

    def during() -> None:
        put(first, b"uno\r\n")
        put(second, b"\x00\x02changed")
        os.remove(gone)
        write(workspace, "added.txt", "new\n")

    _window, tab = a_turn(companion, workspace, during)
    control.click_link(tab, row_link(tab, "revert", "first.txt"), "gemini_companion.change_set.rows")
    wait_tab(tab, "Reverted 1 file")
    assert read(first) == b"one\r\n"
    assert read(second) == b"\x00\x02changed"  # the others are not touched
    control.click_link(tab, "revert-all", "gemini_companion.change_set.header")
    wait_tab(tab, "Reverted 3 files")
    assert read(second) == b"\x00\x01binary"
    assert read(gone) == b"bye\n"
    assert not os.path.exists(os.path.join(workspace, "added.txt"))
    assert read(first) == b"one\r\n"


def test_a_file_changed_after_its_review_opened_is_refused_and_nothing_is_written(
    companion: Companion, workspace: str
) -> None:
    path = write(workspace, "late.txt", "one\n")
    window, tab = a_turn(companion, workspace, lambda: write(workspace, "late.txt", "two\n"))
    proposal = open_review(window, tab, "late.txt")
    write(workspace, "late.txt", "someone else's\n")
    control.select(proposal, 0)
    control.press_keys(proposal, "ctrl+alt+z")
    control.click_link(proposal, "apply", BANNER)
    control.pump_until(
        lambda: "changed on disk" in control.phantoms(proposal, BANNER)[0]["content"], CEILING, "the refusal"
    )
    assert read(path) == b"someone else's\n"
    control.click_link(tab, row_link(tab, "revert", "late.txt"), "gemini_companion.change_set.rows")
    assert "--revert" not in wait_tab(tab, "changed since the turn ended")  # Sublime's words, not the CLI's
    assert read(path) == b"someone else's\n"


def test_an_open_buffer_of_a_reverted_file_is_updated_when_clean_and_refused_when_dirty(
    companion: Companion, workspace: str
) -> None:
    clean = write(workspace, "clean.txt", "one\n")
    dirty = write(workspace, "dirty.txt", "one\n")

    def during() -> None:
        write(workspace, "clean.txt", "two\n")
        write(workspace, "dirty.txt", "two\n")

    window, tab = a_turn(companion, workspace, during)
    clean_view, dirty_view = window.open_file(clean), window.open_file(dirty)
    control.pump_until(lambda: not clean_view.is_loading() and not dirty_view.is_loading(), CEILING, "loading")
    assert text(clean_view) == "two\n"
    control.select(dirty_view, dirty_view.size())
    control.type_text(dirty_view, "mine\n")
    control.click_link(tab, row_link(tab, "revert", "dirty.txt"), "gemini_companion.change_set.rows")
    wait_tab(tab, "dirty.txt has unsaved changes")
    assert text(dirty_view) == "two\nmine\n" and read(dirty) == b"two\n"
    control.click_link(tab, row_link(tab, "revert", "clean.txt"), "gemini_companion.change_set.rows")
    wait_tab(tab, "Reverted 1 file")
    assert read(clean) == b"one\n"
    assert text(clean_view) == "one\n" and not clean_view.is_dirty()
    control.click_link(tab, "revert-all", "gemini_companion.change_set.header")
    wait_tab(tab, "dirty.txt has unsaved changes")
    assert text(dirty_view) == "two\nmine\n" and read(dirty) == b"two\n"


def test_keep_all_writes_nothing_and_review_turn_changes_reopens_the_tab(companion: Companion, workspace: str) -> None:
    path = write(workspace, "kept.txt", "one\n")
    window, tab = a_turn(companion, workspace, lambda: write(workspace, "kept.txt", "two\n"))
    control.click_link(tab, "keep-all", "gemini_companion.change_set.header")
    wait_tab(tab, "kept")
    assert read(path) == b"two\n"
    tab.close()
    assert control.run_from_palette(window, "gemini_companion_review_turn_changes")
    reopened = control.pump_until(lambda: tab_of(window), CEILING, "the tab again")
    wait_tab(reopened, "kept.txt")


# What the main thread opens or lists while `_watched` is a list (an audit hook sees every open()
# and os.scandir()): neither a checkpoint nor the tab's reads and writes may happen there.
_watched: list[str] | None = None


def _record_main_thread_io(event: str, args: tuple[object, ...]) -> None:
    if _watched is None or event not in ("open", "os.scandir", "os.listdir") or not args:
        return
    try:
        on_main = control.host().on_main_thread()
    except RuntimeError:
        return
    if on_main and isinstance(args[0], (str, bytes)):
        _watched.append(os.fsdecode(args[0]))


sys.addaudithook(_record_main_thread_io)


def test_no_checkpoint_read_or_write_of_the_tab_happens_on_the_main_thread(
    companion: Companion, workspace: str
) -> None:
    global _watched
    first, second = write(workspace, "first.txt", "a\nb\n"), write(workspace, "second.txt", "one\n")

    def during() -> None:  # the test's own writes (another program's) are not the package's
        global _watched
        paused, _watched = _watched, None
        write(workspace, "first.txt", "A\nb\nC\n")
        write(workspace, "second.txt", "two\n")
        _watched = paused

    _watched = []
    try:
        window, tab = a_turn(companion, workspace, during)
        proposal = open_review(window, tab, "first.txt")
        control.select(proposal, 0)
        control.press_keys(proposal, "ctrl+alt+z")
        control.click_link(proposal, "apply", BANNER)
        wait_tab(tab, "Applied first.txt")
        control.click_link(tab, "revert-all", "gemini_companion.change_set.header")
        wait_tab(tab, "Reverted 1 file")
        seen, _watched = _watched, None
    finally:
        _watched = None
    assert read(first) == b"a\nb\nC\n" and read(second) == b"one\n"
    cache = sublime.cache_path()
    touched = [p for p in seen if p.startswith((workspace, os.path.realpath(workspace), cache))]
    assert touched == [], touched


def test_a_change_set_tab_an_earlier_load_left_is_closed_when_the_window_serves_again(
    companion: Companion, workspace: str
) -> None:
    write(workspace, "left.txt", "one\n")
    window, tab = a_turn(companion, workspace, lambda: write(workspace, "left.txt", "two\n"))
    companion.unload()  # a reload (or a restart's hot exit) keeps the scratch tab, not its change set
    control.pump_until(lambda: not loop_threads(), CEILING, "the loop thread to end")
    assert tab.is_valid()
    companion.load()
    companion.ready(window)
    control.pump_until(lambda: not tab.is_valid(), CEILING, "the old tab to close")


def test_a_file_the_agent_wrote_other_bytes_to_after_your_accept_is_changed_after_your_review(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    """Issue 36: the agent (edit_agent.py) is allowed an edit you accepted, then writes other bytes
    itself and reports the call completed: the chat warns, the tab lists it not reviewed."""
    path = write(workspace, "notes.txt", "hello\n")
    edit = {"toolCallId": "t1", "kind": "edit", "content": [{"diff_of_read": ["hello", "hello world"], "path": path}]}
    steps = [
        {"read": path},
        {"ask": edit},
        {"own": path, "bytes": "something else\n"},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}},
    ]
    script = os.path.join(str(tmp_path), "script.json")
    with open(script, "w", encoding="utf-8") as handle:
        json.dump(steps, handle)
    agent = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "acp", "edit_agent.py")
    window = setup(companion, workspace, [{"name": "Edits", "command": sys.executable, "args": [agent, script]}])
    chat = start_chat(companion, window, "Edits")
    send(chat, "edit")
    control.click_link(review_proposal(window), "accept", BANNER)
    wait_turn(chat)
    tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
    wait_tab(tab, "- ")
    rows = [line for line in text(tab).splitlines() if line.startswith("- ")]
    assert rows == ["- modified  notes.txt  +1 -1  by outside the agent  not reviewed  changed after your review"]
    assert "changed after your review" in text(chat)
    assert read(path) == b"something else\n"


@pytest.mark.parametrize("then", ["nothing", "rename"])
def test_a_write_through_the_open_buffer_is_reviewed_until_the_agent_renames_its_bytes_over_it(
    companion: Companion, workspace: str, tmp_path: Any, then: str
) -> None:
    """fs/write_text_file into a file open in Sublime: the editor saves its buffer (its own line
    endings), which stays reviewed; the agent's own file renamed over it right after is not taken
    for the editor's save (issue 36: nothing is read back after the write)."""
    path = write(workspace, "open.txt", "one\r\ntwo\r\n")
    edit = {"toolCallId": "t1", "kind": "edit", "content": [{"diff_of_read": ["two", "2"], "path": path}]}
    steps: list[dict[str, Any]] = [
        {"read": path},
        {"ask": edit},
        {"write": path, "content": {"read_with": ["two", "2"]}},
    ]
    if then == "rename":
        steps.append({"own": path, "bytes": "the agent's own\n", "how": "rename"})
    script = os.path.join(str(tmp_path), "script.json")
    with open(script, "w", encoding="utf-8") as handle:
        json.dump(steps, handle)
    agent = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "acp", "edit_agent.py")
    window = setup(companion, workspace, [{"name": "Edits", "command": sys.executable, "args": [agent, script]}])
    control.open_file(window, path)
    chat = start_chat(companion, window, "Edits")
    send(chat, "edit")
    control.click_link(review_proposal(window), "accept", BANNER)
    wait_turn(chat)
    tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
    wait_tab(tab, "- ")
    rows = [line for line in text(tab).splitlines() if line.startswith("- ")]
    if then == "nothing":
        assert read(path) == b"one\r\n2\r\n"
        assert rows == ["- modified  open.txt  +1 -1  by Edits  reviewed"], rows
    else:
        assert read(path) == b"the agent's own\n"
        assert rows == ["- modified  open.txt  +1 -2  by outside the agent  not reviewed  changed after your review"]

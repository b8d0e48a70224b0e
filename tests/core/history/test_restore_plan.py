"""Restore the workspace to the checkpoint before any prompt of a chat (issue 30, "Restore
checkpoint"): exact bytes back, a file the user changed after the agent offered as a conflict with
both texts and never lost, the restore itself undoable, refused with nothing written when a file
changed after the plan was shown; and the note the agent's next prompt carries."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import pytest

from companion.core.history.checkpoints import Limits
from companion.core.history.restore import RestoreRefused
from companion.core.history.turns import NoTurn, Turns
from tests.core.history.test_checkpoints import cache, read, ws

__all__ = ["cache", "ws"]  # fixtures, found by pytest here

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="modes and symbolic links are POSIX here")
OLD_NS = 1_600_000_000 * 10**9  # an mtime long before any checkpoint (not within RACY_NS)


def write(path: str, data: str, mode: int = 0o644) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data.encode())
    os.chmod(path, mode)
    os.utime(path, ns=(OLD_NS, OLD_NS))


def state(ws: str) -> dict[str, tuple[str, object, int]]:
    """Every path under `ws`: kind, bytes or link text, mode bits."""
    found: dict[str, tuple[str, object, int]] = {}
    for folder, dirs, files in os.walk(ws):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            if os.path.islink(path):
                found[path] = ("link", os.readlink(path), 0)
            elif os.path.isdir(path):
                found[path] = ("dir", None, 0)
            else:
                found[path] = ("file", read(path), st.st_mode & 0o777)
    return found


def turn(turns: Turns, change: Callable[[], object]) -> None:
    turns.begin()
    change()
    turns.end("Scripted", {})


def at(ws: str, *names: str) -> str:
    return os.path.join(ws, *names)


def first_turn(ws: str) -> None:
    write(at(ws, "a.txt"), "agent 1\n")
    os.chmod(at(ws, "run.sh"), 0o755)
    os.unlink(at(ws, "gone.txt"))
    write(at(ws, "sub", "new.txt"), "created\n")
    os.unlink(at(ws, "link"))
    os.symlink("run.sh", at(ws, "link"))


def three_turns(cache: str, ws: str) -> tuple[Turns, dict[str, tuple[str, object, int]]]:
    write(at(ws, "a.txt"), "original\n")
    write(at(ws, "run.sh"), "echo hi\n")
    write(at(ws, "gone.txt"), "deleted by the agent\n")
    os.symlink("a.txt", at(ws, "link"))
    before = state(ws)
    turns = Turns(cache, [ws], Limits())
    turn(turns, lambda: first_turn(ws))
    turn(turns, lambda: write(at(ws, "a.txt"), "agent 2\n"))
    turn(turns, lambda: (write(at(ws, "b.txt"), "agent 3\n"), os.unlink(at(ws, "sub", "new.txt"))))
    return turns, before


@posix_only
def test_restore_to_prompt_one_of_three_gives_back_the_exact_workspace(cache: str, ws: str) -> None:
    turns, before = three_turns(cache, ws)
    assert [p.label for p in turns.points()] == ["prompt 1", "prompt 2", "prompt 3"]
    plan = turns.plan(turns.prompt_point(1))
    assert plan.conflicts == []
    assert sorted((c.change, os.path.basename(c.path)) for c in plan.changes) == [
        ("added", "gone.txt"),
        ("deleted", "b.txt"),
        ("modified", "a.txt"),
        ("modified", "link"),
        ("modified", "run.sh"),
    ]
    turns.apply(plan)
    assert state(ws) == before


@posix_only
def test_a_file_the_user_edited_after_the_agent_is_a_conflict_and_keep_mine_keeps_it(cache: str, ws: str) -> None:
    turns, before = three_turns(cache, ws)
    with open(at(ws, "a.txt"), "ab") as handle:
        handle.write(b"the user's own line\r\n\xff")
    mine = read(at(ws, "a.txt"))
    plan = turns.plan(turns.prompt_point(1))
    assert [(c.path, c.checkpoint_text, c.in_buffer) for c in plan.conflicts] == [
        (at(ws, "a.txt"), "original\n", False)
    ]
    assert "the user's own line" in (plan.conflicts[0].current_text or "")
    assert any("a.txt" in line and "CONFLICT" in line for line in plan.lines())
    turns.apply(plan, take=())
    assert read(at(ws, "a.txt")) == mine
    assert state(ws) == {**before, at(ws, "a.txt"): ("file", mine, 0o644)}


@posix_only
def test_take_the_checkpoint_restores_a_conflicting_file(cache: str, ws: str) -> None:
    turns, before = three_turns(cache, ws)
    write(at(ws, "a.txt"), "the user's version\n")
    plan = turns.plan(turns.prompt_point(1))
    turns.apply(plan, take=[at(ws, "a.txt")])
    assert state(ws) == before


def test_an_open_buffer_with_unsaved_text_is_a_conflict_with_its_text(cache: str, ws: str) -> None:
    write(at(ws, "a.txt"), "original\n")
    turns = Turns(cache, [ws])
    turn(turns, lambda: write(at(ws, "a.txt"), "agent\n"))
    plan = turns.plan(turns.prompt_point(1), buffers={at(ws, "a.txt"): "agent\ntyped, not saved\n"})
    assert [(c.checkpoint_text, c.current_text, c.in_buffer) for c in plan.conflicts] == [
        ("original\n", "agent\ntyped, not saved\n", True)
    ]
    clean = turns.plan(turns.prompt_point(1), buffers={at(ws, "a.txt"): "agent\n"})
    assert clean.conflicts == []  # the buffer holds what the disk holds: nothing of the user's to lose


@posix_only
def test_a_restore_is_undone_by_restoring_its_before_restore_point(cache: str, ws: str) -> None:
    turns, _before = three_turns(cache, ws)
    write(at(ws, "a.txt"), "the user's version\n")
    pre_restore = state(ws)
    undo = turns.apply(turns.plan(turns.prompt_point(1)), take=[at(ws, "a.txt")])
    assert undo.label == "before restore to prompt 1"
    assert turns.points()[-1] == undo
    again = turns.plan(undo)
    assert again.conflicts == []  # the restore's own writes are not someone else's change
    turns.apply(again)
    assert state(ws) == pre_restore


@posix_only
def test_a_file_changed_between_the_plan_and_the_restore_refuses_with_nothing_written(cache: str, ws: str) -> None:
    turns, _before = three_turns(cache, ws)
    plan = turns.plan(turns.prompt_point(1))
    write(at(ws, "b.txt"), "written after the plan was shown\n")
    now = state(ws)
    with pytest.raises(RestoreRefused) as refused:
        turns.apply(plan)
    assert str(refused.value) == (
        f"{at(ws, 'b.txt')} changed after the restore plan was shown, so nothing was written; "
        "restore again to see the new plan."
    )
    assert state(ws) == now
    assert [p.label for p in turns.points()] == ["prompt 1", "prompt 2", "prompt 3"]  # no undo point for nothing


def test_the_prompts_checkpoints_are_kept_while_the_chat_lives(cache: str, ws: str) -> None:
    turns = Turns(cache, [ws])
    turns.checkpointer.keep = 2
    write(at(ws, "a.txt"), "0\n")
    for n in range(1, 6):
        turn(turns, lambda n=n: write(at(ws, "a.txt"), f"{n}\n"))
    turns.apply(turns.plan(turns.prompt_point(1)))
    assert read(at(ws, "a.txt")) == b"0\n"
    assert Turns(cache, [ws]).points()[0].label == "prompt 1"  # the record shows them to `changes` too


def test_there_is_no_restore_while_a_turn_runs_nor_of_a_prompt_that_never_was(cache: str, ws: str) -> None:
    turns = Turns(cache, [ws])
    turn(turns, lambda: write(at(ws, "a.txt"), "1\n"))
    with pytest.raises(NoTurn, match="there is no prompt 2 to restore"):
        turns.prompt_point(2)
    plan = turns.plan(turns.prompt_point(1))
    turns.begin()
    with pytest.raises(RestoreRefused, match="a turn is running"):
        turns.plan(turns.prompt_point(1))
    with pytest.raises(RestoreRefused, match="a turn is running"):
        turns.apply(plan)  # a prompt sent after the plan was shown
    assert read(at(ws, "a.txt")) == b"1\n"


def test_the_next_prompt_carries_a_note_of_what_was_reverted_once(cache: str, ws: str) -> None:
    write(at(ws, "a.txt"), "original\n")
    turns = Turns(cache, [ws])
    turn(turns, lambda: (write(at(ws, "a.txt"), "agent\n"), write(at(ws, "b.txt"), "new\n")))
    turns.revert([at(ws, "b.txt")])
    turns.note_reverted([at(ws, "a.txt")], hunks={at(ws, "a.txt"): [(1, 1)]})
    other_chat = Turns(cache, [ws])
    assert other_chat.take_notes() == []  # notes are for the chat whose turn was reverted
    notes = turns.take_notes()
    assert len(notes) == 2
    assert f"these files were reverted to how they were before your last turn: {at(ws, 'b.txt')}." in notes[0]
    assert f"In {at(ws, 'a.txt')}, lines 1 of your version were reverted" in notes[1]
    assert turns.take_notes() == []


def test_a_revert_by_the_changes_command_reaches_the_running_chats_next_prompt(cache: str, ws: str) -> None:
    write(at(ws, "a.txt"), "original\n")
    chat = Turns(cache, [ws])
    turn(chat, lambda: write(at(ws, "a.txt"), "agent\n"))
    Turns(cache, [ws]).revert(None)  # `changes --restore`, another process
    assert read(at(ws, "a.txt")) == b"original\n"
    (note,) = chat.take_notes()
    assert f"reverted to how they were before your last turn: {at(ws, 'a.txt')}." in note


def test_a_restore_leaves_a_note_naming_what_was_restored_and_what_the_user_kept(cache: str, ws: str) -> None:
    write(at(ws, "a.txt"), "original\n")
    write(at(ws, "b.txt"), "original\n")
    turns = Turns(cache, [ws])
    turn(turns, lambda: (write(at(ws, "a.txt"), "agent\n"), write(at(ws, "b.txt"), "agent\n")))
    write(at(ws, "b.txt"), "the user's\n")
    turns.apply(turns.plan(turns.prompt_point(1)))
    (note,) = turns.take_notes()
    assert f"restored to how they were before prompt 1: {at(ws, 'a.txt')}." in note
    assert f"The user kept their own later version of: {at(ws, 'b.txt')}." in note

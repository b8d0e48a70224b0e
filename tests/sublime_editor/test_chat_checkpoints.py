"""Checkpoints in Sublime chats (issue #30): one before every prompt, the turn's change set after
it, with the scripted ACP agent (`chat_agent.py`) in the fake Sublime and real files. Every
checkpoint runs on a worker thread: never Sublime's main thread, never the loop thread."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.sublime_editor.conftest import Companion, pkg, write
from tests.sublime_editor.test_chat import (
    CEILING,
    chat_of,
    review_proposal,
    scripted,
    send,
    setup,
    start_chat,
    text,
    wait_turn,
)
from tests.sublime_fake import control

LOOP_THREAD = "gemini-companion-loop"


class Watched:
    """Turns.begin/end wrapped: the thread each ran on, and a gate a test may close; and the thread
    of every Checkpointer.take (the chat's first checkpoint, at open, is one but no prompt's)."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.take_threads: list[str] = []
        self.gate = threading.Event()
        self.gate.set()
        self.fail_from: int | None = None  # the call number from which begin raises

    def wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def watched(turns: Any, *args: Any) -> Any:
            on_main = control.host().on_main_thread()
            thread = "main" if on_main else threading.current_thread().name
            if name == "take":
                self.take_threads.append(thread)
                return real(turns, *args)
            self.threads.append(thread)
            self.gate.wait(CEILING)
            if name == "begin" and self.fail_from is not None and len(self.threads) >= self.fail_from:
                raise OSError(28, "No space left on device")
            return real(turns, *args)

        return watched


@pytest.fixture
def watched(companion: Companion, workspace: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], Watched]]:
    """Call after the package is loaded (setup): wraps the loaded package's Turns."""
    found = Watched()

    def install() -> Watched:
        turns = pkg("core.history.turns").Turns
        for name in ("begin", "end"):
            monkeypatch.setattr(turns, name, found.wrap(name, getattr(turns, name)))
        checkpointer = pkg("core.history.checkpoints").Checkpointer
        monkeypatch.setattr(checkpointer, "take", found.wrap("take", checkpointer.take))
        return found

    yield install


def real(path: str) -> str:
    return os.path.realpath(path)


def test_an_edit_the_agent_made_without_asking_is_its_own_and_not_reviewed_all_off_the_main_thread(
    companion: Companion, workspace: str, watched: Callable[[], Watched]
) -> None:
    sneaked = write(workspace, "sneaked.txt", "a\n")
    window = setup(companion, workspace)
    calls = watched()
    view = start_chat(companion, window)
    chat = chat_of(view)
    send(view, "hello")
    wait_turn(view)
    send(view, f"sneak {sneaked} b")
    wait_turn(view)
    control.pump_until(lambda: chat.last_changes, CEILING, "the change set")
    (change,) = chat.last_changes
    assert (change.path, change.change, change.by, change.reviewed) == (real(sneaked), "modified", "Script", False)
    assert "This turn changed 1 file:" in text(view)
    # begin + end per turn (the first checkpoint, at open, is no prompt's: prompt N is the Nth begin,
    # which Restore checkpoint counts on); none of them, nor any checkpoint, on the main or loop thread
    assert len(calls.threads) == 4, calls.threads
    assert len(calls.take_threads) == 5, calls.take_threads  # at open, then one per begin and end
    assert not {"main", LOOP_THREAD} & {*calls.threads, *calls.take_threads}, (calls.threads, calls.take_threads)


def test_the_first_turns_change_set_has_every_file_with_who_and_whether_reviewed(
    companion: Companion, workspace: str
) -> None:
    reviewed = write(workspace, "reviewed.txt", "one\n")
    outside = write(workspace, "outside.txt", "x\n")
    gone = write(workspace, "gone.txt", "bye\n")
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    chat = chat_of(view)
    send(view, f"edit {reviewed} two")
    proposal = review_proposal(window)
    write(workspace, "outside.txt", "y\n")
    os.remove(gone)
    added = write(workspace, "new.txt", "new\n")
    control.click_link(proposal, "accept", "gemini_companion.banner")
    wait_turn(view)
    control.pump_until(lambda: chat.last_changes is not None, CEILING, "the change set")
    rows = {(c.path, c.change, c.by, c.reviewed, c.added, c.removed) for c in chat.last_changes}
    assert rows == {
        (real(reviewed), "modified", "Script", True, 1, 1),
        (real(outside), "modified", "outside", False, 1, 1),
        (real(gone), "deleted", "outside", False, 0, 1),
        (real(added), "added", "outside", False, 1, 0),
    }


def test_the_status_bar_says_checkpoint_while_one_is_taken(
    companion: Companion, workspace: str, watched: Callable[[], Watched]
) -> None:
    write(workspace, "a.txt", "a\n")
    window = setup(companion, workspace)
    calls = watched()
    view = start_chat(companion, window)
    chat = chat_of(view)
    control.pump_until(lambda: chat.turns is not None, CEILING, "the first checkpoint")
    control.settle()
    assert "checkpoint…" not in view.get_status("gemini_companion")
    calls.gate.clear()  # the next checkpoint (before the prompt) waits
    send(view, "hello")
    control.pump_until(lambda: "checkpoint…" in view.get_status("gemini_companion"), CEILING, "the status")
    assert "echo: hello" not in text(view)  # the prompt waits for its checkpoint
    calls.gate.set()
    wait_turn(view)
    assert "echo: hello" in text(view)
    assert "checkpoint…" not in view.get_status("gemini_companion")


def test_a_checkpoint_that_fails_warns_once_and_the_chat_goes_on(
    companion: Companion, workspace: str, watched: Callable[[], Watched]
) -> None:
    write(workspace, "a.txt", "a\n")
    window = setup(companion, workspace)
    calls = watched()
    calls.fail_from = 1  # the first (at open) works; the one before the first prompt fails
    view = start_chat(companion, window)
    chat = chat_of(view)
    send(view, "hello")
    wait_turn(view)
    send(view, "again")
    wait_turn(view)
    body = text(view)
    assert "echo: hello" in body and "echo: again" in body
    assert body.count("No checkpoints in this chat from now on") == 1, body
    assert "No space left on device" in body
    assert chat.turns is None


def test_chat_checkpoints_off_takes_none(companion: Companion, workspace: str, watched: Callable[[], Watched]) -> None:
    write(workspace, "a.txt", "a\n")
    control.user_settings("Gemini Companion.sublime-settings", {"agents": [scripted()], "chat_checkpoints": False})
    window = control.new_window([workspace])
    companion.load()
    calls = watched()
    view = start_chat(companion, window)
    send(view, "hello")
    wait_turn(view)
    assert calls.threads == [] and chat_of(view).turns is None

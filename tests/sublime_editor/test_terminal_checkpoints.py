"""Checkpoints for the agents in a terminal (issue #30): Start Checkpoint, then Review Changes Since
Checkpoint in the change-set tab; a file whose review (openDiff, over the window's real server) the
user accepted is the reviewing agent's and reviewed, everything else is "outside"."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable

from tests.sublime_editor.conftest import Companion, ThreadedClient, pkg, write
from tests.sublime_editor.test_change_set import read, row_link, tab_of, wait_tab
from tests.sublime_editor.test_chat import CEILING, review_proposal, text
from tests.sublime_fake import control


def test_changes_since_a_checkpoint_list_reviewed_and_outside_files_and_revert_to_it(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    outside = write(workspace, "outside.txt", "one\n")
    reviewed = write(workspace, "reviewed.txt", "a\n")
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    assert control.run_from_palette(window, "gemini_companion_start_checkpoint")
    points = pkg("sublime_editor.terminal.checkpoints")._points
    control.pump_until(lambda: window.id() in points, CEILING, "the checkpoint")
    write(workspace, "outside.txt", "two\n")  # a shell command in the agent's terminal
    client.open_diff(reviewed, "b\n")
    control.click_link(review_proposal(window), "accept", "gemini_companion.banner")
    client.wait_notification("ide/diffAccepted")
    write(workspace, "reviewed.txt", "b\n")  # the CLI writes what the user accepted
    assert control.run_from_palette(window, "gemini_companion_review_checkpoint_changes")
    tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
    wait_tab(tab, "- ")
    rows = [line for line in text(tab).splitlines() if line.startswith("- ")]
    assert rows == [
        "- modified  outside.txt  +1 -1  by outside the agent  not reviewed",
        "- modified  reviewed.txt  +1 -1  by test-client  reviewed",
    ], rows
    control.click_link(tab, row_link(tab, "revert", "outside.txt"), "gemini_companion.change_set.rows")
    wait_tab(tab, "Reverted 1 file")
    assert read(outside) == b"one\n" and read(reviewed) == b"b\n"
    write(workspace, "reviewed.txt", "c\n")  # changed after the change set was shown
    control.click_link(tab, row_link(tab, "revert", "reviewed.txt"), "gemini_companion.change_set.rows")
    wait_tab(tab, "changed since")
    assert read(reviewed) == b"c\n"
    assert os.path.exists(outside)


def test_review_changes_without_a_checkpoint_says_to_start_one(companion: Companion, workspace: str) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_review_checkpoint_changes")
    assert tab_of(window) is None


def test_a_terminal_checkpoint_outlives_a_chats_pruning_and_reverts_to_its_exact_bytes(
    companion: Companion, workspace: str
) -> None:
    original = b"terminal \x00\xff start\r\n"  # binary: Revert takes the whole file
    path = os.path.join(workspace, "kept.bin")
    with open(path, "wb") as handle:
        handle.write(original)
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_start_checkpoint")
    points = pkg("sublime_editor.terminal.checkpoints")._points
    control.pump_until(lambda: window.id() in points, CEILING, "the checkpoint")
    # A chat in the same folders (the store its Sublime chat uses) runs more turns than are kept,
    # each rewriting the file: its pruning is what once took the terminal checkpoint's content.
    config = pkg("sublime_editor.chat.history.checkpoints").config(window)
    turns = pkg("core.history.turns").Turns(config.cache_folder, window.folders(), config.limits)
    keep = pkg("core.history.checkpoint_store").KEEP_CHECKPOINTS
    for n in range(keep + 2):
        write(workspace, "kept.bin", f"chat turn {n}\n")
        turns.begin()
        write(workspace, "kept.bin", f"chat turn {n} done\n")
        turns.end("Scripted", {})
    assert len(turns.store.point_ids()) > keep  # the chat's prompts are pinned too

    assert control.run_from_palette(window, "gemini_companion_review_checkpoint_changes")
    tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
    wait_tab(tab, "- ")
    rows = [line for line in text(tab).splitlines() if line.startswith("- ")]
    assert rows == ["- modified  kept.bin  binary  by outside the agent  not reviewed"], rows
    control.click_link(tab, "revert-all", "gemini_companion.change_set.header")
    wait_tab(tab, "Reverted 1 file")
    assert read(path) == original


def unpinned() -> None:
    """Wait for the let-go checkpoints' pin files to be removed (on threads of their own)."""
    for thread in threading.enumerate():
        if thread.name == "gemini-companion-unpin":
            thread.join()


def test_a_replaced_terminal_checkpoint_is_no_longer_kept_from_pruning(companion: Companion, workspace: str) -> None:
    write(workspace, "a.txt", "first checkpoint's\n")
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    points = pkg("sublime_editor.terminal.checkpoints")._points
    assert control.run_from_palette(window, "gemini_companion_start_checkpoint")
    first = control.pump_until(lambda: points.get(window.id()), CEILING, "the first checkpoint")
    write(workspace, "a.txt", "second checkpoint's\n")
    assert control.run_from_palette(window, "gemini_companion_start_checkpoint")
    control.pump_until(lambda: points.get(window.id()) not in (None, first), CEILING, "the second checkpoint")
    unpinned()
    config = pkg("sublime_editor.chat.history.checkpoints").config(window)
    turns = pkg("core.history.turns").Turns(config.cache_folder, window.folders(), config.limits)
    for n in range(pkg("core.history.checkpoint_store").KEEP_CHECKPOINTS + 2):
        write(workspace, "a.txt", f"chat turn {n}\n")
        turns.begin()
        turns.end("Scripted", {})
    store = turns.store
    kept = {store.read_blob(d) for d in os.listdir(store.blobs) if not d.startswith(".")}
    assert b"second checkpoint's\n" in kept  # the window's checkpoint now
    assert b"first checkpoint's\n" not in kept  # replaced: its content is not kept forever


def test_a_closed_windows_terminal_checkpoint_is_let_go_at_the_next_start(companion: Companion, workspace: str) -> None:
    write(workspace, "a.txt", "closed window's\n")
    closing = control.new_window([workspace])
    companion.load()
    companion.ready(closing)
    points = pkg("sublime_editor.terminal.checkpoints")._points
    assert control.run_from_palette(closing, "gemini_companion_start_checkpoint")
    control.pump_until(lambda: closing.id() in points, CEILING, "the first window's checkpoint")
    config = pkg("sublime_editor.chat.history.checkpoints").config(closing)
    control.close_window(closing)
    write(workspace, "a.txt", "open window's\n")
    window = control.new_window([workspace])
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_start_checkpoint")
    control.pump_until(lambda: window.id() in points, CEILING, "the second window's checkpoint")
    unpinned()
    turns = pkg("core.history.turns").Turns(config.cache_folder, window.folders(), config.limits)
    for n in range(pkg("core.history.checkpoint_store").KEEP_CHECKPOINTS + 2):
        write(workspace, "a.txt", f"chat turn {n}\n")
        turns.begin()
        turns.end("Scripted", {})
    store = turns.store
    kept = {store.read_blob(d) for d in os.listdir(store.blobs) if not d.startswith(".")}
    assert b"open window's\n" in kept
    assert b"closed window's\n" not in kept
    assert closing.id() not in points


def test_a_file_the_terminal_agent_wrote_other_bytes_to_after_your_accept_is_not_reviewed(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    """Issue 36: the CLI was sent the accepted text; it wrote other bytes (here: the CRLF file
    rewritten with LF, then a line appended). Reviewed only while the disk holds the accepted text."""
    kept = write(workspace, "kept.txt", "a\r\nb\r\n")
    changed = write(workspace, "changed.txt", "a\r\nb\r\n")
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    assert control.run_from_palette(window, "gemini_companion_start_checkpoint")
    points = pkg("sublime_editor.terminal.checkpoints")._points
    control.pump_until(lambda: window.id() in points, CEILING, "the checkpoint")
    for count, path in enumerate((kept, changed), 1):
        client.open_diff(path, "a\r\nB\r\n")
        control.click_link(review_proposal(window), "accept", "gemini_companion.banner")
        control.pump_until(lambda n=count: len(client.received("ide/diffAccepted")) >= n, CEILING, "the accept")
    with open(kept, "wb") as handle:
        handle.write(b"a\r\nB\r\n")  # the accepted text, as the file is stored
    with open(changed, "wb") as handle:
        handle.write(b"a\nB\nand more\n")
    assert control.run_from_palette(window, "gemini_companion_review_checkpoint_changes")
    tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
    wait_tab(tab, "- ")
    rows = [line for line in text(tab).splitlines() if line.startswith("- ")]
    assert rows == [
        "- modified  changed.txt  +2 -1  by test-client  not reviewed  changed after your review",
        "- modified  kept.txt  +1 -1  by test-client  reviewed",
    ], rows


CHAT_OF_MORE_TURNS_THAN_KEPT = """
import os, sys
from companion.core.history.turns import Turns
cache, ws, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
chat = Turns(cache, [ws])
for n in range(turns):
    with open(os.path.join(ws, "kept.bin"), "w") as handle:
        handle.write(f"chat turn {n}\\n")
    chat.begin()
    with open(os.path.join(ws, "kept.bin"), "w") as handle:
        handle.write(f"chat turn {n} done\\n")
    chat.end("Scripted", {})
print("pruned", flush=True)
"""


def test_a_headless_chat_in_another_process_never_prunes_a_windows_terminal_checkpoint(
    companion: Companion, workspace: str
) -> None:
    """The terminal checkpoint was pinned only in Sublime's memory: a headless chat (another
    process, the same folder and cache) ran more turns than are kept and its prune deleted the
    checkpoint and its content. Now it is pinned in the store's pin files too."""
    original = b"the user's bytes \x00\xff\r\n"
    path = os.path.join(workspace, "kept.bin")
    with open(path, "wb") as handle:
        handle.write(original)
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_start_checkpoint")
    points = pkg("sublime_editor.terminal.checkpoints")._points
    control.pump_until(lambda: window.id() in points, CEILING, "the checkpoint")
    config = pkg("sublime_editor.chat.history.checkpoints").config(window)
    turns = str(pkg("core.history.checkpoint_store").KEEP_CHECKPOINTS + 2)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    child = subprocess.run(
        [sys.executable, "-c", CHAT_OF_MORE_TURNS_THAN_KEPT, config.cache_folder, workspace, turns],
        env={**os.environ, "PYTHONPATH": root},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.stdout == "pruned\n", child.stderr[-2000:]
    point = points[window.id()]
    assert point.before.id in point.checkpointer.store.point_ids()
    assert control.run_from_palette(window, "gemini_companion_review_checkpoint_changes")
    tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
    wait_tab(tab, "- ")
    rows = [line for line in text(tab).splitlines() if line.startswith("- ")]
    assert rows == ["- modified  kept.bin  binary  by outside the agent  not reviewed"], rows
    control.click_link(tab, "revert-all", "gemini_companion.change_set.header")
    wait_tab(tab, "Reverted 1 file")
    assert read(path) == original

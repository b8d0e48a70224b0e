"""Pruning a workspace's checkpoints (companion/core/history/checkpoints.py `Checkpointer.prune`): a living
chat pins the checkpoint before each of its prompts; past `keep` checkpoints, prune keeps those and
their contents, and reads each pinned checkpoint once per Checkpointer, not at every prune. Another
Checkpointer of the same store (a window's terminal checkpoint) pins through `checkpoint_pins`."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from typing import Any

import pytest

from companion.core.history import checkpoint_pins
from companion.core.history.checkpoint_store import CheckpointStore
from companion.core.history.checkpoints import Checkpointer
from companion.core.history.turns import Turns


def write(path: str, data: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(data)


def test_a_living_chats_pinned_prompts_are_read_once_and_keep_their_contents(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    os.makedirs(ws)
    path = os.path.join(ws, "a.txt")
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    turns.checkpointer.keep = 3
    loads: Counter[str] = Counter()
    load_point = turns.store.load_point

    def counted(point_id: str) -> dict[str, Any]:
        loads[point_id] += 1
        return load_point(point_id)

    monkeypatch.setattr(turns.store, "load_point", counted)
    for n in range(10):  # 10 prompts, each with a checkpoint before it and one at its end
        write(path, f"version {n}\n")
        turns.begin()
        write(path, f"version {n} edited\n")
        turns.end("Scripted", {})

    assert len(turns.prompts) == 10
    assert set(turns.prompts) <= set(turns.store.point_ids())  # every prompt still restorable
    # The prompts older than the last 3 checkpoints (after 8, before 9, after 9), each read once, by
    # the first prune that found it older; nothing else read (the rest this Checkpointer saved itself).
    assert loads == Counter(turns.prompts[:-1])
    kept = {turns.store.read_blob(d) for d in os.listdir(turns.store.blobs) if not d.startswith(".")}
    assert {f"version {n}\n".encode() for n in range(10)} <= kept  # each prompt's content is kept


def blobs(store: CheckpointStore) -> set[bytes]:
    return {store.read_blob(d) for d in os.listdir(store.blobs) if not d.startswith(".")}


def age_store(store: CheckpointStore, seconds: float) -> None:
    """Date every checkpoint and content of `store` `seconds` back."""
    then = time.time() - seconds
    for folder in (store.points, store.blobs):
        for name in os.listdir(folder):
            os.utime(os.path.join(folder, name), (then, then))


def chat_turns(turns: Turns, path: str, count: int) -> None:
    for n in range(count):
        write(path, f"chat {n}\n")
        turns.begin()
        write(path, f"chat {n} done\n")
        turns.end("Scripted", {})


def test_a_checkpoint_pinned_by_another_checkpointer_of_the_store_keeps_its_contents_until_unpinned(
    tmp_path: object,
) -> None:
    ws = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    os.makedirs(ws)
    path = os.path.join(ws, "a.txt")
    cache = os.path.join(str(tmp_path), "cache")
    write(path, "the terminal's\n")
    terminal = Checkpointer(CheckpointStore(cache, [ws]), [ws])  # a window's Start Checkpoint
    checkpoint_pins.hold(terminal.store.root, "terminal")
    point = terminal.take()
    checkpoint_pins.pin(terminal.store.root, "terminal", point.id)
    turns = Turns(cache, [ws])  # a chat in the same folders: the same store, its own Checkpointer
    turns.checkpointer.keep = 3
    try:
        chat_turns(turns, path, 6)
        assert point.id in turns.store.point_ids()
        assert b"the terminal's\n" in blobs(turns.store)
    finally:
        checkpoint_pins.unpin(terminal.store.root, "terminal")
    # A prune spares what was written within its first moments (another process may be checkpointing
    # then): on a fast machine the whole test fits in that window, so age what is already stored.
    age_store(turns.store, seconds=60)
    chat_turns(turns, path, 1)  # the next prune after the unpin lets it go
    assert point.id not in turns.store.point_ids()
    assert b"the terminal's\n" not in blobs(turns.store)


def test_no_prune_while_a_checkpoint_of_the_store_is_being_taken(tmp_path: object) -> None:
    ws = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    os.makedirs(ws)
    path = os.path.join(ws, "a.txt")
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    turns.checkpointer.keep = 3
    checkpoint_pins.hold(turns.store.root, "taking")  # its contents may be in the store, not yet named
    try:
        chat_turns(turns, path, 4)
        assert len(turns.store.point_ids()) == 8  # nothing pruned meanwhile
    finally:
        checkpoint_pins.unpin(turns.store.root, "taking")
    age_store(turns.store, seconds=60)  # a prune spares what was written in its first 50 ms
    chat_turns(turns, path, 1)
    assert len(turns.store.point_ids()) == 3 + 4  # the last 3, and the older prompts the chat pins


def test_a_hold_waits_for_a_prune_already_running_in_the_store(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Else the prune, having listed the blobs before the hold, deletes the new checkpoint's contents."""
    ws = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    os.makedirs(ws)
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    turns.checkpointer.keep = 1
    chat_turns(turns, os.path.join(ws, "a.txt"), 2)
    deleting, release, step = threading.Event(), threading.Event(), threading.Event()
    order: list[str] = []
    remove_unused = turns.store.remove_unused

    def slow_remove(kept: Any, used: Any, *since: Any) -> None:
        deleting.set()
        release.wait()
        remove_unused(kept, used, *since)
        order.append("pruned")

    class Watched(threading.Condition):
        def wait_for(self, predicate: Any, timeout: float | None = None) -> Any:
            if not predicate():
                order.append("hold waits")
                step.set()
            return super().wait_for(predicate, timeout)

    monkeypatch.setattr(turns.store, "remove_unused", slow_remove)
    monkeypatch.setattr(checkpoint_pins, "_changed", Watched())
    pruning = threading.Thread(target=turns.checkpointer.prune, args=([],))
    pruning.start()
    deleting.wait()

    def hold() -> None:
        checkpoint_pins.hold(turns.store.root, "taking")
        order.append("held")
        step.set()

    holding = threading.Thread(target=hold)
    holding.start()
    step.wait()  # the hold either waits or (wrongly) returned while the prune deletes
    release.set()
    pruning.join()
    holding.join()
    checkpoint_pins.unpin(turns.store.root, "taking")
    assert order == ["hold waits", "pruned", "held"]


def test_a_turn_ending_after_its_chat_closed_leaves_no_pin_and_the_next_chat_prunes(tmp_path: object) -> None:
    """F8: a chat is closed while its turn runs (Sublime: the view closed mid-prompt); the turn's end
    still runs afterwards. Its "checkpoint being taken" pin stayed in the store, and every prune of
    the store by every later chat, in any process, was skipped for good."""
    ws = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    os.makedirs(ws)
    path = os.path.join(ws, "a.txt")
    cache = os.path.join(str(tmp_path), "cache")
    closed = Turns(cache, [ws])
    write(path, "before\n")
    closed.begin()
    write(path, "edited\n")
    closed.close()
    for thread in threading.enumerate():  # the close's own removal of the pin file has run
        if thread.name == "gemini-companion-unpin":
            thread.join()
    closed.end("Scripted", {})  # the cancelled prompt's end, after the close
    pins = os.path.join(closed.store.root, checkpoint_pins.PINS)
    assert not [n for n in os.listdir(pins) if n.endswith(".json")], "a closed chat left a pin file"
    its_points = set(closed.store.point_ids())

    later = Turns(cache, [ws])
    later.checkpointer.keep = 3
    chat_turns(later, path, 4)
    age_store(later.store, seconds=60)
    chat_turns(later, path, 1)
    assert its_points.isdisjoint(later.store.point_ids()), "the later chat's prunes were all skipped"

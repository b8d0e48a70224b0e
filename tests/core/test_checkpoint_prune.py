"""Pruning a workspace's checkpoints (companion/core/checkpoints.py `Checkpointer.prune`): a living
chat pins the checkpoint before each of its prompts; past `keep` checkpoints, prune keeps those and
their contents, and reads each pinned checkpoint once per Checkpointer, not at every prune."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest

from companion.core.turns import Turns


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

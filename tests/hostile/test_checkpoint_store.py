"""The checkpoint store under attack (issue #37): two chats of one window, two chats of two
processes, a tampered store, hostile trees the agent makes. Each test is the attack; each failed
before its fix."""

from __future__ import annotations

import os
import threading

from companion.core.turns import Turns


def write(path: str, data: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(data)


def workspace(tmp_path: object, name: str = "ws") -> str:
    ws = os.path.realpath(os.path.join(str(tmp_path), name))
    os.makedirs(ws)
    return ws


def test_two_chats_of_one_window_end_their_turns_at_the_same_moment(tmp_path: object) -> None:
    """C2: both write the store's turn record at once; a temporary name shared by the process made
    one rename the other's file away (FileNotFoundError on 10-22 of 80 turn ends)."""
    ws = workspace(tmp_path)
    cache = os.path.join(str(tmp_path), "cache")
    chats = [Turns(cache, [ws]), Turns(cache, [ws])]
    rounds = 40
    together = threading.Barrier(2)
    failures: list[BaseException] = []

    def chat(n: int) -> None:
        for turn in range(rounds):
            chats[n].begin()
            write(os.path.join(ws, f"chat{n}.txt"), f"turn {turn}\n")
            together.wait()  # both end now
            try:
                chats[n].end("Scripted", {})
            except BaseException as exc:  # the attack's result, reported below
                failures.append(exc)

    threads = [threading.Thread(target=chat, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert chats[0].store.load_record() is not None

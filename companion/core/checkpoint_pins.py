"""Checkpoints pinned by what is not a chat (a window's terminal checkpoint, issue #30): every
`Checkpointer.prune` of the same store in this process keeps them, with their contents, for as long
as they are pinned. A chat passes its own pins to `prune`; a terminal checkpoint has no turn end of
its own, so it pins here, under an owner of its own, and unpins when it is replaced or its window
goes.

A checkpoint being taken cannot be pinned by id yet, and its new contents reach the store before the
checkpoint that names them, so a prune meanwhile would delete them: `hold` first (it waits for a
prune of that store already running), and every prune of that store is skipped until the owner pins
or unpins. Only `hold` ever waits; `pin` and `unpin` never wait for a prune's file I/O.
In memory, per process: a `chat` in another process does not see these pins.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

_changed = threading.Condition()
_pins: dict[str, dict[str, str | None]] = {}  # store root -> owner -> pinned checkpoint (None: being taken)
_running: Counter[str] = Counter()  # store root -> prunes running there


def _key(root: str) -> str:
    return os.path.normcase(os.path.abspath(root))


def hold(root: str, owner: str) -> None:
    """`owner` takes a checkpoint in the store at `root` now: no prune there until it pins or unpins
    (returns once the prunes already running there are done). Blocks: a worker thread's call."""
    root = _key(root)
    with _changed:
        _pins.setdefault(root, {})[owner] = None
        _changed.wait_for(lambda: not _running[root])


def pin(root: str, owner: str, point_id: str) -> None:
    """Keep `point_id` (and its contents) for `owner` until `unpin`; replaces the owner's earlier pin."""
    root = _key(root)
    with _changed:
        _pins.setdefault(root, {})[owner] = point_id


def unpin(root: str, owner: str) -> None:
    root = _key(root)
    with _changed:
        owners = _pins.get(root, {})
        owners.pop(owner, None)
        if not owners:
            _pins.pop(root, None)


@contextmanager
def pruning(root: str) -> Iterator[set[str] | None]:
    """For a prune of the store at `root`: the checkpoints pinned there, or None while one is being
    taken there (skip this prune; the next one does it)."""
    root = _key(root)
    with _changed:
        owners = _pins.get(root, {})
        if None in owners.values():
            pinned = None
        else:
            pinned = {point_id for point_id in owners.values() if point_id is not None}
            _running[root] += 1
    if pinned is None:
        yield None
        return
    try:
        yield pinned
    finally:
        with _changed:
            _running[root] -= 1
            if not _running[root]:
                del _running[root]
            _changed.notify_all()

"""Checkpoints pinned by what is not a chat (a window's terminal checkpoint, issue #30): every
`Checkpointer.prune` of the same store in this process keeps them, with their contents, for as long
as they are pinned. A chat passes its own pins to `prune`; a terminal checkpoint has no turn end of
its own, so it pins here, under an owner of its own, and unpins when it is replaced or its window
goes.

A checkpoint being taken cannot be pinned by id yet, and its new contents reach the store before the
checkpoint that names them, so a prune meanwhile would delete them: `hold` first (it waits for a
prune of that store already running), and every prune of that store is skipped until the owner pins
or unpins. Only `hold` ever waits; `pin` and `unpin` never wait for a prune's file I/O.
In memory, per process. A chat's pins and a terminal checkpoint's are also shared with other
processes (`share`): a pin file per owner in the store (`pins/<owner hash>.json`: its process, when
that process started, its
checkpoints, or null while one is being taken), which every prune reads; a pin file whose process is
gone (or whose PID now belongs to a later process) is stale, and removed by the prune that finds it.
A process killed mid-take can leave no pin that outlives it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from ..files.writing import remove_quietly
from ..system.processes import create_time, pid_alive
from ..system.token_files import atomic_write_private, ensure_private_dir

PINS = "pins"
_STARTED_SLACK = 1.0  # seconds: create_time read twice may differ by rounding

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


def _pin_file(root: str, owner: str) -> str:
    name = hashlib.sha256(owner.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(root, PINS, f"{name}.json")


def share(root: str, owner: str, point_ids: Iterable[str] | None) -> None:
    """Pin `point_ids` for `owner` in the store itself, for every process (None: a checkpoint is
    being taken, no prune anywhere until the next `share`). Blocking file I/O: a worker thread's call."""
    ensure_private_dir(os.path.join(root, PINS))
    pid = os.getpid()
    payload = {"pid": pid, "started": _started(pid), "points": None if point_ids is None else sorted(point_ids)}
    atomic_write_private(_pin_file(root, owner), json.dumps(payload).encode())


@functools.lru_cache(maxsize=4)
def _started(pid: int) -> float | None:
    """This process's start time, asked once (a fork has another PID, so another entry)."""
    return create_time(pid)


def unshare(root: str, owner: str) -> None:
    remove_quietly(_pin_file(root, owner))


def _shared(root: str) -> set[str] | None:
    """The checkpoints other processes' living chats pin in the store (None: one is being taken);
    pin files of processes that are gone are removed. A pin file that cannot be read is not a pin."""
    folder = os.path.join(root, PINS)
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith(".")]
    except OSError:
        return set()
    pinned: set[str] = set()
    for name in names:
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as handle:
                payload = json.loads(handle.read())
            pid, started, points = int(payload["pid"]), payload.get("started"), payload["points"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not _alive(pid, started):
            remove_quietly(path)
            continue
        if points is None:
            return None
        pinned.update(str(p) for p in points)
    return pinned


def _alive(pid: int, started: object) -> bool:
    """Whether the process that wrote a pin still runs (not another one that got its PID since)."""
    if not pid_alive(pid):
        return False
    now = create_time(pid)
    return not (isinstance(started, (int, float)) and now is not None and abs(now - started) > _STARTED_SLACK)


@contextmanager
def pruning(root: str) -> Iterator[set[str] | None]:
    """For a prune of the store at `root`: the checkpoints pinned there (in this process, and in the
    store's pin files), or None while one is being taken there (skip this prune; the next one does it)."""
    shared = _shared(root)
    root = _key(root)
    with _changed:
        owners = _pins.get(root, {})
        if shared is None or None in owners.values():
            pinned = None
        else:
            pinned = shared | {point_id for point_id in owners.values() if point_id is not None}
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

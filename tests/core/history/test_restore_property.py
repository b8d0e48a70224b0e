"""Issue 36's invariant on the headless Revert and Restore paths (`changes --revert`, `/restore N`:
`Turns.revert`, `Turns.plan`/`apply`), as a property: after the user's action the disk holds exactly
the checkpoint's bytes, whatever the line endings, final newline or BOM, and whatever the agent and
another writer did; a revert refused because the file changed since it was listed writes nothing.

Drawn: the file's bytes before the prompt (LF, CRLF, CR or mixed line endings, with or without a
final newline, with or without a UTF-8 BOM) or no file, what the agent's turn does to it (rewrite
with LF, other bytes, append, rename other bytes over it, delete it), and what another writer does
after the turn (nothing, the turn's bytes again, other bytes, append, rename over).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from companion.core.history.restore import RestoreRefused
from companion.core.history.turns import Turns

BOM = b"\xef\xbb\xbf"
OTHER = b"bytes the user never saw\n"
OLD_NS = 1_600_000_000 * 10**9  # the original's mtime, long before any checkpoint (not racy)


@dataclass(frozen=True)
class Example:
    original: bytes | None  # None: the agent creates the file
    agent: str  # lf | other | append | rename | delete
    after: str  # nothing | same | other | append | rename
    how: str  # revert | restore


@st.composite
def texts(draw: Any) -> bytes:
    count = draw(st.integers(1, 5))
    words = draw(st.lists(st.text(alphabet="ab é", max_size=4), min_size=count, max_size=count))
    breaks = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=count, max_size=count))
    if draw(st.booleans()):
        breaks[-1] = ""
    text = "".join(f"l{i}:{w}{brk}" for i, (w, brk) in enumerate(zip(words, breaks, strict=True)))
    return (BOM if draw(st.booleans()) else b"") + text.encode("utf-8")


@st.composite
def examples(draw: Any) -> Example:
    original = draw(st.none() | texts())
    agents = ["lf", "other", "append", "rename"] + (["delete"] if original is not None else [])
    return Example(
        original=original,
        agent=draw(st.sampled_from(agents)),
        after=draw(st.sampled_from(["nothing", "same", "other", "append", "rename"])),
        how=draw(st.sampled_from(["revert", "restore"])),
    )


def writes(path: str, behaviour: str, current: bytes | None) -> None:
    """A writer's change of `path` (the agent's in the turn, or another program's after it)."""
    if behaviour == "nothing":
        return
    if behaviour == "delete":
        os.unlink(path)
        return
    if behaviour == "rename":
        with open(f"{path}.tmp", "wb") as handle:
            handle.write(OTHER + b"renamed over\r\n")
        os.replace(f"{path}.tmp", path)
        return
    data = {
        "lf": (current or b"").replace(b"\r\n", b"\n").replace(b"\r", b"\n") + b"lf\n",
        "same": current or b"",
        "other": OTHER,
        "append": (current or b"") + b"appended",
    }[behaviour]
    with open(path, "wb") as handle:
        handle.write(data)


def read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


@given(example=examples())
@settings(max_examples=60, deadline=None)
def test_revert_and_restore_put_exactly_the_checkpoints_bytes_back(example: Example) -> None:
    root = tempfile.mkdtemp()
    try:
        ws = os.path.realpath(os.path.join(root, "ws"))
        os.makedirs(ws)
        path = os.path.join(ws, "file.txt")
        if example.original is not None:
            with open(path, "wb") as handle:
                handle.write(example.original)
            os.utime(path, ns=(OLD_NS, OLD_NS))
        turns = Turns(os.path.join(root, "cache"), [ws])
        try:
            turns.begin()
            writes(path, example.agent, example.original)
            turns.end("Scripted", {})
            turn_bytes = read(path)
            writes(path, example.after if turn_bytes is not None else "nothing", turn_bytes)
            before_action = read(path)
            if example.how == "revert":
                try:
                    turns.revert(None)
                except RestoreRefused:
                    # Refused only when the file changed since the turn listed it; nothing written.
                    assert before_action != turn_bytes, example
                    assert read(path) == before_action, example
                    return
            else:
                plan = turns.plan(turns.prompt_point(1))
                turns.apply(plan, take=[c.path for c in plan.conflicts])  # the user takes every file back
            assert read(path) == example.original, (example, read(path))
        finally:
            turns.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)

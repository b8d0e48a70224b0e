"""The commands of `chat --checkpoints` between turns: `/changes` prints the last turn's change set;
`/restore N` brings the workspace back to how it was before prompt N of the chat, after printing what
will change (`/restore undo` undoes the last restore, `/restore` lists what can be restored).

A file changed after the agent (someone's later work) is a conflict: in a terminal each is shown as
a diff from your text to the checkpoint's, and you choose k (keep mine) or t (take the checkpoint);
when input is not a terminal the restore is refused with nothing written, since nobody can choose.
The checkpoint work runs on a worker thread (core/turns.py is blocking I/O).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .core import line_diff
from .headless import one_line, visible

if TYPE_CHECKING:
    from .core.change_set import FileChange
    from .core.restore_plan import Conflict, RestorePlan
    from .core.turns import Point, Turns

Ask = Callable[[str, str], str]  # (what to show, question) -> the answer line; EOFError at the end
USAGE = "type /restore N for the checkpoint before prompt N, /restore undo to undo the last restore"


def print_changes(found: Sequence[FileChange]) -> None:
    lines = "".join(f"\n  {one_line(change.line())}" for change in found)
    files = f"{len(found)} file{'s' * (len(found) != 1)}" if found else "none"
    print(f"\n[changes: {files}]{lines}", flush=True)


async def run_command(turns: Turns, words: Sequence[str], ask: Ask, interactive: bool) -> None:
    """`/changes` or `/restore ...`; every failure is one `error:` line saying what to do."""
    from .core.turns import NoTurn, RestoreFailed, RestoreRefused

    try:
        if words[0] == "/changes":
            print_changes(await asyncio.to_thread(turns.change_set, True))
        else:
            await _restore(turns, words[1:], ask, interactive)
    except (NoTurn, RestoreRefused, RestoreFailed, OSError, ValueError) as exc:
        print(f"error: {one_line(str(exc))}", flush=True)


async def _restore(turns: Turns, args: Sequence[str], ask: Ask, interactive: bool) -> None:
    points = await asyncio.to_thread(turns.points)
    if not args:
        listed = "".join(f"\n  {p.label}" for p in points) or "\n  none yet: a prompt's checkpoint comes with it"
        print(f"\n[restore points]{listed}\n{USAGE}.", flush=True)
        return
    point = _chosen(turns, points, args)
    plan = await asyncio.to_thread(turns.plan, point)
    lines = "".join(f"\n  {one_line(line)}" for line in plan.lines())
    print(f"\n[restore to {plan.label}: {len(plan.changes)} file(s) change]{lines}", flush=True)
    if not plan.changes:
        print(f"Nothing to restore: the files are as they were before {plan.label}.", flush=True)
        return
    take = await _choices(plan, ask, interactive)
    if take is None:
        return
    undo = await asyncio.to_thread(turns.apply, plan, take)
    kept = [c.path for c in plan.conflicts if c.path not in take]
    mine = f"; kept yours: {', '.join(visible(p) for p in kept)}" if kept else ""
    print(f"Restored {plan.label}{mine}. /restore undo brings the files back ({undo.label}).", flush=True)


def _chosen(turns: Turns, points: Sequence[Point], args: Sequence[str]) -> Point:
    if len(args) == 1 and args[0] == "undo":
        undos = [p for p in points if p.label.startswith("before restore")]
        if not undos:
            raise ValueError("there is no restore to undo in this chat")
        return undos[-1]
    if len(args) != 1 or not args[0].isdigit():
        raise ValueError(USAGE)
    return turns.prompt_point(int(args[0]))


async def _choices(plan: RestorePlan, ask: Ask, interactive: bool) -> list[str] | None:
    """The conflicts to take from the checkpoint, or None when nothing is to be written."""
    if plan.conflicts and not interactive:
        names = ", ".join(visible(c.path) for c in plan.conflicts)
        print(
            f"error: {len(plan.conflicts)} file(s) changed after the agent ({names}); nothing was written. "
            "Run the chat in a terminal to choose for each, or revert them yourself first.",
            flush=True,
        )
        return None
    take: list[str] = []
    for conflict in plan.conflicts:
        answer = await asyncio.to_thread(_ask_conflict, ask, conflict, plan.label)
        if answer is None:
            print("Restore cancelled; nothing was written.", flush=True)
            return None
        if answer == "t":
            take.append(conflict.path)
    return take


def _ask_conflict(ask: Ask, conflict: Conflict, label: str) -> str | None:
    """'k' or 't' (None when input ended): asked until the answer is one of them."""
    where = "your unsaved buffer" if conflict.in_buffer else "yours, now"
    shown = _conflict_diff(conflict, where, f"the checkpoint before {label}")
    question = f"{visible(conflict.path)} changed after the agent: k(eep mine) / t(ake the checkpoint)? "
    while True:
        try:
            answer = ask(shown, question).strip().lower()
        except EOFError:
            return None
        if answer in ("k", "t"):
            return answer


def _conflict_diff(conflict: Conflict, mine: str, theirs: str) -> str:
    """Both texts, as a diff from the current one to the checkpoint's ("(no file)" for an absent side)."""
    old = conflict.current_text if conflict.current_text is not None else ""
    new = conflict.checkpoint_text if conflict.checkpoint_text is not None else ""
    rows = line_diff.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=mine + ("" if conflict.current_text is not None else " (no file)"),
        tofile=theirs + ("" if conflict.checkpoint_text is not None else " (no file)"),
    )
    return visible("\n" + "".join(r if r.endswith("\n") else r + "\n" for r in rows))

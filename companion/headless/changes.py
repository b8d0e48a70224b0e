"""The commands of `chat --checkpoints` between turns: `/changes` prints the last turn's change set;
`/restore N` brings the workspace back to how it was before prompt N of the chat, after printing what
will change (`/restore undo` undoes the last restore, `/restore` lists what can be restored: `prompt N`
with the prompt's first line, and `undo N`, the files just before restore N).

A file changed after the agent (someone's later work) is a conflict: in a terminal each is shown as
a diff from your text to the checkpoint's, and you choose k (keep mine) or t (take the checkpoint);
when input is not a terminal the restore is refused with nothing written, since nobody can choose.
The checkpoint work runs on a worker thread (core/history/turns.py is blocking I/O).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..core.files import line_diff
from .console import off_the_loop
from .editor import one_line, visible

if TYPE_CHECKING:
    from ..core.history.change_set import FileChange
    from ..core.history.restore_plan import Conflict, RestorePlan
    from ..core.history.turns import Point, Turns

Ask = Callable[[str, str], str]  # (what to show, question) -> the answer line; EOFError at the end
USAGE = "type /restore N for the checkpoint before prompt N, /restore undo to undo the last restore"


def print_changes(found: Sequence[FileChange]) -> None:
    lines = "".join(f"\n  {one_line(change.line())}" for change in found)
    files = f"{len(found)} file{'s' * (len(found) != 1)}" if found else "none"
    print(f"\n[changes: {files}]{lines}", flush=True)


async def run_command(
    turns: Turns, words: Sequence[str], ask: Ask, interactive: bool, texts: Sequence[str] = ()
) -> bool:
    """`/changes` or `/restore ...`; every failure is one `error:` line saying what to do. `texts`:
    this chat's prompts, in order, shown beside their restore points. True when a restore wrote
    the files (or found them as they were)."""
    from ..core.history.turns import NoTurn, RestoreFailed, RestoreRefused

    try:
        if words[0] == "/changes":
            print_changes(await asyncio.to_thread(turns.change_set, True))
            return False
        return await _restore(turns, words[1:], ask, interactive, texts)
    except (NoTurn, RestoreRefused, RestoreFailed, OSError, ValueError) as exc:
        print(f"error: {one_line(str(exc))}", flush=True)
        return False


async def _restore(turns: Turns, args: Sequence[str], ask: Ask, interactive: bool, texts: Sequence[str]) -> bool:
    points = await asyncio.to_thread(turns.points)
    names = _names(points)
    if not args:
        listed = "".join(f"\n  {_listed(p, names, texts)}" for p in points)
        print(f"\n[restore points]{listed or NO_POINTS}\n{USAGE}.", flush=True)
        return False
    point = _chosen(turns, points, args)
    name = names.get(point.id, point.label)
    plan = await asyncio.to_thread(turns.plan, point)
    lines = "".join(f"\n  {one_line(line)}" for line in plan.lines())
    print(f"\n[restore to {name}: {len(plan.changes)} file(s) change]{lines}", flush=True)
    if not plan.changes:
        print(f"Nothing to restore: the files are as they were {_when(name)}.", flush=True)
        return True
    take = await _choices(plan, ask, interactive, name)
    if take is None:
        return False
    await asyncio.to_thread(turns.apply, plan, take)
    kept = [c.path for c in plan.conflicts if c.path not in take]
    mine = f"; kept yours: {', '.join(visible(p) for p in kept)}" if kept else ""
    undo = f"undo {sum(1 for p in points if _is_undo(p)) + 1}"
    print(f"Restored {name}{mine}. /restore undo brings the files back ({undo}).", flush=True)
    return True


NO_POINTS = "\n  none yet: a prompt's checkpoint comes with it"
SHOWN_CHARS = 60  # a prompt's text beside its restore point: its first line, shortened


def _is_undo(point: Point) -> bool:
    return not point.label.startswith("prompt ")


def _names(points: Sequence[Point]) -> dict[str, str]:
    """What the terminal calls each point: `prompt N`, or `undo N` for the point a restore left
    (core's labels nest: "before restore to before restore to prompt 1")."""
    undos = [p for p in points if _is_undo(p)]
    names = {p.id: f"undo {n}" for n, p in enumerate(undos, 1)}
    return {**names, **{p.id: p.label for p in points if not _is_undo(p)}}


def _when(name: str) -> str:
    return f"just before restore {name.split()[1]}" if name.startswith("undo ") else f"before {name}"


def _listed(point: Point, names: dict[str, str], texts: Sequence[str]) -> str:
    """`prompt 2  "Fix the typo in…"`, or `undo 1  (the files just before restore 1)`."""
    name = names.get(point.id, point.label)
    if _is_undo(point):
        return f"{name}  (the files {_when(name)})"
    number = int(name.split()[1])
    if number > len(texts):
        return name
    lines = texts[number - 1].strip().splitlines() or [""]
    first = lines[0]
    shown = first if len(first) <= SHOWN_CHARS and len(lines) == 1 else first[: SHOWN_CHARS - 1] + "…"
    return f'{name}  "{one_line(shown)}"'


def _chosen(turns: Turns, points: Sequence[Point], args: Sequence[str]) -> Point:
    if len(args) == 1 and args[0] == "undo":
        undos = [p for p in points if _is_undo(p)]
        if not undos:
            raise ValueError("there is no restore to undo in this chat")
        return undos[-1]
    if len(args) != 1 or not args[0].isdigit():
        raise ValueError(USAGE)
    return turns.prompt_point(int(args[0]))


async def _choices(plan: RestorePlan, ask: Ask, interactive: bool, name: str) -> list[str] | None:
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
        answer = await off_the_loop(_ask_conflict, ask, conflict, _when(name))
        if answer is None:
            print("Restore cancelled; nothing was written.", flush=True)
            return None
        if answer == "t":
            take.append(conflict.path)
    return take


def _ask_conflict(ask: Ask, conflict: Conflict, when: str) -> str | None:
    """'k' or 't' (None when input ended): asked until the answer is one of them."""
    where = "your unsaved buffer" if conflict.in_buffer else "yours, now"
    shown = _conflict_diff(conflict, where, f"the checkpoint {when}")
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

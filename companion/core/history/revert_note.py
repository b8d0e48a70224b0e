"""The note the agent's next prompt carries after the user reverted or restored files it changed, so
it does not build on changes that are gone (as the note after an accepted review with the user's
edits, `acp/session.py`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Hunk = tuple[int, int]  # first and last line, in the agent's version of the file


def reverted_note(
    paths: Sequence[str],
    why: str = "reverted to how they were before your last turn",
    hunks: Mapping[str, Sequence[Hunk]] | None = None,
    kept: Sequence[str] = (),
) -> str:
    """One short note: the files (and hunks) the user took back, and the ones kept as they are."""
    hunks = hunks or {}
    whole = [p for p in paths if not hunks.get(p)]
    parts: list[str] = []
    if whole:
        parts.append(f"these files were {why}: {', '.join(whole)}.")
    for path in (p for p in paths if hunks.get(p)):
        lines = ", ".join(f"{a}-{b}" if b != a else f"{a}" for a, b in hunks[path])
        parts.append(f"In {path}, lines {lines} of your version were reverted; the rest of your change stays.")
    if kept:
        parts.append(f"The user kept their own later version of: {', '.join(kept)}.")
    return (
        "[Note from the editor: the user changed files back since your last turn; "
        + " ".join(parts)
        + " Read them again before building on your earlier changes.]"
    )

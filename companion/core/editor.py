"""The Editor port: everything the core needs from an editor, and nothing more.

The server calls these coroutines on its own event loop. An implementation that must touch a UI
thread (Sublime's main thread) marshals the work there and awaits the result; it never blocks the
loop. Reviews report the user's decision back through `Review.accept` / `Review.reject`.
"""

from __future__ import annotations

from typing import Any, Protocol

from .reviews import Review


class Editor(Protocol):
    async def show_review(self, review: Review) -> None:
        """Show `review` to the user (a new review, or a newer proposal for an open one)."""
        ...

    async def close_review(self, review: Review) -> str:
        """Close the review without asking, and return the proposal's current text (user edits included)."""
        ...

    async def unsaved_text(self, path: str) -> str | None:
        """The text of `path`'s open buffer if it has unsaved changes, else None."""
        ...

    async def write_through_buffer(self, path: str, text: str) -> bool | str:
        """If `path` is open, replace its buffer with `text` (one undoable edit) and save it.

        Returns False when the file is not open; the caller then writes the file itself. Once saved:
        the line break the save stored ("\n", "\r\n" or "\r": the buffer's own setting), or True
        when the editor cannot say (the caller can then check the saved text only up to its breaks).
        """
        ...

    async def keep_unwritten(self, path: str, text: str, reason: str) -> bool:
        """The user accepted `text` for `path`, but it could not be written (`reason`): keep it where
        the user can save it once the problem is fixed, and say so. Nothing the user typed is lost.

        Returns True when the text now waits in an unsaved buffer; False when the editor has none to
        offer (the client's error message then says nothing about one)."""
        ...

    # -- what Claude Code's /ide tools ask of the editor --

    async def open_file(self, path: str, start_text: str, end_text: str) -> bool:
        """Show `path`, selecting from the first line holding `start_text` to the next holding
        `end_text` when given. False when there is nothing to show it in."""
        ...

    async def is_dirty(self, path: str) -> bool | None:
        """Whether `path`'s open buffer has unsaved changes; None when it is not open."""
        ...

    async def save_file(self, path: str) -> bool | None:
        """Save `path`'s open buffer; None when it is not open, False when saving failed."""
        ...

    async def diagnostics(self, path: str | None) -> dict[str, list[dict[str, Any]]]:
        """Diagnostics the editor really has (of `path`, or of every file), in LSP shape:
        `{message, severity, source, code?, range: {start, end}}` with 0-based positions."""
        ...

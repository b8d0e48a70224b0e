"""The Editor port for one Sublime window: its reviews shown, open buffers read and written through,
saves and diagnostics, all on Sublime's main thread (the loop thread awaits them)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

import sublime

from ..core.files.textfile import to_newline
from ..core.reviews import Review
from ..core.write_notes import review_notes
from .diagnostics import diagnostics as window_diagnostics
from .diagnostics import select_text
from .main_thread import on_main
from .review_ui import WindowReviews

log = logging.getLogger("gemini_companion")
SAVE_WAIT_SECONDS = 5.0  # how long a save from code may take to finish (a dialog, a slow disk)
SAVE_LOOK_SECONDS = 0.02  # how often a save still under way is looked at

# View.line_endings() -> the break its save writes ("Mac" in older builds).
_SAVED_BREAKS = {"Unix": "\n", "Windows": "\r\n", "CR": "\r", "Mac": "\r"}


class SublimeEditor:
    """The Editor port for one window: reviews are shown on Sublime's main thread."""

    def __init__(self, reviews: WindowReviews) -> None:
        self.reviews = reviews

    async def show_review(self, review: Review) -> None:
        if self.reviews.detached:
            raise RuntimeError("the window was closed")
        # What the write changes besides the lines: a whole-file comparison, on neither the loop nor
        # Sublime's main thread.
        notes = await asyncio.to_thread(review_notes, review.disk, review.proposal)
        await on_main(lambda: self.reviews.show(review, notes=notes))

    async def close_review(self, review: Review) -> str:
        if self.reviews.detached:  # its views are already closed; the main thread may be stopping us
            return review.proposal
        left = await on_main(lambda: self.reviews.close(review))
        return await asyncio.to_thread(left.text)  # a whole-file comparison: not on the loop either

    async def unsaved_text(self, path: str) -> str | None:
        if self.reviews.detached:
            return None

        def read() -> str | None:
            view = self._open_view(path)
            if view is None or not view.is_dirty():
                return None
            return view.substr(sublime.Region(0, view.size()))

        return await on_main(read)

    async def write_through_buffer(self, path: str, text: str) -> bool | str:
        if self.reviews.detached:
            return False

        def write() -> tuple[sublime.View, str] | None:
            view = self._open_view(path)
            if view is None or view.is_loading() or view.is_read_only():
                return None  # the caller writes the file itself; Sublime reloads an unmodified view
            wanted = to_newline(text, "\n")  # Sublime holds every break as "\n" and saves its own
            # One undoable edit, saved with the view's own line endings and encoding.
            view.run_command("gemini_companion_replace_text", {"text": wanted})
            if view.substr(sublime.Region(0, view.size())) != wanted:
                raise RuntimeError("the text could not be put into its open view")
            # The break the save stores, read with the save: what the turn's end must find on disk.
            newline = _SAVED_BREAKS.get(view.line_endings(), "\n")
            view.run_command("save")
            return view, newline

        written = await on_main(write)
        if written is None:
            return False
        if await self._saved(written[0]) is False:
            raise RuntimeError("Sublime Text did not save its open view (see the editor for why)")
        return written[1]

    async def keep_unwritten(self, path: str, text: str, reason: str) -> bool:
        def keep() -> None:
            window = self.reviews.window if self.reviews.window.is_valid() else sublime.active_window()
            view = window.new_file()
            view.set_name(f"{os.path.basename(path)} (not written)")
            syntax = sublime.find_syntax_for_file(path)
            if syntax is not None:
                view.assign_syntax(syntax)
            view.settings().set("default_dir", os.path.dirname(path))  # Save As starts beside the file
            view.run_command("append", {"characters": text, "force": True, "scroll_to_end": False})
            # Not a scratch view: closing it asks to save, like any unsaved work.
            window.focus_view(view)
            message = f"Gemini Companion: could not write {os.path.basename(path)}; the accepted text is in a new tab"
            window.status_message(message)
            log.warning("%s. %s Save that tab once the problem is fixed.", message, reason)

        if self.reviews.detached:
            log.warning("the accepted text for %s could not be written (%s) and its window is gone", path, reason)
            return False
        await on_main(keep)
        return True

    async def open_file(self, path: str, start_text: str, end_text: str) -> bool:
        if self.reviews.detached or not os.path.isfile(path):  # a stat on the loop thread, never Sublime's
            return False

        def show() -> bool:
            window = self.reviews.window
            if not window.is_valid():
                return False
            view = window.open_file(path)
            if start_text:
                select_text(view, start_text, end_text)
            window.focus_view(view)
            return True

        return await on_main(show)

    async def is_dirty(self, path: str) -> bool | None:
        if self.reviews.detached:
            return None

        def dirty() -> bool | None:
            view = self._open_view(path)
            return None if view is None else view.is_dirty()

        return await on_main(dirty)

    async def save_file(self, path: str) -> bool | None:
        if self.reviews.detached:
            return None

        def save() -> sublime.View | None:
            view = self._open_view(path)
            if view is not None and view.is_dirty():
                view.run_command("save")
            return view

        view = await on_main(save)
        return None if view is None else await self._saved(view) is True

    async def _saved(self, view: sublime.View) -> bool | None:
        """Whether the view's save has finished. Nothing documents whether `save` run from code has
        finished when `run_command` returns (Sublime's own Ctrl+S passes `"async": true`, and LSP
        passes it on): a view still dirty is looked at again on later main-thread turns, from this
        loop, until SAVE_WAIT_SECONDS have passed; only then the save counts as failed. None: the
        view was closed meanwhile."""
        deadline = time.monotonic() + SAVE_WAIT_SECONDS
        while True:
            clean = await on_main(lambda: not view.is_dirty() if view.is_valid() else None)
            if clean is not False or time.monotonic() >= deadline or self.reviews.detached:
                return clean
            await asyncio.sleep(SAVE_LOOK_SECONDS)

    async def diagnostics(self, path: str | None) -> dict[str, list[dict[str, Any]]]:
        if self.reviews.detached:
            return {}
        return await on_main(lambda: window_diagnostics(self.reviews.window, path))

    def _open_view(self, path: str) -> sublime.View | None:
        """The file's view in this window, else in another window (main thread)."""
        window = self.reviews.window
        windows = [window] if window.is_valid() else []
        windows += [w for w in sublime.windows() if w != window]
        for candidate in windows:
            view = candidate.find_open_file(path)
            if view is not None and view.is_valid():
                return view
        return None

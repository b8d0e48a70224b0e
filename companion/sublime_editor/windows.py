"""One companion server per Sublime window, and the Editor port that shows its reviews."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import sublime

from ..context import SharingPolicy
from ..diffs import Review
from ..runtime import Runtime, WindowHandle
from .main_thread import on_main
from .review_ui import WindowReviews

log = logging.getLogger("gemini_companion")


class SublimeEditor:
    """The Editor port for one window: reviews are shown on Sublime's main thread."""

    def __init__(self, reviews: WindowReviews) -> None:
        self.reviews = reviews

    async def show_review(self, review: Review) -> None:
        if self.reviews.detached:
            raise RuntimeError("the window was closed")
        await on_main(lambda: self.reviews.show(review))

    async def close_review(self, review: Review) -> str:
        if self.reviews.detached:  # its views are already closed; the main thread may be stopping us
            return review.proposal
        return await on_main(lambda: self.reviews.close(review))

    async def unsaved_text(self, path: str) -> str | None:
        if self.reviews.detached:
            return None

        def read() -> str | None:
            view = self.reviews.window.find_open_file(path)
            if view is None or not view.is_dirty():
                return None
            return view.substr(sublime.Region(0, view.size()))

        return await on_main(read)

    async def write_through_buffer(self, path: str, text: str) -> bool:
        if self.reviews.detached:
            return False

        def write() -> bool:
            view = self.reviews.window.find_open_file(path)
            if view is None or view.is_loading():
                return False
            # One undoable edit, saved with the view's own line endings and encoding.
            view.run_command("gemini_companion_replace_text", {"text": text.replace("\r\n", "\n")})
            view.run_command("save")
            return True

        return await on_main(write)


@dataclass
class WindowState:
    window: sublime.Window
    handle: WindowHandle
    reviews: WindowReviews
    terminal_folder: str | None = None  # where this window's Gemini CLI terminal runs


class WindowRegistry:
    """Window id → its server and reviews. Used from the main thread and the async worker."""

    def __init__(self, runtime: Runtime, policy: SharingPolicy | None = None) -> None:
        self.runtime = runtime
        self.policy = policy or SharingPolicy()
        self._windows: dict[int, WindowState] = {}

    def get(self, window: sublime.Window | None) -> WindowState | None:
        return self._windows.get(window.id()) if window is not None else None

    def open(self, window: sublime.Window) -> WindowState:
        state = self._windows.get(window.id())
        if state is not None:
            return state
        from . import status  # status imports this module

        reviews = WindowReviews(window)
        handle = self.runtime.open_window(SublimeEditor(reviews), window.folders())
        handle.context.set_policy(self.policy)
        state = WindowState(window, handle, reviews)
        self._windows[window.id()] = state
        window_id = window.id()
        handle.on_clients_changed = lambda _h: status.show_later(state)
        handle.ready.add_done_callback(lambda f: _report_start(window_id, f))
        handle.ready.add_done_callback(lambda _f: status.show_later(state))
        return state

    def set_policy(self, policy: SharingPolicy) -> None:
        self.policy = policy
        for state in self.all():
            state.handle.context.set_policy(policy)

    def close(self, window: sublime.Window) -> None:
        """The window is going away: its reviews close silently, its server and file go."""
        state = self._windows.pop(window.id(), None)
        if state is None:
            return
        state.handle.on_clients_changed = None
        state.reviews.detach()
        state.handle.close()

    def sync_folders(self, window: sublime.Window) -> None:
        state = self.get(window)
        if state is None:
            return
        folders = window.folders()
        if folders != state.handle.folders:
            state.handle.folders = list(folders)
            state.handle.set_folders(folders)

    def all(self) -> list[WindowState]:
        return list(self._windows.values())

    def close_all(self) -> None:
        from . import status

        for state in self.all():
            state.handle.on_clients_changed = None
            state.reviews.detach()
            if state.window.is_valid():
                status.clear(state.window)
        self._windows.clear()

    def forget_all(self) -> None:
        """Drop every window without touching the editor (its API is gone at exit)."""
        for state in self.all():
            state.handle.on_clients_changed = None
            state.reviews.detached = True
        self._windows.clear()


def _report_start(window_id: int, future: object) -> None:
    import concurrent.futures

    assert isinstance(future, concurrent.futures.Future)
    error = future.exception()
    if error is not None:
        log.error("Gemini Companion could not start the server for window %s: %s", window_id, error)
        sublime.set_timeout(lambda: sublime.status_message(f"Gemini Companion: server failed to start ({error})"))

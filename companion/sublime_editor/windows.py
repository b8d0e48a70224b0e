"""One companion server per Sublime window (`WindowRegistry`; each shows its reviews through the
Editor port of `editor.py`), and the commands' base.

`running` is what the package runs now: `lifecycle` fills it in and empties it, and every command
and listener finds a window's state through it, one way (`state_of`; `CompanionWindowCommand`)."""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import sublime
import sublime_plugin

from ..core.context import SharingPolicy
from ..mcp_tools.factory import tool_factory
from ..runtime import Runtime, RuntimeStopped, WindowHandle
from . import direct_access, settings
from .dependencies import Check
from .editor import SublimeEditor
from .mcp_tools import WorkspaceSnapshot, read_settings
from .review_ui import WindowReviews
from .window_state import WindowState

log = logging.getLogger("gemini_companion")


class WindowRegistry:
    """Window id → its server and reviews. Used from the main thread and the async worker."""

    def __init__(
        self,
        runtime: Runtime,
        policy: SharingPolicy | None = None,
        on_open: Callable[[WindowState], None] | None = None,
        on_close: Callable[[WindowState], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.policy = policy or SharingPolicy()
        self.on_open = on_open  # told of every window state that opens (the context is seeded)
        self.on_close = on_close  # told of every window state that closes (its chats stop)
        self._windows: dict[int, WindowState] = {}
        self._port_owner: int | None = None  # the window whose server holds `server_port`
        self._port_release: concurrent.futures.Future[None] | None = None  # its server stopping
        self._reported: set[str] = set()  # setting problems already told (once each)
        self._closed = False

    def get(self, window: sublime.Window | None) -> WindowState | None:
        return self._windows.get(window.id()) if window is not None else None

    def open(self, window: sublime.Window) -> WindowState:
        state = self._windows.get(window.id())
        if state is not None:
            return state
        tools = WorkspaceSnapshot(read_settings(window))
        reviews = WindowReviews(window)
        port = self._claim_port(window.id())
        handle = self._start(reviews, window.folders(), tools, port)
        state = WindowState(window, handle, reviews, tools=tools)
        self._windows[window.id()] = state
        self._watch(state, port)
        sublime.set_timeout(reviews.close_leftovers)  # open() may run on the async worker
        if self.on_open is not None:
            self.on_open(state)
        return state

    def _claim_port(self, window_id: int) -> int:
        """`server_port` for the first window that starts while no other window holds it, else 0."""
        port, problem = direct_access.requested_port()
        self._report(problem)
        if not port or (self._port_owner is not None and self._port_owner in self._windows):
            return 0
        self._port_owner = window_id
        return port

    def _start(self, reviews: WindowReviews, folders: list[str], tools: WorkspaceSnapshot, port: int) -> WindowHandle:
        token, problem = direct_access.requested_token()
        self._report(problem)
        return self.runtime.open_window(
            SublimeEditor(reviews),
            folders,
            port=port,
            token=token,
            tool_factory=tool_factory(tools),
            claude=settings.serves_claude(),
            gemini=settings.serves_gemini(),
        )

    def _watch(self, state: WindowState, port: int, retry: bool = True) -> None:
        from . import status  # status imports this module

        handle = state.handle
        handle.context.set_policy(self.policy)
        window_id = state.window.id()
        handle.on_clients_changed = lambda _h: status.show_later(state)

        def started(future: concurrent.futures.Future[WindowHandle]) -> None:  # on the loop thread
            error = future.exception()
            if port and isinstance(error, OSError):
                sublime.set_timeout(lambda: self._port_failed(window_id, handle, port, error, retry))
                return
            _report_start(window_id, future)
            status.show_later(state)

        handle.ready.add_done_callback(started)

    def _port_failed(self, window_id: int, failed: WindowHandle, port: int, error: OSError, retry: bool) -> None:
        """The fixed port could not be had. If the window that held it is still stopping its server,
        try once more when it has; otherwise fall back to a free port."""
        state = self._windows.get(window_id)
        if state is None or state.handle is not failed or self._closed:
            return
        release = self._port_release
        if retry and release is not None and not release.done():
            release.add_done_callback(lambda _f: sublime.set_timeout(lambda: self._retry_port(window_id, failed, port)))
            return
        self._fall_back(state, failed, port, error)

    def _retry_port(self, window_id: int, failed: WindowHandle, port: int) -> None:
        state = self._windows.get(window_id)
        if state is None or state.handle is not failed or self._closed:
            return
        state.handle = self._start(state.reviews, state.window.folders(), state.tools, port)
        self._watch(state, port, retry=False)

    def _fall_back(self, state: WindowState, failed: WindowHandle, port: int, error: OSError) -> None:
        """Say why the fixed port could not be had, and serve this window on a free port."""
        if self._port_owner == state.window.id():
            self._port_owner = None
        reason = error.strerror or str(error)
        sublime.status_message(
            f"Gemini Companion: port {port} (setting server_port) is not available ({reason}); using a free port"
        )
        print(
            f"Gemini Companion: the setting server_port asks for port {port}, but it could not be used: {reason}. "
            "Another program (or another Sublime Text instance) probably listens on it. This window's server "
            "uses a free port instead: Gemini CLI and the stdio bridge still find it through the discovery file, "
            "but a client configured by hand with that port does not. Free the port or choose another one "
            "(then re-copy the configuration from 'Gemini Companion: Connect Another Agent')."
        )
        failed.close()
        state.handle = self._start(state.reviews, state.window.folders(), state.tools, 0)
        self._watch(state, 0)

    def _report(self, problem: str | None) -> None:
        if problem is None or problem in self._reported:
            return
        self._reported.add(problem)
        log.warning("%s", problem)
        message = f"Gemini Companion: {problem}"
        sublime.set_timeout(lambda: sublime.status_message(message))  # open() may run on the async worker

    def refresh_tools(self, state: WindowState) -> None:
        """Take a new snapshot of the tool settings; rebuild the tool list if tools were turned on or off."""
        if not state.window.is_valid():
            return
        if state.tools.refresh(state.window):
            handle = state.handle
            try:
                handle.runtime.submit(lambda: _rebuild_tools(handle))
            except RuntimeStopped:
                pass

    def refresh_all_tools(self) -> None:
        self._reported.clear()
        for state in self.all():
            self.refresh_tools(state)

    def set_policy(self, policy: SharingPolicy) -> None:
        self.policy = policy
        for state in self.all():
            state.handle.context.set_policy(policy)

    def close(self, window: sublime.Window) -> concurrent.futures.Future[None] | None:
        """The window is going away: its reviews close silently, its server and file go."""
        state = self._windows.pop(window.id(), None)
        if state is None:
            return None
        state.handle.on_clients_changed = None
        if self.on_close is not None:
            self.on_close(state)
        state.reviews.detach()
        closing = state.handle.close()
        if self._port_owner == window.id():
            self._port_owner = None
            self._port_release = closing  # the next window's server may bind the port once this is done
        return closing

    def restart_all(self) -> None:
        """Restart every window's server (to take a new server_port or auth_token): all stop, then all start."""
        from . import status

        windows = [state.window for state in self.all()]
        futures = [f for f in (self.close(w) for w in windows) if f is not None]
        self._reported.clear()
        remaining = [len(futures)]

        def reopen() -> None:
            if self._closed:
                return
            for window in windows:
                if window.is_valid() and window.id() not in self._windows:
                    status.show(self.open(window))

        def one_done(_future: object) -> None:  # on the loop thread
            remaining[0] -= 1
            if remaining[0] == 0:
                sublime.set_timeout(reopen)

        if not futures:
            return
        for future in futures:
            future.add_done_callback(one_done)

    def sync_folders(self, window: sublime.Window) -> None:
        state = self.get(window)
        if state is None:
            return
        self.refresh_tools(state)
        folders = window.folders()
        if folders != state.handle.folders:
            state.handle.folders = list(folders)
            state.handle.set_folders(folders)

    def sync_if_folders_changed(self, window: sublime.Window) -> None:
        """Only `window.folders()` is compared with what the server has; the settings and the
        project (`project_data()`, large in a big project) are read again only when they differ.
        Their other changes have their own events (settings listeners, project load and save)."""
        state = self.get(window)
        if state is not None and window.is_valid() and window.folders() != state.handle.folders:
            self.sync_folders(window)

    def sync_changed_folders(self) -> None:
        """Catch folder changes no event reports (drag and drop, `subl -a`, another package's
        set_project_data): `window.folders()` per window, compared with what the server has."""
        for state in self.all():
            self.sync_if_folders_changed(state.window)

    def reconcile(self) -> None:
        """Serve exactly the windows that exist (main thread). `on_pre_close_window` has not fired
        on macOS and Windows since build 4126 (sublimehq/sublime_text#5148), and a window may be
        reported closing and then stay (the user cancels a save prompt): `sublime.windows()` and
        `Window.is_valid()` decide, never the event. Cheap: no file I/O, one API call per window."""
        if self._closed:
            return
        existing = {window.id(): window for window in sublime.windows()}
        for state in self.all():
            if state.window.id() not in existing or not state.window.is_valid():
                self.close(state.window)
        for window_id, window in existing.items():
            if window_id not in self._windows and window.is_valid():
                self.open(window)

    def all(self) -> list[WindowState]:
        return list(self._windows.values())

    def close_all(self) -> None:
        from . import status

        self._closed = True
        for state in self.all():
            state.handle.on_clients_changed = None
            state.reviews.detach()
            if state.window.is_valid():
                status.clear(state.window)
        self._windows.clear()

    def forget_all(self) -> None:
        """Drop every window without touching the editor (its API is gone at exit)."""
        self._closed = True
        for state in self.all():
            state.handle.on_clients_changed = None
            state.reviews.detached = True
        self._windows.clear()


async def _rebuild_tools(handle: WindowHandle) -> None:
    """On the loop: offer the tools now enabled (clients that list tools afterwards see the change)."""
    server, gemini = handle.server, handle.gemini
    if server is not None and gemini is not None and handle.tool_factory is not None and not handle.closed:
        gemini.extra_tools = {spec.tool.name: spec for spec in handle.tool_factory(server)}


def _report_start(window_id: int, future: concurrent.futures.Future[WindowHandle]) -> None:
    error = future.exception()
    if error is not None:
        log.error("Gemini Companion could not start the server for window %s: %s", window_id, error)
        sublime.set_timeout(lambda: sublime.status_message(f"Gemini Companion: server failed to start ({error})"))


@dataclass
class Running:
    """What the package runs now. `lifecycle` fills it in (plugin_loaded, then the library check)
    and empties it (shutdown, a library upgrade); everything else only reads it."""

    runtime: Runtime | None = None  # the loop thread: None before plugin_loaded and after unloading
    registry: WindowRegistry | None = None  # every window's server: None until the libraries are there
    library_problem: Check | None = None  # what the companion waits for; None when it runs (or is unloaded)
    upgraded: list[str] = field(default_factory=list)  # libraries changed under the servers (they stopped)


running = Running()
NOT_RUNNING = "Gemini Companion is not running in this window; see the console for why."


def registry() -> WindowRegistry | None:
    return running.registry


def runtime() -> Runtime | None:
    """The running loop thread; None before `plugin_loaded`, after unloading, or when libraries are missing."""
    return running.runtime


def library_problem() -> Check | None:
    """The libraries' problem while the companion waits for them; None when it runs (or is unloaded)."""
    return running.library_problem


def upgraded() -> list[str]:
    """Libraries Package Control changed while the servers ran (they stopped for it): "name old → new"."""
    return list(running.upgraded)


def state_of(window: sublime.Window | None) -> WindowState | None:
    """The window's state while the companion runs there, else None (nothing said: for checks)."""
    reg = running.registry
    return reg.get(window) if reg is not None else None


def running_state(window: sublime.Window | None) -> WindowState | None:
    """The window's state, or None after telling the user (status bar) that we do not run there."""
    state = state_of(window)
    if state is None:
        sublime.status_message(NOT_RUNNING)
    return state


class CompanionWindowCommand(sublime_plugin.WindowCommand):
    """A command on the companion of its window: `state()` for checks, `running_state()` for a run
    that needs the companion there (the user is told when it does not run). With `needs_server`,
    the command is disabled (menus, palette, keys) while the companion does not run in the window."""

    needs_server = False

    def state(self) -> WindowState | None:
        return state_of(self.window)

    def running_state(self) -> WindowState | None:
        return running_state(self.window)

    def is_enabled(self) -> bool:
        return not self.needs_server or self.state() is not None


class CompanionTextCommand(sublime_plugin.TextCommand):
    """A command on a view, acting on the companion of the view's window (`state()`: None while it
    does not run there, or for a view in no window)."""

    def state(self) -> WindowState | None:
        return state_of(self.view.window())

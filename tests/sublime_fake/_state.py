"""The fake editor's state and threads: what `sublime_api` is to the real `sublime` module.

Everything the public classes in `sublime.py` show is kept here, keyed by id, so `sublime.View(7)`
and `sublime.Window(3)` are cheap handles exactly as in Sublime Text (two handles with the same id
are equal, and a handle to a closed view is simply invalid).

Threads, as in the real plugin host:

* the *main thread* is the thread that called `control.reset()` (the test). `set_timeout` queues
  callbacks for it; they run only when the test pumps (`control.pump`), which is how the test
  plays Sublime's UI thread;
* one shared *async worker* runs `set_timeout_async` callbacks and every `*_async` event, in order;
* any UI-changing API call made on another thread is recorded as a violation, and so is any API
  call made after the API shut down (during `on_exit`).
"""

from __future__ import annotations

import collections
import heapq
import itertools
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

WORKER_THREAD_NAME = "sublime-fake-async-worker"


@dataclass
class BufferData:
    id: int
    text: str = ""
    file_name: str | None = None
    name: str = ""
    scratch: bool = False
    read_only: bool = False
    change_count: int = 0
    saved_change_count: int = 0
    encoding: str = "UTF-8"
    line_endings: str = "Unix"
    reference: str | None = None
    syntax: str = "Packages/Text/Plain text.tmLanguage"
    loading: bool = False
    undo: list[tuple[str, list[tuple[int, int]]]] = field(default_factory=list)
    undo_marker: int | None = None  # undo depth when the running command started
    redo: list[tuple[str, list[tuple[int, int]]]] = field(default_factory=list)  # what undo took back
    views: list[int] = field(default_factory=list)


@dataclass
class ViewData:
    id: int
    buffer_id: int
    window_id: int
    sheet_id: int = 0  # 0: not in a sheet (panels and widgets)
    element: str | None = None
    selection: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])
    settings_id: int = 0
    phantoms: dict[int, tuple[str, tuple[int, int], str, int, Callable[[str], None] | None]] = field(
        default_factory=dict
    )
    regions: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    edit_token: int | None = None
    inline_diff: bool = False
    # What Sublime's own key binding contexts read (`control.show_ui`): the auto-complete popup, a
    # hover popup, snippet fields being cycled.
    auto_complete_visible: bool = False
    popup_visible: bool = False
    has_fields: bool = False
    valid: bool = True


@dataclass
class SheetData:
    id: int
    window_id: int
    view_id: int | None  # None for HTML sheets
    kind: str = "text"
    name: str = ""
    contents: str = ""


@dataclass
class WindowData:
    id: int
    groups: list[list[int]]  # sheet ids per group, in tab order
    selected: list[int | None]  # the selected sheet of each group
    layout: dict[str, Any]
    active_group: int = 0
    project_data: dict[str, Any] | None = None
    project_file: str | None = None
    panels: dict[str, int] = field(default_factory=dict)  # "output.name" -> view id
    active_panel: str | None = None
    focused_panel_view: int | None = None
    settings_id: int = 0
    history: list[int] = field(default_factory=list)  # sheet ids, most recently focused last
    overlay_visible: bool = False  # the command palette or Goto Anything is shown
    valid: bool = True


@dataclass
class SettingsData:
    id: int
    values: dict[str, Any] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    callbacks: list[tuple[str, Callable[[], None]]] = field(default_factory=list)
    view_id: int | None = None  # view settings (changes to them are UI changes)


@dataclass
class Dialog:
    kind: str
    message: str
    answer: Any = None


class TimeoutQueue:
    """A delay-ordered callback queue; equal delays run in the order they were added."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], object]]] = []
        self._seq = itertools.count()
        self.cond = threading.Condition()

    def put(self, callback: Callable[[], object], delay_ms: int) -> None:
        due = time.monotonic() + max(0, delay_ms) / 1000.0
        with self.cond:
            heapq.heappush(self._heap, (due, next(self._seq), callback))
            self.cond.notify_all()

    def pop_due(self) -> Callable[[], object] | None:
        with self.cond:
            if self._heap and self._heap[0][0] <= time.monotonic():
                return heapq.heappop(self._heap)[2]
            return None

    def next_due(self) -> float | None:
        with self.cond:
            return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        with self.cond:
            return len(self._heap)

    def clear(self) -> None:
        with self.cond:
            self._heap.clear()


class Worker:
    """Sublime's single shared async thread."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.queue = TimeoutQueue()
        self.busy = False
        self._stop = False
        self.thread = threading.Thread(target=self._run, name=WORKER_THREAD_NAME, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        queue = self.queue
        while True:
            with queue.cond:
                while not self._stop:
                    due = queue.next_due()
                    if due is not None and due <= time.monotonic():
                        break
                    queue.cond.wait(None if due is None else max(0.0, due - time.monotonic()))
                if self._stop:
                    return
                self.busy = True
            callback = queue.pop_due()
            try:
                if callback is not None:
                    self.host.run_callback(callback, "set_timeout_async")
            finally:
                with queue.cond:
                    self.busy = False
                    queue.cond.notify_all()

    def idle(self) -> bool:
        with self.queue.cond:
            return not self.busy and len(self.queue._heap) == 0

    def stop(self, timeout: float = 10) -> None:
        with self.queue.cond:
            self._stop = True
            self.queue.cond.notify_all()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout)


class Host:
    """One fake Sublime Text process: windows, views, buffers, settings, the two threads."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.main_ident = threading.get_ident()
        self.main_queue = TimeoutQueue()
        self.worker = Worker(self)
        self._ids = itertools.count(1)
        self.windows: dict[int, WindowData] = {}
        self.window_order: list[int] = []  # most recently used last
        self.views: dict[int, ViewData] = {}
        self.buffers: dict[int, BufferData] = {}
        self.sheets: dict[int, SheetData] = {}
        self.settings: dict[int, SettingsData] = {}
        self.named_settings: dict[str, int] = {}
        self.saved_settings: dict[str, dict[str, Any]] = {}
        self.packages: dict[str, str] = {}  # package name -> folder
        self.user_settings: dict[str, dict[str, Any]] = {}
        self.violations: list[str] = []
        self.errors: list[str] = []
        self.timings: list[tuple[str, str, int]] | None = None  # (thread, callable, ns) when measuring
        self.status_messages: list[str] = []
        self.dialogs: list[Dialog] = []
        self.dialog_answers: list[Any] = []
        self.unknown_commands: list[tuple[str, str, Any]] = []
        self.command_log: list[tuple[str, str, Any]] = []  # (target, name, args) of every command run
        self.ui_calls: collections.Counter[str] = collections.Counter()  # API name -> calls that changed the UI
        self.terminus_installed = False
        self.terminus_calls: list[tuple[str, dict[str, Any]]] = []
        self.quick_panels: list[dict[str, Any]] = []
        self.input_panels: list[dict[str, Any]] = []
        self.opened_urls: list[str] = []  # the `open_url` command's URLs (the browser is not started)
        self.clipboard = ""
        self.api_ready = True
        self.api_shut_down = False
        # Closing a window sends `on_pre_close_window`; not on macOS and Windows since build 4126
        # (sublimehq/sublime_text#5148): `control.window_close_event(False)` plays that.
        self.pre_close_window_fires = True
        # `view.window()` in `on_pre_close` is the view's window ([stubs] L656: "The view will still be
        # in the window at this point"); two ST4 regressions made it None (sublimehq/sublime_text#3463,
        # #3516, fixed since): `control.pre_close_window(False)` plays them.
        self.pre_close_has_window = True
        self.find_miss_is_none = False  # View.find on no match: Region(-1, -1), or None (control.find_miss)
        # Whether `save` run from code has written the file when run_command returns: no source says
        # (Sublime's own Ctrl+S passes "async": true); `control.save_finishes_later(True)` plays "not yet".
        self.save_finishes_later = False
        self.executable_path = "/opt/sublime_text/sublime_text"
        self.version = "4213"  # the build the stubs describe
        self.data_dir = ""
        self.edit_tokens = itertools.count(1)
        # The symbol index (`Window.symbol_locations`): Sublime builds it from each syntax's symbol
        # rules; the fake cannot, so a test declares what it indexed (`control.index_symbol`).
        self.symbols: list[dict[str, Any]] = []

    def new_id(self) -> int:
        return next(self._ids)

    # -- threads --

    def on_main_thread(self) -> bool:
        return threading.get_ident() == self.main_ident

    def ui_call(self, api: str) -> None:
        """An API call that changes the UI: it belongs on the main thread, and before shutdown."""
        self.ui_calls[api] += 1
        if not self.on_main_thread():
            self.violations.append(f"{api} called on thread {threading.current_thread().name!r}")
        self.api_call(api)

    def api_call(self, api: str) -> None:
        if self.api_shut_down:
            self.violations.append(f"{api} called after the API shut down (on_exit)")

    def run_callback(self, callback: Callable[[], object], where: str) -> None:
        """Run a plugin callback the way Sublime does: an exception is printed, never propagated."""
        start = time.perf_counter_ns()
        try:
            callback()
        except BaseException as exc:
            self.record_error(where, exc)
        finally:
            self.record_time(callback, start)

    def record_time(self, function: Callable[..., object], start_ns: int) -> None:
        """With `timings` on (a list), note how long `function` held the thread it ran on: the
        benchmark's measure of what each callback costs Sublime's main thread and shared worker."""
        if self.timings is None:
            return
        elapsed = time.perf_counter_ns() - start_ns
        owner = getattr(function, "__self__", None)
        if owner is not None:
            name = f"{type(owner).__module__}.{type(owner).__qualname__}.{getattr(function, '__name__', '?')}"
        else:
            name = f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"
        thread = "main" if self.on_main_thread() else threading.current_thread().name
        self.timings.append((thread, name, elapsed))

    def record_error(self, where: str, exc: BaseException) -> None:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.errors.append(f"{where}: {text}")
        print(f"[sublime fake] exception in {where}:\n{text}", flush=True)

    def pump(self, timeout: float = 0.0) -> int:
        """Run due main-thread callbacks for `timeout` seconds (at least once); returns how many ran."""
        if not self.on_main_thread():
            raise RuntimeError("pump() must be called on the thread that plays Sublime's main thread")
        ran = 0
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            callback = self.main_queue.pop_due()
            if callback is not None:
                self.run_callback(callback, "set_timeout")
                ran += 1
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return ran
            with self.main_queue.cond:
                due = self.main_queue.next_due()
                wait = remaining if due is None else min(remaining, max(0.0, due - time.monotonic()))
                if wait > 0:
                    self.main_queue.cond.wait(wait)

    def shutdown(self) -> None:
        self.worker.stop()
        self.main_queue.clear()


_host: Host | None = None


def host() -> Host:
    if _host is None:
        raise RuntimeError("the fake Sublime is not running: call tests.sublime_fake.control.reset() first")
    return _host


def set_host(new: Host | None) -> None:
    global _host
    _host = new

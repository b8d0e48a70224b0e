"""The test side of the fake Sublime: start it, play the user and the main thread, inspect it.

    control.install()            # `import sublime` / `import sublime_plugin` now give the fake
    host = control.reset()       # a fresh editor; the calling thread becomes Sublime's main thread
    window = control.new_window([folder])
    plugin = control.load_plugin()                  # Packages/Gemini Companion/plugin.py
    view = control.open_file(window, path)          # waits (pumping) until it has loaded
    control.click(view, view.text_point(3, 4))      # the user moves the cursor
    control.pump_until(lambda: ..., timeout=20)     # play the main thread while waiting
    assert control.violations() == [] and control.errors() == []

Every user action runs on the main thread (the test's), as the real UI would, and fires the events
Sublime fires for it. Nothing here is part of the `sublime` API.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any, TypeVar

from . import _plugin_host, _session, _state, sublime, sublime_plugin

T = TypeVar("T")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE_NAME = "Gemini Companion"
PLUGIN_MODULE = f"{PACKAGE_NAME}.plugin"


def install() -> None:
    """Make `import sublime` and `import sublime_plugin` resolve to the fake (idempotent)."""
    for name, module in (("sublime", sublime), ("sublime_plugin", sublime_plugin)):
        existing = sys.modules.get(name)
        if existing is not None and existing is not module:
            raise RuntimeError(f"another {name!r} module is already imported: {existing!r}")
        sys.modules[name] = module


def reset(data_dir: str | None = None) -> _state.Host:
    """A fresh editor with no windows; the calling thread plays Sublime's main thread."""
    install()
    shutdown()
    host = _state.Host()
    host.data_dir = data_dir or ""
    _state.set_host(host)
    return host


def shutdown() -> None:
    """Stop the worker thread and forget the editor (plugins should have been unloaded first)."""
    try:
        host = _state.host()
    except RuntimeError:
        return
    host.shutdown()
    _state.set_host(None)


def host() -> _state.Host:
    return _state.host()


def _main() -> _state.Host:
    current = _state.host()
    if not current.on_main_thread():
        raise RuntimeError(f"user actions happen on the main thread, not on {threading.current_thread().name!r}")
    return current


# -- the main thread --


def pump(timeout: float = 0.0) -> int:
    """Run the main thread's due callbacks for `timeout` seconds; returns how many ran."""
    return _main().pump(timeout)


def pump_until(predicate: Callable[[], T], timeout: float = 30.0, message: str = "") -> T:
    """Play the main thread until `predicate()` is truthy; returns its value or fails after `timeout`."""
    current = _main()
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message or predicate}")
        current.pump(0.01)


def settle(timeout: float = 30.0, quiet: float = 0.05) -> None:
    """Pump until neither thread has work due now, continuously for `quiet` seconds."""
    current = _main()
    deadline = time.monotonic() + timeout
    calm_since: float | None = None
    while time.monotonic() < deadline:
        ran = current.pump(0)
        due = current.main_queue.next_due()
        busy = ran or not current.worker.idle() or (due is not None and due <= time.monotonic())
        now = time.monotonic()
        if busy:
            calm_since = None
        elif calm_since is None:
            calm_since = now
        elif now - calm_since >= quiet:
            return
        current.pump(0.005)
    raise AssertionError(f"the fake editor did not settle within {timeout} s")


def wait_async_idle(timeout: float = 30.0) -> None:
    """Wait (without pumping) until the async worker has nothing left to run."""
    current = _state.host()
    deadline = time.monotonic() + timeout
    with current.worker.queue.cond:
        while not (not current.worker.busy and len(current.worker.queue._heap) == 0):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("the async worker did not become idle")
            current.worker.queue.cond.wait(min(remaining, 0.05))


# -- what happened --


def violations() -> list[str]:
    return list(_state.host().violations)


def errors() -> list[str]:
    return list(_state.host().errors)


def status_messages() -> list[str]:
    return list(_state.host().status_messages)


def dialogs() -> list[_state.Dialog]:
    return list(_state.host().dialogs)


def answer_dialogs(*answers: Any) -> None:
    """The user's answers to the next dialogs (ok/cancel: bool; yes/no/cancel: DialogResult; folder: path)."""
    _state.host().dialog_answers.extend(answers)


def unknown_commands() -> list[tuple[str, str, Any]]:
    return list(_state.host().unknown_commands)


def ui_calls(api: str) -> int:
    """How many times the UI-changing API call `api` (e.g. "View.add_phantom") was made so far."""
    return _state.host().ui_calls[api]


def command_log() -> list[tuple[str, str, Any]]:
    return list(_state.host().command_log)


def terminus_calls() -> list[tuple[str, dict[str, Any]]]:
    return list(_state.host().terminus_calls)


def install_terminus() -> None:
    """Terminus is installed: its resources exist and `terminus_open` / `terminus_send_string` run."""
    _state.host().terminus_installed = True


def set_executable_path(path: str) -> None:
    _state.host().executable_path = path


def set_version(build: str) -> None:
    """The build `sublime.version()` reports (an older one runs the package on its Python 3.3 host)."""
    _state.host().version = build


# -- settings the user edits --


def user_settings(base_name: str, values: dict[str, Any]) -> None:
    """The user's `Packages/User/<base_name>`: applied now (change callbacks fire) and on later loads."""
    current = _main()
    current.user_settings.setdefault(base_name, {}).update(values)
    settings_id = current.named_settings.get(base_name)
    if settings_id is not None:
        settings = sublime.Settings(settings_id)
        for key, value in values.items():
            settings.set(key, value)


# -- plugins --


def load_plugin(
    module_name: str = PLUGIN_MODULE, package: str = PACKAGE_NAME, root: str = REPO_ROOT, startup: bool = False
) -> types.ModuleType:
    """Load (or reload) a plugin module the way Sublime does.

    `startup=True` plays Sublime starting: the module is imported before the API is ready, so
    `plugin_loaded` runs only when it becomes ready, followed by `on_init` and an activation.
    """
    current = _main()
    _plugin_host.register_package(package, root)
    if startup:
        current.api_ready = False
    module = _plugin_host.reload_plugin(module_name)
    if startup:
        _plugin_host.api_ready()
    return module


def unload_plugin(module_name: str = PLUGIN_MODULE) -> None:
    _main()
    _plugin_host.unload_plugin(module_name)


def exit_editor() -> list[str]:
    """Sublime quits: hot exit saves every window's views (`_session`), the API shuts down, `on_exit`
    runs, the worker stops (no plugin_unloaded). Returns the session and workspace files written."""
    _main()
    written = _session.write(_state.host())
    _plugin_host.on_exit()
    _state.host().worker.stop()
    return written


def restore_views(window: sublime.Window, buffers: list[dict[str, Any]]) -> list[sublime.View]:
    """The next start brings the saved buffers back into `window`, with their settings and text
    (`_session.saved_buffers(path)` reads them from a file `exit_editor` wrote)."""
    _main()
    views: list[sublime.View] = []
    for saved in buffers:
        view = window.open_file(saved["file"]) if saved.get("file") else window.new_file()
        view.set_scratch(bool(saved.get("scratch")))
        view.set_name(saved.get("name", ""))
        for key, value in saved.get("settings", {}).items():
            view.settings().set(key, value)
        if "contents" in saved and not saved.get("file"):
            view.run_command("append", {"characters": saved["contents"], "force": True})
        views.append(view)
    return views


def listener_count() -> int:
    """How many event-listener registrations the host holds (one per listener and event)."""
    state = _plugin_host.plugins()
    return sum(len(v) for v in state.callbacks.values()) + sum(len(v) for v in state.view_listeners.values())


def command_classes() -> list[type]:
    state = _plugin_host.plugins()
    return [*state.application_commands, *state.window_commands, *state.text_commands]


# -- windows --


def new_window(folders: list[str] | None = None, project_file: str | None = None) -> sublime.Window:
    """A new window (File › New Window, or `subl folder`), with its folders from the start."""
    _main()
    current = _state.host()
    before = set(current.windows)
    if folders is None and project_file is None:
        sublime.run_command("new_window")
    else:
        _plugin_host._new_window({}, folders or [], project_file)
    (window_id,) = set(current.windows) - before
    return sublime.Window(window_id)


def focus_window(window: sublime.Window) -> None:
    _main()
    sublime._focus_window(window.window_id)


def close_window(window: sublime.Window) -> None:
    _main()
    window.run_command("close_window")


def pre_close_window(present: bool) -> None:
    """Whether `view.window()` answers the view's window in `on_pre_close` (as documented), or None
    as in two ST4 regressions (sublimehq/sublime_text#3463, #3516)."""
    _main().pre_close_has_window = present


def window_close_event(fires: bool) -> None:
    """Whether closing a window sends `on_pre_close_window`: on Linux it does; on macOS and Windows
    it has not since build 4126 (sublimehq/sublime_text#5148, open)."""
    _main().pre_close_window_fires = fires


def save_finishes_later(later: bool) -> None:
    """Whether the `save` command writes the file on a later main-thread turn instead of before
    `run_command` returns (no source settles which: both are played)."""
    _main().save_finishes_later = later


def find_miss(answer: sublime.Region | None) -> None:
    """What `View.find` answers when nothing matches: `Region(-1, -1)` (the default) or None."""
    _main().find_miss_is_none = answer is None


def open_project(window: sublime.Window, project_file: str, folders: list[str]) -> None:
    """Project › Open Project… into this window: new folders, then `on_load_project`."""
    _main()
    data = _state.host().windows[window.window_id]
    data.project_file = project_file
    data.project_data = {"folders": [{"path": f} for f in folders]}
    _plugin_host.window_event("on_load_project", window.window_id)


def add_folder(window: sublime.Window, folder: str) -> None:
    """Project › Add Folder to Project…, choosing `folder` in the dialog."""
    _main()
    answer_dialogs(folder)
    window.run_command("prompt_add_folder")


def remove_folder(window: sublime.Window, folder: str) -> None:
    """Side bar › Remove Folder from Project."""
    _main()
    window.run_command("remove_folder", {"dirs": [folder]})


# -- views --


def open_file(window: sublime.Window, path: str, group: int = -1, timeout: float = 30.0) -> sublime.View:
    """File › Open: the view appears (and is focused) at once; waits, pumping, until it has loaded."""
    _main()
    view = window.open_file(path, sublime.NewFileFlags.NONE, group)
    pump_until(lambda: not view.is_loading(), timeout, f"{path} to load")
    return view


def focus(view: sublime.View) -> None:
    """The user clicks the view's tab (or panel)."""
    _main()
    window = view.window()
    if window is None:
        raise ValueError(f"{view!r} is not in a window")
    if sublime.active_window() != window:
        focus_window(window)
    window.focus_view(view)


def select(view: sublime.View, *regions: sublime.Region | int) -> None:
    """The user places carets / selections (a mouse click or drag; several with Ctrl+click)."""
    current = _main()
    focus(view)
    data = current.views[view.view_id]
    size = view.size()
    wanted = [(r.a, r.b) if isinstance(r, sublime.Region) else (r, r) for r in regions]
    data.selection = sublime._merge([(max(0, min(a, size)), max(0, min(b, size))) for a, b in wanted])
    _plugin_host.view_event("on_selection_modified", view.view_id)


def click(view: sublime.View, point: int) -> None:
    select(view, point)


def move_cursor(view: sublime.View, row: int, column: int) -> None:
    """Click at 0-based `row` and character `column` (Unicode characters, as `View.text_point`)."""
    select(view, view.text_point(row, column))


def type_text(view: sublime.View, text: str) -> None:
    """The user types `text` at every caret (the `insert` command, as the keyboard does)."""
    _main()
    focus(view)
    view.run_command("insert", {"characters": text})


def press_save(view: sublime.View) -> None:
    """Ctrl+S with `view` focused: the key binding runs `save` through the input focus."""
    _main()
    focus(view)
    window = view.window()
    assert window is not None
    window.run_command("save", {"async": True})


# Sublime's own bindings (Packages/Default) for the keys tests press, with their contexts, oldest
# first: Default loads before every other package, so any package's binding whose contexts hold wins
# (https://www.sublimetext.com/docs/key_bindings.html). The Escape and Enter entries follow
# Default (Linux).sublime-keymap: `single_selection` (num_selections != 1), `clear_fields`
# (has_next_field, has_prev_field), `hide_panel` (panel_visible), `hide_overlay` (overlay_visible),
# `hide_popup` (popup_visible), `hide_auto_complete` (auto_complete_visible), and Enter's
# `commit_completion` (auto_complete_visible). Whether Default binds `keypad_enter` is not settled
# by a source we could read: the fake plays it as Enter (a newline).
_ESCAPE = [
    ("single_selection", None, [{"key": "num_selections", "operator": "not_equal", "operand": 1}]),
    ("clear_fields", None, [{"key": "has_next_field", "operator": "equal", "operand": True}]),
    ("clear_fields", None, [{"key": "has_prev_field", "operator": "equal", "operand": True}]),
    ("hide_panel", {"cancel": True}, [{"key": "panel_visible", "operator": "equal", "operand": True}]),
    ("hide_overlay", None, [{"key": "overlay_visible", "operator": "equal", "operand": True}]),
    ("hide_popup", None, [{"key": "popup_visible", "operator": "equal", "operand": True}]),
    ("hide_auto_complete", None, [{"key": "auto_complete_visible", "operator": "equal", "operand": True}]),
]
_COMMIT = [{"key": "auto_complete_visible"}, {"key": "setting.auto_complete_commit_on_tab", "operand": False}]
DEFAULT_KEYMAP: list[dict[str, Any]] = [
    {"keys": ["primary+s"], "command": "save", "args": {"async": True}},
    {"keys": ["primary+w"], "command": "close"},
    {"keys": ["primary+z"], "command": "undo"},
    {"keys": ["primary+shift+z"], "command": "redo"},
    {"keys": ["ctrl+y"], "command": "redo_or_repeat"},
    *({"keys": [k], "command": "insert", "args": {"characters": "\n"}} for k in ("enter", "keypad_enter")),
    {"keys": ["shift+enter"], "command": "insert", "args": {"characters": "\n"}},
    {"keys": ["up"], "command": "move", "args": {"by": "lines", "forward": False}},
    {"keys": ["down"], "command": "move", "args": {"by": "lines", "forward": True}},
    *({"keys": ["escape"], "command": c, "args": a, "context": x} for c, a, x in _ESCAPE),
    *({"keys": [k], "command": "commit_completion", "context": _COMMIT} for k in ("enter", "keypad_enter")),
]
OPERATORS = {
    "equal": sublime.QueryOperator.EQUAL,
    "not_equal": sublime.QueryOperator.NOT_EQUAL,
    "regex_match": sublime.QueryOperator.REGEX_MATCH,
    "not_regex_match": sublime.QueryOperator.NOT_REGEX_MATCH,
    "regex_contains": sublime.QueryOperator.REGEX_CONTAINS,
    "not_regex_contains": sublime.QueryOperator.NOT_REGEX_CONTAINS,
}


def key_bindings() -> list[dict[str, Any]]:
    """Every package's key bindings for this platform, in load order (later ones win)."""
    suffix = {"linux": "Linux", "osx": "OSX", "windows": "Windows"}[sublime.platform()]
    entries: list[dict[str, Any]] = []
    for pattern in ("Default.sublime-keymap", f"Default ({suffix}).sublime-keymap"):
        for resource in sublime.find_resources(pattern):
            loaded = sublime.decode_value(sublime.load_resource(resource))
            if isinstance(loaded, list):
                entries.extend(e for e in loaded if isinstance(e, dict))
    return entries


def context_holds(view: sublime.View, context: dict[str, Any]) -> bool:
    """One key binding context, asked of the plugins (`on_query_context`) as Sublime does."""
    operator = OPERATORS[context.get("operator", "equal")]
    return _plugin_host.query_context(
        view, context["key"], operator, context.get("operand", True), context.get("match_all", False)
    )


def _keys(binding: dict[str, Any]) -> list[str]:
    """A binding's keys as pressed: "primary" is Ctrl on Linux and Windows, Cmd (super) on macOS
    (https://www.sublimetext.com/docs/key_bindings.html, "primary")."""
    primary = "super" if sublime.platform() == "osx" else "ctrl"
    return [str(k).replace("primary+", f"{primary}+") for k in binding.get("keys", [])]


def press_keys(view: sublime.View, keys: str) -> str:
    """The user presses `keys` in `view`: the newest binding whose contexts all hold runs (through the
    input focus); Default's bindings are the oldest. Returns the command that ran ("" for none)."""
    _main()
    focus(view)
    window = view.window()
    assert window is not None
    bindings = [*DEFAULT_KEYMAP, *key_bindings()]
    matching = [b for b in bindings if _keys(b) == [keys]]
    if not matching:
        raise AssertionError(f"no binding for {keys!r} in the fake")
    for binding in reversed(matching):
        if all(context_holds(view, c) for c in binding.get("context", [])):
            window.run_command(binding["command"], binding.get("args"))
            return str(binding["command"])
    return ""


def show_ui(
    view: sublime.View,
    auto_complete: bool | None = None,
    popup: bool | None = None,
    fields: bool | None = None,
    overlay: bool | None = None,
) -> None:
    """Show (or hide) what Sublime's own contexts report in `view`: the auto-complete popup, a hover
    popup, snippet fields, the window's overlay (the command palette)."""
    data = _state.host().views[view.view_id]
    if auto_complete is not None:
        data.auto_complete_visible = auto_complete
    if popup is not None:
        data.popup_visible = popup
    if fields is not None:
        data.has_fields = fields
    if overlay is not None:
        _state.host().windows[data.window_id].overlay_visible = overlay


def close_tab(view: sublime.View) -> bool:
    """The user clicks the tab's close button."""
    _main()
    return view.close()


def palette_entries() -> list[dict[str, Any]]:
    """Every entry of every package's `.sublime-commands` files."""
    entries: list[dict[str, Any]] = []
    for resource in sublime.find_resources("*.sublime-commands"):
        loaded = sublime.decode_value(sublime.load_resource(resource))
        if isinstance(loaded, list):
            entries.extend(e for e in loaded if isinstance(e, dict))
    return entries


def palette_shows(window: sublime.Window, command: str, args: dict[str, Any] | None = None) -> bool:
    """Whether the command palette offers `command` now (listed in a package, visible and enabled)."""
    _main()
    listed = [e for e in palette_entries() if e.get("command") == command]
    if not listed:
        raise AssertionError(f"{command!r} is not in any .sublime-commands file, so the palette never shows it")
    cls = _plugin_host._find(_plugin_host.plugins().window_commands, command)
    if cls is None:
        view = window.active_view()
        text_cls = _plugin_host._find(_plugin_host.plugins().text_commands, command)
        if text_cls is None or view is None:
            return False
        instance = _plugin_host._instance(view.view_id, text_cls, view)
    else:
        instance = _plugin_host._instance(window.window_id, cls, window)
    return bool(instance._ask("is_visible", args) and instance._ask("is_enabled", args))


def run_from_palette(window: sublime.Window, command: str, args: dict[str, Any] | None = None) -> bool:
    """The user picks `command` in the command palette; False when the palette does not offer it."""
    if not palette_shows(window, command, args):
        return False
    window.run_command(command, args)
    return True


def query_context(view: sublime.View, key: str, operator: int, operand: Any, match_all: bool = False) -> bool:
    _main()
    return _plugin_host.query_context(view, key, operator, operand, match_all)


def phantoms(view: sublime.View, key: str | None = None) -> list[dict[str, Any]]:
    data = _state.host().views.get(view.view_id)
    if data is None:
        return []
    return [
        {
            "id": pid,
            "key": k,
            "region": sublime.Region(*region),
            "content": content,
            "layout": layout,
            "on_navigate": nav,
        }
        for pid, (k, region, content, layout, nav) in sorted(data.phantoms.items())
        if key is None or k == key
    ]


def click_link(view: sublime.View, href: str, key: str | None = None) -> None:
    """The user clicks `<a href=...>` in one of the view's phantoms."""
    current = _main()
    for phantom in phantoms(view, key):
        if f'href="{href}"' in phantom["content"] and phantom["on_navigate"] is not None:
            current.run_callback(lambda p=phantom: p["on_navigate"](href), "phantom on_navigate")
            return
    raise AssertionError(f"no phantom link {href!r} in {view!r}")


def choose_quick_panel(index: int) -> None:
    """The user picks item `index` (-1: dismisses) in the newest quick panel."""
    current = _main()
    panel = current.quick_panels.pop()
    current.run_callback(lambda: panel["on_select"](index), "quick panel on_select")


def quick_panels() -> list[dict[str, Any]]:
    return list(_state.host().quick_panels)


def answer_input_panel(text: str | None) -> None:
    """The user types `text` and presses Enter in the newest input panel (None: Escape cancels it)."""
    current = _main()
    panel = current.input_panels.pop()
    _destroy_input(panel)
    callback = panel["on_cancel"] if text is None else panel["on_done"]
    if callback is not None:
        current.run_callback(lambda: callback() if text is None else callback(text), "input panel")


def _destroy_input(panel: dict[str, Any]) -> None:
    sublime._destroy_view(panel["view"].view_id)


def input_panels() -> list[dict[str, Any]]:
    return list(_state.host().input_panels)


def opened_urls() -> list[str]:
    """The URLs the `open_url` command was given."""
    return list(_state.host().opened_urls)


def reference_document(view: sublime.View) -> str | None:
    """What the view's incremental diff compares against (not readable through the API)."""
    data = _state.host().views.get(view.view_id)
    return _state.host().buffers[data.buffer_id].reference if data is not None and data.valid else None


def inline_diff_shown(view: sublime.View) -> bool:
    data = _state.host().views.get(view.view_id)
    return bool(data is not None and data.inline_diff)


def start_timing() -> None:
    """From now on, note how long every plugin callback holds the thread it runs on (benchmarks)."""
    _state.host().timings = []


def stop_timing() -> list[tuple[str, str, int]]:
    """The (thread, callable, nanoseconds) noted since `start_timing`, and stop noting."""
    host = _state.host()
    timings, host.timings = host.timings or [], None
    return timings


def syntax_problem(resource: str) -> str | None:
    """Why Sublime would refuse to load the syntax `resource` (its error dialog's text), None if it loads."""
    return sublime._syntax_problem(resource)


def clone_view(view: sublime.View) -> sublime.View:
    """File › New View into File with `view` focused: the clone, focused."""
    _main()
    focus(view)
    window = view.window()
    assert window is not None
    window.run_command("clone_file")
    clone = window.active_view()
    assert clone is not None and clone != view and clone.buffer_id() == view.buffer_id()
    return clone


def drag_to_window(view: sublime.View, window: sublime.Window) -> None:
    """The user drags `view`'s tab into `window`."""
    _main()
    sublime._move_view(view.view_id, window.window_id)


def index_symbol(
    name: str, path: str, row: int, col: int = 1, kind: Any = None, definition: bool = True, syntax: str = "Python"
) -> None:
    """Put a symbol in the index `Window.symbol_locations` reads (1-based row and column), as
    Sublime's indexer would after reading `path` with a syntax that marks `name` a symbol."""
    host().symbols.append(
        {
            "name": name,
            "path": path,
            "row": row,
            "col": col,
            "kind": kind or sublime.KIND_TYPE,
            "type": sublime.SymbolType.DEFINITION if definition else sublime.SymbolType.REFERENCE,
            "syntax": syntax,
        }
    )

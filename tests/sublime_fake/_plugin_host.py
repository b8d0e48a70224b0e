"""The plugin host: loading plugin modules, dispatching events and running commands.

This is what the real `sublime_plugin` module's top-level functions and the editor's command
system do, as documented and as `sublime_plugin.py` (build 4213's reference) behaves:

* `reload_plugin("Pkg.plugin")` imports (or re-imports) a plugin module, registers the command
  classes and event listeners among its public names (`__all__` when present), calls
  `plugin_loaded()`, sends `on_init`, and synthesizes `on_activated` for the active view (and
  `on_activated_async` on the worker); `unload_plugin` calls `plugin_unloaded()` and forgets them.
* A listener receives an event when its class defines the method. Synchronous events run on the
  calling (main) thread, `*_async` ones on the shared worker. A handler's exception is printed and
  recorded (`control.errors()`), never propagated, and never stops the other handlers.
* `run_command` converts the arguments through JSON, lets `on_window_command` / `on_text_command`
  rewrite the command, skips it when `is_enabled` is false, runs it, then sends `on_post_*_command`,
  `on_modified` (buffer changed) and `on_selection_modified` (selection changed).

Built-in commands the fake implements are below (`BUILTIN_*`); Terminus' commands exist only when
`control.install_terminus()` was called. Unknown commands do nothing and are recorded.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import _state, sublime, sublime_plugin

SYNC_AND_ASYNC = {
    "on_new",
    "on_clone",
    "on_load",
    "on_revert",
    "on_reload",
    "on_pre_save",
    "on_post_save",
    "on_post_move",
    "on_modified",
    "on_selection_modified",
    "on_activated",
    "on_deactivated",
    "on_new_window",
    "on_new_project",
    "on_load_project",
    "on_post_save_project",
}
SYNC_ONLY = {
    "on_init",
    "on_pre_close",
    "on_close",
    "on_pre_move",
    "on_query_context",
    "on_query_completions",
    "on_hover",
    "on_text_command",
    "on_window_command",
    "on_post_text_command",
    "on_post_window_command",
    "on_pre_save_project",
    "on_pre_close_project",
    "on_pre_close_window",
    "on_exit",
}
ALL_CALLBACKS = sorted(SYNC_ONLY | SYNC_AND_ASYNC | {f"{n}_async" for n in SYNC_AND_ASYNC})
# Events a ViewEventListener never receives (window- and application-level ones).
VEL_EXCLUDED = {
    "on_clone",
    "on_clone_async",
    "on_exit",
    "on_init",
    "on_load_project",
    "on_load_project_async",
    "on_new",
    "on_new_async",
    "on_new_project",
    "on_new_project_async",
    "on_new_window",
    "on_new_window_async",
    "on_post_save_project",
    "on_post_save_project_async",
    "on_post_window_command",
    "on_pre_close_project",
    "on_pre_close_window",
    "on_pre_save_project",
    "on_window_command",
}


@dataclass
class Plugins:
    application_commands: list[type] = field(default_factory=list)
    window_commands: list[type] = field(default_factory=list)
    text_commands: list[type] = field(default_factory=list)
    callbacks: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in ALL_CALLBACKS})
    view_listener_classes: list[type] = field(default_factory=list)
    view_listeners: dict[int, list[Any]] = field(default_factory=dict)
    module_plugins: dict[str, list[Any]] = field(default_factory=dict)
    instances: dict[tuple[int, type], Any] = field(default_factory=dict)  # (window/view id or 0, class)
    deferred_plugin_loadeds: list[Callable[[], None]] = field(default_factory=list)


def _host() -> _state.Host:
    return _state.host()


def plugins() -> Plugins:
    host = _host()
    existing = getattr(host, "plugins", None)
    if existing is None:
        existing = Plugins()
        host.plugins = existing  # type: ignore[attr-defined]
    return existing


def _trap(where: str, function: Callable[..., Any], *args: Any) -> Any:
    start = time.perf_counter_ns()
    try:
        return function(*args)
    except Exception as exc:
        _host().record_error(where, exc)
        return None
    finally:
        _host().record_time(function, start)


# -- loading --


def register_package(name: str, root: str) -> None:
    """Make `root` importable as the top-level package `name`, as Sublime does for `Packages/<name>`."""
    _host().packages[name] = root
    module = sys.modules.get(name)
    if module is None or list(getattr(module, "__path__", [])) != [root]:
        module = types.ModuleType(name)
        module.__path__ = [root]
        module.__package__ = name
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [root]
        module.__spec__ = spec
        sys.modules[name] = module


def reload_plugin(module_name: str) -> types.ModuleType:
    if module_name in sys.modules:
        module = sys.modules[module_name]
        unload_module(module)
        module = importlib.reload(module)
    else:
        module = importlib.import_module(module_name)
    load_module(module)
    return module


def unload_plugin(module_name: str) -> None:
    module = sys.modules.pop(module_name, None)
    if module is not None:
        unload_module(module)


def load_module(module: types.ModuleType) -> None:
    state = plugins()
    names = dir(module)
    allowed = set(module.__all__) if "__all__" in names else {n for n in names if not n.startswith("_")}
    found: list[Any] = []
    activated: list[Any] = []
    activated_async: list[Any] = []
    new_view_listener_classes: list[type] = []
    for name in names:
        if name not in allowed:
            continue
        value = module.__dict__.get(name)
        if not isinstance(value, type):
            continue
        for base, registry in (
            (sublime_plugin.ApplicationCommand, state.application_commands),
            (sublime_plugin.WindowCommand, state.window_commands),
            (sublime_plugin.TextCommand, state.text_commands),
        ):
            if issubclass(value, base) and value is not base:
                registry.append(value)
                found.append(value)
        if issubclass(value, sublime_plugin.EventListener) and value is not sublime_plugin.EventListener:
            instance = _trap(f"instantiating {value.__qualname__}", value)
            if instance is not None:
                for callback in ALL_CALLBACKS:
                    if callback in dir(value):
                        state.callbacks[callback].append(instance)
                if "on_activated" in dir(value):
                    activated.append(instance)
                if "on_activated_async" in dir(value):
                    activated_async.append(instance)
                found.append(instance)
        if issubclass(value, sublime_plugin.ViewEventListener) and value is not sublime_plugin.ViewEventListener:
            state.view_listener_classes.append(value)
            new_view_listener_classes.append(value)
            found.append(value)
    state.module_plugins[module.__name__] = found
    if not _host().api_ready:
        if "plugin_loaded" in module.__dict__:
            state.deferred_plugin_loadeds.append(module.plugin_loaded)
        return
    if "plugin_loaded" in module.__dict__:
        _trap("plugin_loaded", module.plugin_loaded)
    _init_listeners(module.__name__)
    window = sublime.active_window()
    view = window.active_view() if window else None
    if view is not None:
        for listener in activated:
            _trap("on_activated", listener.on_activated, view)
        for cls in new_view_listener_classes:
            instance = find_view_event_listener(view, cls)
            if instance is not None and hasattr(instance, "on_activated"):
                _trap("on_activated", instance.on_activated)

    def synthesize_on_activated_async() -> None:
        window = sublime.active_window()
        view = window.active_view() if window else None
        if view is None:
            return
        for listener in activated_async:
            _trap("on_activated_async", listener.on_activated_async, view)
        for cls in new_view_listener_classes:
            instance = find_view_event_listener(view, cls)
            if instance is not None and hasattr(instance, "on_activated_async"):
                _trap("on_activated_async", instance.on_activated_async)

    _host().worker.queue.put(synthesize_on_activated_async, 0)


def api_ready() -> None:
    """The editor finished starting: deferred `plugin_loaded` calls run, then `on_init` and activation."""
    host = _host()
    host.api_ready = True
    state = plugins()
    for plugin_loaded in state.deferred_plugin_loadeds:
        _trap("plugin_loaded", plugin_loaded)
    state.deferred_plugin_loadeds.clear()

    def init() -> None:
        _init_listeners(None)
        window = sublime.active_window()
        view = window.active_view() if window else None
        if view is not None:
            view_event("on_activated", view.view_id)

    sublime.set_timeout(init)


def _init_listeners(module_name: str | None) -> None:
    views = [v for w in sublime.windows() for v in w.views() if not v.is_loading()]
    for listener in plugins().callbacks["on_init"]:
        if module_name is None or type(listener).__module__.startswith(module_name.rsplit(".", 1)[0]):
            _trap("on_init", listener.on_init, views)


def unload_module(module: types.ModuleType) -> None:
    state = plugins()
    if "plugin_unloaded" in module.__dict__:
        _trap("plugin_unloaded", module.plugin_unloaded)
    found = state.module_plugins.pop(module.__name__, [])
    for view_id in list(state.view_listeners):
        state.view_listeners[view_id] = [vel for vel in state.view_listeners[view_id] if type(vel) not in found]
    for plugin in found:
        for registry in (state.application_commands, state.window_commands, state.text_commands):
            if plugin in registry:
                registry.remove(plugin)
        for listeners in state.callbacks.values():
            if plugin in listeners:
                listeners.remove(plugin)
        if plugin in state.view_listener_classes:
            state.view_listener_classes.remove(plugin)
    state.instances = {key: obj for key, obj in state.instances.items() if key[1] not in found}


def on_exit() -> None:
    """Sublime is quitting: the API shuts down, then every `on_exit` runs (API calls are violations)."""
    host = _host()
    host.api_shut_down = True
    for listener in list(plugins().callbacks["on_exit"]):
        _trap("on_exit", listener.on_exit)


# -- view event listeners --


def _check_view_listeners(view: sublime.View) -> list[Any]:
    state = plugins()
    listeners = state.view_listeners.setdefault(view.view_id, [])
    if not view.is_valid():
        return listeners
    for cls in state.view_listener_classes:
        instance = next((vel for vel in listeners if type(vel) is cls), None)
        wanted = bool(_trap("is_applicable", cls.is_applicable, view.settings())) and (
            not cls.applies_to_primary_view_only() or view.is_primary()
        )
        if wanted and instance is None:
            created = _trap(f"instantiating {cls.__qualname__}", cls, view)
            if created is not None:
                listeners.append(created)
        elif instance is not None and not wanted:
            listeners.remove(instance)
    return listeners


def find_view_event_listener(view: sublime.View, cls: type) -> Any:
    return next((vel for vel in _check_view_listeners(view) if type(vel) is cls), None)


def forget_view(view_id: int) -> None:
    state = plugins()
    state.view_listeners.pop(view_id, None)
    state.instances = {key: obj for key, obj in state.instances.items() if key[0] != view_id}


# -- events --


def _run_view_callbacks(name: str, view_id: int, *args: Any) -> None:
    if _host().api_shut_down:
        # An `_async` event queued before the editor quit: `on_exit` runs "immediately before the
        # plugin_host process exits" (4213 stubs, sublime_plugin `on_exit` L550): it never arrives.
        return
    view = sublime.View(view_id)
    for listener in list(plugins().callbacks[name]):
        _trap(name, getattr(listener, name), view, *args)
    if name not in VEL_EXCLUDED:
        for listener in list(_check_view_listeners(view)):
            if hasattr(listener, name):
                _trap(name, getattr(listener, name), *args)


def view_event(name: str, view_id: int, *args: Any) -> None:
    """A view event: the synchronous handlers now, the `_async` ones queued on the worker."""
    host = _host()
    if not host.api_ready or host.api_shut_down:
        return
    _run_view_callbacks(name, view_id, *args)
    if name in SYNC_AND_ASYNC:
        host.worker.queue.put(lambda: _run_view_callbacks(f"{name}_async", view_id, *args), 0)


def window_event(name: str, window_id: int, *args: Any) -> None:
    host = _host()
    if not host.api_ready or host.api_shut_down:
        return
    window = sublime.Window(window_id)
    for listener in list(plugins().callbacks[name]):
        _trap(name, getattr(listener, name), window, *args)
    if name in SYNC_AND_ASYNC:

        def run_async() -> None:
            if host.api_shut_down:  # queued before the editor quit: never delivered (as above)
                return
            for listener in list(plugins().callbacks[f"{name}_async"]):
                _trap(f"{name}_async", getattr(listener, f"{name}_async"), window, *args)

        host.worker.queue.put(run_async, 0)


def query_context(view: sublime.View, key: str, operator: int, operand: Any, match_all: bool) -> bool:
    """True when the context holds. Sublime answers its own keys itself
    (https://www.sublimetext.com/docs/key_bindings.html#context-keys); the others go to the
    listeners, and one truthy answer makes it hold (as Sublime does)."""
    own = _builtin_context(view, key)
    if own is not None:
        value = own[0]
        if operator == sublime.QueryOperator.NOT_EQUAL:
            return value != operand
        return value == operand
    for listener in list(plugins().callbacks["on_query_context"]):
        if _trap("on_query_context", listener.on_query_context, view, key, operator, operand, match_all):
            return True
    for listener in list(_check_view_listeners(view)):
        if hasattr(listener, "on_query_context") and _trap(
            "on_query_context", listener.on_query_context, key, operator, operand, match_all
        ):
            return True
    return False


# Defaults of Preferences.sublime-settings (Packages/Default) that Default's key bindings read.
PREFERENCES: dict[str, Any] = {"auto_complete_commit_on_tab": False}


def _builtin_context(view: sublime.View, key: str) -> tuple[Any] | None:
    """The value of one of Sublime's own context keys in `view`, None for a key it leaves to plugins."""
    data = _host().views.get(view.view_id)
    window = _host().windows.get(data.window_id) if data is not None else None
    if data is None or window is None:
        return None
    if key.startswith("setting."):
        name = key[len("setting.") :]
        return (view.settings().get(name, PREFERENCES.get(name)),)
    values: dict[str, Any] = {
        "auto_complete_visible": data.auto_complete_visible,
        "popup_visible": data.popup_visible,
        "has_next_field": data.has_fields,
        "has_prev_field": data.has_fields,
        "num_selections": len(data.selection),
        "panel_visible": window.active_panel is not None,
        "overlay_visible": window.overlay_visible,
    }
    return (values[key],) if key in values else None


def query_completions(view: sublime.View, prefix: str, locations: list[int]) -> list[Any]:
    """What the listeners' `on_query_completions` offer, in order; Sublime merges them into the
    auto-complete popup ([stubs] sublime_plugin `EventListener.on_query_completions` L771–787)."""
    offered: list[Any] = []
    for listener in list(plugins().callbacks["on_query_completions"]):
        answer = _trap("on_query_completions", listener.on_query_completions, view, prefix, locations)
        if isinstance(answer, tuple):  # (completions, flags)
            answer = answer[0]
        if isinstance(answer, sublime.CompletionList):  # filled now, or later by `set_completions`
            offered.append(answer)
        elif isinstance(answer, list):
            offered.extend(answer)
    return offered


def completions_shown(view: sublime.View, prefix: str, locations: list[int], timeout: float = 30.0) -> list[Any]:
    """What the auto-complete popup shows: `query_completions`, with each CompletionList's items
    once its `set_completions` came (the main thread runs meanwhile, as Sublime's does)."""
    from . import control

    answers = query_completions(view, prefix, locations)
    lists = [a for a in answers if isinstance(a, sublime.CompletionList)]
    control.pump_until(lambda: all(c._filled.is_set() for c in lists), timeout, "set_completions")
    shown: list[Any] = []
    for answer in answers:
        if isinstance(answer, sublime.CompletionList):
            shown.extend(answer.completions or [])
        else:
            shown.append(answer)
    return shown


# -- commands --


def _json_args(args: Any) -> dict[str, Any] | None:
    if args is None:
        return None
    copied = sublime._json_copy(args, "command arguments")
    if not isinstance(copied, dict):
        raise TypeError("command arguments must be a dict")
    return copied


def _find(classes: list[type], name: str) -> type | None:
    for cls in reversed(classes):  # the most recently loaded definition wins
        try:
            if cls.name(cls.__new__(cls)) == name:
                return cls
        except Exception:
            continue
    return None


def _instance(key: int, cls: type, *args: Any) -> Any:
    state = plugins()
    instance = state.instances.get((key, cls))
    if instance is None:
        instance = cls(*args)
        state.instances[(key, cls)] = instance
    return instance


def _rewrite(hook: str, target: Any, name: str, args: dict[str, Any] | None, vel: bool) -> tuple[str, Any]:
    listeners: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
    if vel:
        listeners += [
            (vel_.on_text_command, (name, args)) for vel_ in _check_view_listeners(target) if hasattr(vel_, hook)
        ]
    listeners += [(getattr(el, hook), (target, name, args)) for el in plugins().callbacks[hook]]
    for function, call_args in listeners:
        result = _trap(hook, function, *call_args)
        if isinstance(result, tuple):
            return result[0], _json_args(result[1]) if len(result) > 1 else None
        if result:
            return str(result), None
    return name, args


def _log(target: str, name: str, args: Any) -> None:
    _host().command_log.append((target, name, args))


def run_application_command(name: str, args: Any) -> None:
    host = _host()
    host.ui_call(f"sublime.run_command({name!r})")
    args = _json_args(args)
    cls = _find(plugins().application_commands, name)
    if cls is not None:
        command = _instance(0, cls)
        if _trap("is_enabled", command._ask, "is_enabled", args):
            _log("app", name, args)
            _trap(name, command._run, 0, args)
        return
    builtin = BUILTIN_APPLICATION.get(name)
    if builtin is not None:
        _log("app", name, args)
        builtin(args or {})
        return
    host.unknown_commands.append(("app", name, args))


def run_window_command(window_id: int, name: str, args: Any) -> None:
    host = _host()
    host.ui_call(f"Window.run_command({name!r})")
    args = _json_args(args)
    window = sublime.Window(window_id)
    if not window.is_valid():
        return
    if not _is_window_command(name):
        view = window.active_view()
        if view is not None and _is_text_command(name):
            run_text_command(view.view_id, name, args)  # dispatched "via input focus"
        elif _find(plugins().application_commands, name) or name in BUILTIN_APPLICATION:
            run_application_command(name, args)
        else:
            host.unknown_commands.append(("window", name, args))
        return
    name, args = _rewrite("on_window_command", window, name, args, vel=False)
    cls = _find(plugins().window_commands, name)
    if cls is not None:
        command = _instance(window_id, cls, window)
        if not _trap("is_enabled", command._ask, "is_enabled", args):
            return
        _log("window", name, args)
        _trap(name, command._run, 0, args)
    elif name in BUILTIN_WINDOW:
        _log("window", name, args)
        BUILTIN_WINDOW[name](window, args or {})
    elif _is_text_command(name) and window.active_view() is not None:
        run_text_command(window.active_view().view_id, name, args)  # type: ignore[union-attr]
        return
    else:
        host.unknown_commands.append(("window", name, args))
        return
    if window.is_valid():
        for listener in list(plugins().callbacks["on_post_window_command"]):
            _trap("on_post_window_command", listener.on_post_window_command, window, name, args)


def _is_window_command(name: str) -> bool:
    if _find(plugins().window_commands, name) is not None:
        return True  # a loaded package's command (e.g. a Terminus package loaded as a plugin)
    if name in TERMINUS_WINDOW and not _host().terminus_installed:
        return False
    return name in BUILTIN_WINDOW


def _is_text_command(name: str) -> bool:
    return _find(plugins().text_commands, name) is not None or name in BUILTIN_TEXT


def run_text_command(view_id: int, name: str, args: Any) -> None:
    host = _host()
    host.ui_call(f"View.run_command({name!r})")
    args = _json_args(args)
    view = sublime.View(view_id)
    data = host.views.get(view_id)
    if data is None or not data.valid:
        return
    name, args = _rewrite("on_text_command", view, name, args, vel=True)
    cls = _find(plugins().text_commands, name)
    builtin = BUILTIN_TEXT.get(name)
    if cls is None and builtin is None:
        host.unknown_commands.append(("text", name, args))
        return
    buffer = host.buffers[data.buffer_id]
    before = (buffer.change_count, list(data.selection))
    outer_token = data.edit_token
    token = next(host.edit_tokens)
    outer_marker = buffer.undo_marker
    buffer.undo_marker = len(buffer.undo)
    try:
        if cls is not None:
            command = _instance(view_id, cls, view)
            if not _trap("is_enabled", command._ask, "is_enabled", args):
                return
            _log("text", name, args)
            _trap(name, command._run, token, args)
        else:
            _log("text", name, args)
            edit = view.begin_edit(token, name, args)
            try:
                _trap(name, builtin, view, edit, args or {})  # type: ignore[misc]
            finally:
                view.end_edit(edit)
    finally:
        if data.valid:
            data.edit_token = outer_token
        buffer.undo_marker = outer_marker
    if not data.valid:
        return
    if buffer.change_count != before[0]:
        view_event("on_modified", view_id)
    if data.selection != before[1]:
        view_event("on_selection_modified", view_id)
    for listener in list(_check_view_listeners(view)):
        if hasattr(listener, "on_post_text_command"):
            _trap("on_post_text_command", listener.on_post_text_command, name, args)
    for listener in list(plugins().callbacks["on_post_text_command"]):
        _trap("on_post_text_command", listener.on_post_text_command, view, name, args)


def remember_undo(buffer: _state.BufferData) -> None:
    """The first change a command makes to a buffer records one undo step for the whole command; a
    new change drops what could be redone."""
    view = _host().views[buffer.views[0]] if buffer.views else None
    marker = buffer.undo_marker
    if marker is not None and len(buffer.undo) > marker:
        return  # this command already recorded its step
    buffer.undo.append((buffer.text, list(view.selection) if view is not None else []))
    buffer.redo.clear()


# -- built-in commands --


def _insert(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    characters = str(args.get("characters", ""))
    regions = list(view.sel())
    for region in reversed(regions):
        view.replace(edit, sublime.Region(region.begin(), region.end()), characters)
    if any(not r.empty() for r in regions):  # typing over a selection leaves a caret after the text typed
        carets, shift = [], 0
        for region in regions:
            carets.append(sublime.Region(region.begin() + shift + len(characters)))
            shift += len(characters) - region.size()
        view.sel().clear()
        view.sel().add_all(carets)


def _append(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    buffer = _host().buffers[_host().views[view.view_id].buffer_id]
    read_only = buffer.read_only
    if args.get("force"):
        buffer.read_only = False
    try:
        selection = list(_host().views[view.view_id].selection)
        view.insert(edit, view.size(), str(args.get("characters", "")))
        _host().views[view.view_id].selection = selection  # append leaves the selection alone
    finally:
        buffer.read_only = read_only


def _save(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    if _host().save_finishes_later:  # `control.save_finishes_later(True)`: written on a later turn
        sublime.set_timeout(lambda: _save_view(view) if view.is_valid() else None)
        return
    _save_view(view)


def _save_view(view: sublime.View) -> None:
    host = _host()
    buffer = host.buffers[host.views[view.view_id].buffer_id]
    if buffer.file_name is None and not _ask_where_to_save(view):
        return  # the user cancelled the Save As dialog
    _write(view)


def _ask_where_to_save(view: sublime.View) -> bool:
    """The Save As dialog: the user's queued answer (a path) becomes the buffer's file; none cancels."""
    host = _host()
    buffer = host.buffers[host.views[view.view_id].buffer_id]
    answer = host.dialog_answers.pop(0) if host.dialog_answers else None
    host.dialogs.append(_state.Dialog("save_as", buffer.name or buffer.file_name or "untitled", answer))
    if not isinstance(answer, str):
        return False
    buffer.file_name = os.path.abspath(answer)
    return True


def _write(view: sublime.View) -> None:
    host = _host()
    buffer = host.buffers[host.views[view.view_id].buffer_id]
    assert buffer.file_name is not None
    view_event("on_pre_save", view.view_id)
    newline = {"Windows": "\r\n", "CR": "\r"}.get(buffer.line_endings, "\n")
    encoding = "utf-8-sig" if buffer.encoding == "UTF-8 with BOM" else "utf-8"
    os.makedirs(os.path.dirname(buffer.file_name), exist_ok=True)
    with open(buffer.file_name, "w", encoding=encoding, newline="") as handle:
        handle.write(buffer.text.replace("\n", newline))
    buffer.saved_change_count = buffer.change_count
    view_event("on_post_save", view.view_id)


def _revert(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    """File › Revert File: the buffer's text again from its file, with no unsaved changes left
    (undoable, as an edit); `on_revert` fires. A buffer with no file on disk is left as it is."""
    host = _host()
    buffer = host.buffers[host.views[view.view_id].buffer_id]
    if buffer.file_name is None or not os.path.isfile(buffer.file_name):
        return
    view.replace(edit, sublime.Region(0, view.size()), sublime._file_text(buffer))
    buffer.saved_change_count = buffer.change_count
    view_event("on_revert", view.view_id)


def _prompt_save_as(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    if _ask_where_to_save(view):
        _write(view)


def _save_all(window: sublime.Window, args: dict[str, Any]) -> None:
    """File › Save All: every view with unsaved changes is saved (an untitled one asks where). A scratch
    buffer never reports as dirty (View.set_scratch), so it is never saved nor asked about."""
    for view in window.views():
        if view.is_valid() and view.is_dirty():
            _save_view(view)  # saved by the application itself: no text command, so no listener rewrites it


def _hunk_starts(view: sublime.View) -> list[int]:
    buffer = _host().buffers[_host().views[view.view_id].buffer_id]
    if buffer.reference is None:
        return []
    old, new = buffer.reference.split("\n"), buffer.text.split("\n")
    rows = [j1 for tag, _i1, _i2, j1, _j2 in difflib.SequenceMatcher(None, old, new).get_opcodes() if tag != "equal"]
    return [view.text_point(min(row, len(new) - 1), 0) for row in rows]


def _next_modification(view: sublime.View, edit: sublime.Edit, args: dict[str, Any], forward: bool = True) -> None:
    starts = _hunk_starts(view)
    if not starts:
        return
    caret = view.sel()[0].b if len(view.sel()) else 0
    line_start = view.line(caret).begin()
    if forward:
        target = next((p for p in starts if p > line_start), starts[0])
    else:
        target = next((p for p in reversed(starts) if p < line_start), starts[-1])
    data = _host().views[view.view_id]
    data.selection = [(target, target)]


def _revert_modification(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    """History › Revert Hunk: the hunk under the caret (lines that differ from the reference
    document, or the place where reference lines were deleted) gets the reference's lines back, as
    one undoable edit. Nothing happens outside a hunk or without a reference."""
    buffer = _host().buffers[_host().views[view.view_id].buffer_id]
    if buffer.reference is None or not len(view.sel()):
        return
    old, new = buffer.reference.split("\n"), buffer.text.split("\n")
    row = view.rowcol(view.sel()[0].b)[0]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal" and j1 <= row < max(j2, j1 + 1):
            text = "\n".join(new[:j1] + old[i1:i2] + new[j2:])
            view.replace(edit, sublime.Region(0, view.size()), text)
            point = view.text_point(j1, 0)
            _host().views[view.view_id].selection = [(point, point)]
            return


def _undo(view: sublime.View, edit: sublime.Edit, args: dict[str, Any], back: bool = True) -> None:
    """Undo (and redo) are changes like any other: "Each time the buffer is modified, the change count
    is incremented" ([stubs] `View.change_count`), and `on_modified` follows (sublimelsp/LSP relies on
    both to resync a document after an undo)."""
    host = _host()
    data = host.views[view.view_id]
    buffer = host.buffers[data.buffer_id]
    source, target = (buffer.undo, buffer.redo) if back else (buffer.redo, buffer.undo)
    if not source:
        return
    text, selection = source.pop()
    target.append((buffer.text, list(data.selection)))
    buffer.text = text
    buffer.change_count += 1
    data.selection = selection or [(0, 0)]


# Default's line commands, as each changes the text (Edit › Line, Edit › Comment, Default's
# `Delete Line.sublime-macro`: expand_selection to line, add_to_kill_ring, left_delete; `Delete to
# Hard BOL.sublime-macro`: move_to bol extending, add_to_kill_ring, left_delete). A macro's commands
# run as one, so `on_text_command` sees `run_macro_file`.


def _caret_lines(view: sublime.View) -> list[sublime.Region]:
    return [view.line(r.begin()) for r in reversed(list(view.sel()))]


def _indent(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    for line in _caret_lines(view):
        view.insert(edit, line.begin(), "\t")


def _toggle_comment(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    for line in _caret_lines(view):  # Markdown's comment is HTML's block comment
        view.insert(edit, line.end(), " -->")
        view.insert(edit, line.begin(), "<!-- ")


def _duplicate_line(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    for line in _caret_lines(view):
        view.insert(edit, line.begin(), view.substr(line) + "\n")


def _join_lines(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    for line in _caret_lines(view):
        if line.end() < view.size():
            following = view.line(line.end() + 1)
            rest = view.substr(following).lstrip()
            view.replace(edit, sublime.Region(line.end(), following.end()), " " + rest)


def _swap_line(view: sublime.View, edit: sublime.Edit, args: dict[str, Any], up: bool) -> None:
    for line in _caret_lines(view):
        if (up and line.begin() == 0) or (not up and line.end() >= view.size()):
            continue
        other = view.line(line.begin() - 1) if up else view.line(line.end() + 1)
        first, second = (other, line) if up else (line, other)
        both = sublime.Region(first.begin(), second.end())
        view.replace(edit, both, view.substr(second) + "\n" + view.substr(first))


def _run_macro_file(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    name = str(args.get("file", "")).rsplit("/", 1)[-1]
    for region in reversed(list(view.sel())):
        if name == "Delete Line.sublime-macro":
            view.erase(edit, view.full_line(region.begin()))
        elif name == "Delete to Hard BOL.sublime-macro":
            view.erase(edit, sublime.Region(view.line(region.begin()).begin(), region.end()))


def _hide_ui(what: str) -> Callable[[sublime.View, sublime.Edit, dict[str, Any]], None]:
    """Default's Escape (and Enter on a completion) commands: each closes what its context saw."""

    def run(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
        setattr(_host().views[view.view_id], what, False)

    return run


def _single_selection(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    data = _host().views[view.view_id]
    data.selection = data.selection[:1]


def _toggle_inline_diff(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    data = _host().views[view.view_id]
    data.inline_diff = not data.inline_diff


def _select_all(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    _host().views[view.view_id].selection = [(0, view.size())]


def _copy(view: sublime.View, edit: sublime.Edit, args: dict[str, Any]) -> None:
    # The selected text, one selection a line; with none selected, the carets' lines
    # ("copy_with_empty_selection": true, the default).
    selected = [r for r in view.sel() if not r.empty()]
    regions = selected or [view.full_line(r) for r in view.sel()]
    sublime.set_clipboard(("\n" if selected else "").join(view.substr(r) for r in regions))


BUILTIN_TEXT: dict[str, Callable[[sublime.View, sublime.Edit, dict[str, Any]], None]] = {
    "insert": _insert,
    "append": _append,
    "save": _save,
    "revert": _revert,
    "prompt_save_as": _prompt_save_as,
    "next_modification": _next_modification,
    "prev_modification": lambda v, e, a: _next_modification(v, e, a, forward=False),
    "undo": _undo,
    "soft_undo": _undo,
    "redo": lambda v, e, a: _undo(v, e, a, back=False),
    "redo_or_repeat": lambda v, e, a: _undo(v, e, a, back=False),
    "soft_redo": lambda v, e, a: _undo(v, e, a, back=False),
    "toggle_inline_diff": _toggle_inline_diff,
    "revert_modification": _revert_modification,
    "select_all": _select_all,
    "hide_auto_complete": _hide_ui("auto_complete_visible"),
    "commit_completion": _hide_ui("auto_complete_visible"),
    "hide_popup": _hide_ui("popup_visible"),
    "clear_fields": _hide_ui("has_fields"),
    "single_selection": _single_selection,
    "indent": _indent,
    "toggle_comment": _toggle_comment,
    "duplicate_line": _duplicate_line,
    "join_lines": _join_lines,
    "swap_line_up": lambda v, e, a: _swap_line(v, e, a, up=True),
    "swap_line_down": lambda v, e, a: _swap_line(v, e, a, up=False),
    "run_macro_file": _run_macro_file,
    "copy": _copy,
}


def _set_layout(window: sublime.Window, args: dict[str, Any]) -> None:
    window.set_layout(args)


def _focus_group(window: sublime.Window, args: dict[str, Any]) -> None:
    window.focus_group(int(args.get("group", 0)))


def _show_panel(window: sublime.Window, args: dict[str, Any]) -> None:
    data = _host().windows[window.window_id]
    panel = str(args.get("panel", ""))
    if args.get("toggle") and data.active_panel == panel:
        data.active_panel = None
    elif panel in data.panels or not panel.startswith("output."):
        data.active_panel = panel


def _hide_panel(window: sublime.Window, args: dict[str, Any]) -> None:
    data = _host().windows[window.window_id]
    data.active_panel = None
    data.focused_panel_view = None


def _clone_active(window: sublime.Window) -> None:
    view = window.active_view()
    if view is not None:
        sublime._clone_view(view.view_id)


def _hide_overlay(window: sublime.Window, args: dict[str, Any]) -> None:
    _host().windows[window.window_id].overlay_visible = False


def _close_window(window: sublime.Window, args: dict[str, Any]) -> None:
    """`on_pre_close_window`, then every view closes (with its events), then the window is gone."""
    host = _host()
    if host.pre_close_window_fires:  # sublimehq/sublime_text#5148: never on macOS and Windows
        window_event("on_pre_close_window", window.window_id)
    for view in window.views():
        if view.is_valid():
            view.close()
    data = host.windows.get(window.window_id)
    if data is None:
        return
    if any(group for group in data.groups):
        return  # the user cancelled a save prompt: the window stays
    for panel in list(data.panels.values()):
        sublime._destroy_view(panel)
    data.valid = False
    del host.windows[window.window_id]
    if window.window_id in host.window_order:
        host.window_order.remove(window.window_id)


def _close(window: sublime.Window, args: dict[str, Any]) -> None:
    view = window.active_view()
    if view is not None:
        view.close()


def _prompt_add_folder(window: sublime.Window, args: dict[str, Any]) -> None:
    host = _host()
    answer = host.dialog_answers.pop(0) if host.dialog_answers else None
    host.dialogs.append(_state.Dialog("select_folder", "Add Folder to Project", answer))
    if isinstance(answer, str):
        data = window.project_data() or {}
        folders = data.setdefault("folders", [])
        folders.append({"path": answer})
        window.set_project_data(data)


def _remove_folder(window: sublime.Window, args: dict[str, Any]) -> None:
    dirs = {os.path.normcase(os.path.abspath(d)) for d in args.get("dirs", [])}
    data = window.project_data() or {}
    kept = []
    for folder, absolute in zip(data.get("folders", []), window.folders(), strict=False):
        if os.path.normcase(absolute) not in dirs:
            kept.append(folder)
    data["folders"] = kept
    window.set_project_data(data)


def _terminus_open(window: sublime.Window, args: dict[str, Any]) -> None:
    """Terminus' `terminus_open`: the terminal view appears a moment later (Terminus runs async)."""
    host = _host()
    host.terminus_calls.append(("terminus_open", args))
    window_id = window.window_id

    def create() -> None:
        target = sublime.Window(window_id)
        data = host.windows.get(window_id)
        if data is None or not target.is_valid():
            return
        panel_name = args.get("panel_name") or ("Terminus" if args.get("show_in_panel") else None)
        if panel_name:
            view = target.create_output_panel(panel_name)
            target.run_command("show_panel", {"panel": f"output.{panel_name}"})
        else:
            view = sublime._create_view(data, data.active_group)
        view.set_name(str(args.get("title") or "Terminus"))
        view.settings().set("terminus_view", True)
        if args.get("tag"):
            view.settings().set("terminus_view.tag", args["tag"])
        view.set_scratch(True)
        if args.get("focus", True):
            target.focus_view(view)

    sublime.set_timeout(create)


def _terminus_send_string(window: sublime.Window, args: dict[str, Any]) -> None:
    _host().terminus_calls.append(("terminus_send_string", args))


TERMINUS_WINDOW = {"terminus_open", "terminus_send_string"}

BUILTIN_WINDOW: dict[str, Callable[[sublime.Window, dict[str, Any]], None]] = {
    "set_layout": _set_layout,
    "focus_group": _focus_group,
    "show_panel": _show_panel,
    "hide_panel": _hide_panel,
    "hide_overlay": _hide_overlay,
    "clone_file": lambda window, args: _clone_active(window),
    "close_window": _close_window,
    "close": _close,
    "prompt_add_folder": _prompt_add_folder,
    "remove_folder": _remove_folder,
    "save_all": _save_all,
    "terminus_open": _terminus_open,
    "terminus_send_string": _terminus_send_string,
}


def _new_window(args: dict[str, Any], folders: list[str] | None = None, project_file: str | None = None) -> None:
    """A new window; `folders` / `project_file` when it opens with a folder or project (not API)."""
    host = _host()
    with host.lock:
        window = _state.WindowData(
            host.new_id(),
            groups=[[]],
            selected=[None],
            layout={"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]},
        )
        window.settings_id = sublime._new_settings()
        if folders is not None or project_file is not None:
            window.project_data = {"folders": [{"path": f} for f in folders or []]}
            window.project_file = project_file
        host.windows[window.id] = window
    sublime._focus_window(window.id)
    window_event("on_new_window", window.id)


def _open_url(args: dict[str, Any]) -> None:
    """Sublime's `open_url`: the URL goes to the system's browser; here it is only recorded."""
    _host().opened_urls.append(str(args.get("url", "")))


BUILTIN_APPLICATION: dict[str, Callable[[dict[str, Any]], None]] = {"new_window": _new_window, "open_url": _open_url}

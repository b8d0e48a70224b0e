"""Lifecycle in the editor: a server and discovery file per window, kept accurate, gone with the window
or the package; loading does no socket work on Sublime's thread."""

from __future__ import annotations

import ast
import os
import socket
import sys
import threading
from typing import Any

import pytest

from companion.runtime import THREAD_NAME
from tests.sublime_editor.conftest import Companion, pkg, write
from tests.sublime_fake import _state, control, sublime


def port_closed(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return True
    return False


def test_each_window_gets_its_own_server_and_discovery_file_with_its_folders(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    other = os.path.join(str(tmp_path), "other")
    second_folder = os.path.join(str(tmp_path), "second")
    os.makedirs(other)
    os.makedirs(second_folder)
    first = control.new_window([workspace, second_folder])
    empty = control.new_window()
    companion.load()
    third = control.new_window([other])  # opened after the package loaded
    handles = [companion.ready(w) for w in (first, empty, third)]
    assert len({h.port for h in handles}) == 3
    assert companion.discovery_of(first)["workspacePath"] == os.pathsep.join([workspace, second_folder])
    assert companion.discovery_of(empty)["workspacePath"] == ""
    assert companion.discovery_of(third)["workspacePath"] == other
    assert len(companion.discovery_files()) == 3
    for window, handle in zip((first, empty, third), handles, strict=True):
        data = companion.discovery_of(window)
        assert data["port"] == handle.port and data["authToken"] == handle.token
        assert data["ideInfo"] == {"name": "sublimetext", "displayName": "Sublime Text"}


def test_an_older_build_says_once_that_it_needs_4205_and_starts_nothing(
    companion: Companion, workspace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    control.set_version("4200")  # its plugin host for this package is Python 3.3
    control.new_window([workspace])
    ours = f"{control.PACKAGE_NAME}.companion"
    for name in [n for n in sys.modules if n == ours or n.startswith(ours + ".")]:
        del sys.modules[name]  # a fresh 3.3 host has none of them (earlier tests imported them here)
    control.load_plugin()
    control.settle()
    assert control.status_messages() == ["Gemini Companion needs Sublime Text build 4205 or newer (this is 4200)."]
    console = capsys.readouterr().out
    assert "the companion needs build 4205 or newer" in console and "Help > Check for Updates" in console
    assert companion.discovery_files() == {}
    assert not [t for t in threading.enumerate() if t.name == THREAD_NAME]
    assert not [name for name in sys.modules if name.startswith(ours)]  # nothing newer than 3.3 was imported
    control.unload_plugin()


def test_the_plugin_module_parses_as_python_3_3_so_an_old_build_can_say_why() -> None:
    """Before the build check nothing newer than Python 3.3 syntax may appear: no f-strings,
    annotations, `async`, walrus, keyword-only markers or `from __future__ import annotations`."""
    with open(os.path.join(control.REPO_ROOT, "plugin.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    newer = (ast.JoinedStr, ast.AnnAssign, ast.NamedExpr, ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)
    found = [type(node).__name__ for node in ast.walk(tree) if isinstance(node, newer)]
    found += [f"annotation on {node.arg}" for node in ast.walk(tree) if isinstance(node, ast.arg) and node.annotation]
    found += ["return annotation" for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.returns]
    found += [f"from {n.module}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    assert found == []


def test_plugin_loaded_binds_nothing_on_the_host_thread(
    companion: Companion, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    binders: list[str] = []
    original = socket.socket.bind

    def recording_bind(self: socket.socket, address: Any) -> None:
        binders.append(threading.current_thread().name)
        original(self, address)

    monkeypatch.setattr(socket.socket, "bind", recording_bind)
    window = control.new_window([workspace])
    companion.load()
    # The loop thread may already have bound the window's socket (it listens before the server stack
    # loads), but never the host thread.
    assert threading.current_thread().name not in binders
    companion.ready(window)
    assert binders and set(binders) == {pkg("runtime").THREAD_NAME}


def test_loading_at_editor_startup_serves_the_windows_once_the_api_is_ready(
    companion: Companion, workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load(startup=True)
    assert companion.ready(window).folders == [workspace]


def test_folder_changes_and_projects_rewrite_the_discovery_file(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    added = os.path.join(str(tmp_path), "added")
    project_folder = os.path.join(str(tmp_path), "project")
    os.makedirs(added)
    os.makedirs(project_folder)
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)

    def workspace_path_becomes(expected: str) -> None:
        control.pump_until(lambda: companion.discovery_of(window)["workspacePath"] == expected, 20, expected)

    control.add_folder(window, added)
    workspace_path_becomes(os.pathsep.join([workspace, added]))
    control.remove_folder(window, workspace)
    workspace_path_becomes(added)
    control.open_project(window, os.path.join(project_folder, "p.sublime-project"), [project_folder])
    workspace_path_becomes(project_folder)
    assert len(companion.discovery_files()) == 1  # rewritten in place, not a second file


def test_folders_changed_without_any_event_reach_the_discovery_file_within_seconds(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    # Drag and drop onto the side bar, `subl -a DIR` and another package's set_project_data change
    # the folders with no window command and no event; the focus stays where it was.
    dropped = os.path.join(str(tmp_path), "dropped")
    os.makedirs(dropped)
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    control.settle()
    window.set_project_data({"folders": [{"path": workspace}, {"path": dropped}]})
    expected = os.pathsep.join([workspace, dropped])
    # One poll (1 s) and a rewrite on the loop thread; bench/bench_adapter.py measures the delay.
    control.pump_until(lambda: companion.discovery_of(window)["workspacePath"] == expected, 10, expected)


def test_a_window_command_that_changes_no_folder_reads_neither_the_project_nor_the_settings(
    companion: Companion, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    control.settle()
    reads: list[str] = []
    project_data, settings_get = sublime.Window.project_data, sublime.Settings.get

    def counted_project_data(self: sublime.Window) -> Any:
        if threading.current_thread() is threading.main_thread():  # the test thread plays Sublime's
            reads.append("project_data")
        return project_data(self)

    def counted_get(self: sublime.Settings, key: str, default: Any = None) -> Any:
        if threading.current_thread() is threading.main_thread():
            reads.append(key)
        return settings_get(self, key, default)

    monkeypatch.setattr(sublime.Window, "project_data", counted_project_data)
    monkeypatch.setattr(sublime.Settings, "get", counted_get)
    window.run_command("show_panel", {"panel": "console"})  # on_post_window_command, main thread
    window.run_command("hide_panel")
    assert reads == []  # a large project's data is not copied after every command
    added = os.path.join(workspace, "added")
    os.makedirs(added)
    control.add_folder(window, added)  # a command that changes the folders still shows at once
    assert "project_data" in reads
    control.pump_until(lambda: companion.discovery_of(window)["workspacePath"] == os.pathsep.join([workspace, added]))


def test_closing_a_window_removes_its_server_and_file_only(companion: Companion, workspace: str) -> None:
    keep = control.new_window([workspace])
    close = control.new_window()
    companion.load()
    kept_handle, closed_handle = companion.ready(keep), companion.ready(close)
    closed_path = closed_handle.discovery_path
    control.close_window(close)
    control.pump_until(lambda: not os.path.exists(closed_path), 20, "the closed window's discovery file to go")
    assert companion.registry().get(close) is None
    assert os.path.exists(kept_handle.discovery_path)
    control.pump_until(lambda: port_closed(closed_handle.port), 20, "the closed window's server to stop")
    assert not port_closed(kept_handle.port)


def test_a_window_closed_without_its_event_loses_its_server_discovery_and_lock_files(
    companion: Companion, workspace: str
) -> None:
    # macOS and Windows since build 4126: closing a window sends no on_pre_close_window (#5148).
    control.window_close_event(False)
    keep = control.new_window([workspace])
    close = control.new_window([workspace])
    companion.load()
    kept, closed = companion.ready(keep), companion.ready(close)
    assert closed.lock_path and os.path.exists(closed.lock_path)
    control.close_window(close)
    # The once-a-second look at sublime.windows() finds it gone (bench_adapter.py times the delay).
    control.pump_until(
        lambda: not os.path.exists(closed.discovery_path) and not os.path.exists(closed.lock_path),
        20,
        "the closed window's discovery and lock files to go",
    )
    control.pump_until(lambda: port_closed(closed.port), 20, "the closed window's server to stop")
    assert companion.registry().get(close) is None
    assert os.path.exists(kept.discovery_path) and os.path.exists(kept.lock_path)
    assert not port_closed(kept.port)


def test_a_close_cancelled_at_the_save_prompt_keeps_the_window_served(companion: Companion, workspace: str) -> None:
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    view = control.open_file(window, write(workspace, "a.txt", "a\n"))
    control.type_text(view, "unsaved ")
    control.answer_dialogs(sublime.DialogResult.CANCEL)  # "Save changes to a.txt?" → Cancel
    control.close_window(window)  # on_pre_close_window fires first, then the prompt
    assert window.is_valid() and view.is_valid()
    control.settle()
    companion.registry().reconcile()  # what the once-a-second look does (the test thread is the main thread)
    assert companion.registry().get(window).handle is handle  # the same server, never restarted
    assert os.path.exists(handle.discovery_path) and os.path.exists(handle.lock_path)
    assert not port_closed(handle.port)


def test_plugin_unloaded_stops_every_server_and_thread(companion: Companion, workspace: str) -> None:
    windows = [control.new_window([workspace]), control.new_window()]
    companion.load()
    ports = [companion.ready(w).port for w in windows]
    companion.unload()  # returns at once: the loop thread stops the servers on its own
    control.pump_until(lambda: not [t for t in threading.enumerate() if t.name == THREAD_NAME], 30, "the loop")
    assert companion.discovery_files() == {}
    assert all(port_closed(port) for port in ports)


def test_on_exit_leaves_no_discovery_file_and_makes_no_api_call(
    editor: _state.Host, workspace: str, tmp_path: Any
) -> None:
    companion = Companion(os.path.join(str(tmp_path), "tmp", "gemini", "ide"))
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    control.open_file(window, write(workspace, "a.txt", "a\n"))
    control.settle()
    assert len(companion.discovery_files()) == 1
    control.exit_editor()  # Sublime quits: on_exit, no plugin_unloaded
    assert companion.discovery_files() == {}
    assert not [t for t in threading.enumerate() if t.name == pkg("runtime").THREAD_NAME]
    assert control.violations() == []
    assert control.errors() == []

"""The status-bar item of each window, and "Gemini Companion: Status and Troubleshooting"."""

from __future__ import annotations

import os
import re
import stat
import sys
import types
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, requires, version
from typing import Any

from companion import doctor
from tests.sublime_editor.conftest import Companion, ThreadedClient, write
from tests.sublime_fake import control, sublime
from tests.workflow.conftest import SETTINGS, status_of


def wait_status(view: sublime.View, text: str, timeout: float = 30) -> None:
    control.pump_until(lambda: status_of(view) == text, timeout, f"status {text!r} (now {status_of(view)!r})")


def test_status_bar_per_window_waiting_connected_count_paused_and_hidden(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str, tmp_path: Any
) -> None:
    other = os.path.join(str(tmp_path), "other")
    os.makedirs(other)
    window = control.new_window([workspace])
    view = control.open_file(window, write(workspace, "a.py", "a\n"))
    second = control.new_window([other])
    other_view = control.open_file(second, write(other, "b.py", "b\n"))
    companion.load()
    companion.ready(window)
    companion.ready(second)
    wait_status(view, "Gemini ○ · Claude ○")
    wait_status(other_view, "Gemini ○ · Claude ○")

    first_client = clients(window)
    wait_status(view, "Gemini ● · Claude ○")
    second_client = clients(window)
    wait_status(view, "Gemini ● 2 · Claude ○")
    later = control.open_file(window, write(workspace, "later.py", "l\n"))  # a view opened afterwards shows it too
    wait_status(later, "Gemini ● 2 · Claude ○")
    assert status_of(other_view) == "Gemini ○ · Claude ○"  # the other window has no client

    second_client.close()
    wait_status(view, "Gemini ● · Claude ○")
    control.focus(view)
    assert control.run_from_palette(window, "gemini_companion_toggle_sharing")
    wait_status(view, "Gemini · Claude ⏸ paused")
    assert any("paused" in m for m in control.status_messages())
    assert control.run_from_palette(window, "gemini_companion_toggle_sharing")
    wait_status(view, "Gemini ● · Claude ○")

    control.user_settings(SETTINGS, {"show_status_bar": False})
    control.settle()
    assert status_of(view) == status_of(later) == status_of(other_view) == ""
    control.user_settings(SETTINGS, {"show_status_bar": True})
    wait_status(view, "Gemini ● · Claude ○")
    wait_status(other_view, "Gemini ○ · Claude ○")
    first_client.close()
    wait_status(view, "Gemini ○ · Claude ○")


def doctor_text(window: sublime.Window) -> tuple[sublime.View, str]:
    """Run the doctor and wait for its report: the disk is read on a thread of its own, then the
    main thread fills the view."""

    def doctor_views() -> list[sublime.View]:
        return [v for v in window.views() if v.name() == "Gemini Companion: Status"]

    before = {v.id(): v.change_count() for v in doctor_views()}
    assert control.run_from_palette(window, "gemini_companion_status")
    control.pump_until(lambda: any(before.get(v.id()) != v.change_count() for v in doctor_views()), 30, "the report")
    control.settle()
    views = doctor_views()
    assert len(views) == 1, "one doctor view per window, refreshed in place"
    return views[0], views[0].substr(sublime.Region(0, views[0].size()))


def test_doctor_reports_everything_and_never_the_token(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    path = write(workspace, "notes.md", "SECRET SELECTION\n")
    file_view = control.open_file(window, path)
    control.select(file_view, sublime.Region(0, 16))

    view, text = doctor_text(window)  # nobody connected yet
    assert view.is_read_only() and view.is_scratch()
    assert f"Sublime Text build: {sublime.version()}" in text
    assert f"Plugin host Python: {sys.version.split()[0]}" in text
    assert f"Server: listening at http://127.0.0.1:{handle.port}/mcp" in text
    assert f"Discovery file: {handle.discovery_path}" in text
    assert "on disk: yes; owner: you; mode: 600" in text
    assert f"Workspace path: {workspace}" in text
    assert f"Editor PID (named in discovery files): {handle.runtime.editor_pid}" in text
    assert f"-{handle.runtime.editor_pid}-" in os.path.basename(handle.discovery_path)
    assert "Gemini CLI command: gemini" in text
    assert "Temporary folder (Node's os.tmpdir() here): " in text
    assert "Connected clients: none" in text
    assert f"mcp {version('mcp')}" in text and f"uvicorn {version('uvicorn')}" in text
    assert "Terminus: not installed" in text
    assert "No Gemini CLI is connected" in text and "/ide enable" in text
    assert "Package Control: Install Package" in text  # the fix for the missing Terminus
    assert handle.token not in text

    client = clients(window)
    client.wait_context(lambda c: bool(c["workspaceState"]["openFiles"]))
    assert control.run_from_palette(window, "gemini_companion_toggle_sharing")
    client.wait_context(lambda c: c["workspaceState"]["openFiles"] == [])
    assert control.run_from_palette(window, "gemini_companion_toggle_sharing")
    client.wait_context(lambda c: bool(c["workspaceState"]["openFiles"]))
    view, text = doctor_text(window)
    assert "Connected clients: test-client" in text
    assert f"Last context sent (paths only): {path}" in text
    assert "SECRET SELECTION" not in text  # paths only, never what is selected
    assert "No Gemini CLI is connected" not in text
    assert handle.token not in text

    # Problems found get their fix: paused sharing, and a discovery file others can read.
    assert control.run_from_palette(window, "gemini_companion_toggle_sharing")
    os.chmod(handle.discovery_path, 0o644)
    view, text = doctor_text(window)
    assert "Context sharing: paused" in text and "Resume Context Sharing" in text
    assert "mode: 644" in text and "readable by other users" in text
    assert stat.S_IMODE(os.stat(handle.discovery_path).st_mode) == 0o644  # the doctor only reports
    assert handle.token not in text
    assert all(handle.token not in m for m in control.status_messages())
    client.close()


def test_doctor_without_a_folder_and_with_terminus(companion: Companion, terminus: types.ModuleType) -> None:
    window = control.new_window()
    companion.load()
    handle = companion.ready(window)
    _view, text = doctor_text(window)
    assert "Workspace path: (no folder open)" in text
    assert "Open one (File > Open Folder…)" in text
    assert "Terminus: installed" in text and "Terminus is not installed" not in text
    assert handle.token not in text


def test_two_windows_on_the_same_folder_each_say_so_in_the_doctor(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    lone_folder = os.path.join(str(tmp_path), "lone")
    os.makedirs(os.path.join(workspace, "sub"))
    os.makedirs(lone_folder)
    first = control.new_window([workspace])
    nested = control.new_window([os.path.join(workspace, "sub")])  # inside the first window's folder
    lone = control.new_window([lone_folder])
    companion.load()
    for window in (first, nested, lone):
        companion.ready(window)
    _view, text = doctor_text(first)
    assert f"Another Sublime Text window also has {workspace} open" in text and "Open Gemini CLI" in text
    _view, text = doctor_text(nested)
    assert f"also has {os.path.join(workspace, 'sub')} open" in text
    _view, text = doctor_text(lone)
    assert "Another Sublime Text window" not in text


def test_shared_folders_compare_whole_path_components() -> None:
    assert doctor.shared_folders(["/p/app"], [["/p/application"]]) == []  # a prefix of the name is not inside
    assert doctor.shared_folders(["/p/app"], [["/p"]]) == ["/p/app"]
    assert doctor.shared_folders(["/p/app", "/q"], [["/p/app/src"], ["/r"]]) == ["/p/app"]
    assert doctor.shared_folders(["/p/app/"], [["/p/app"]]) == ["/p/app/"]


def test_library_versions_are_the_metadata_versions() -> None:
    """The doctor and the load-time check (on the loop thread) report what importlib.metadata says,
    None for a library that is not installed, and the pydantic-core that the installed pydantic pins."""
    names = (*doctor.LIBRARIES, "no-such-library-gemini")
    expected: dict[str, str | None] = {}
    for name in names:
        try:
            expected[name] = version(name)
        except PackageNotFoundError:
            expected[name] = None
    assert doctor.library_versions(names) == expected
    assert expected["no-such-library-gemini"] is None and expected["mcp"] == "2.3.0"
    (pin,) = [r for r in requires("pydantic") or [] if re.match(r"pydantic[-_]core\s*==", r)]
    assert doctor.library_requirements()["pydantic-core"] == re.sub(r"^pydantic[-_]core\s*", "", pin).strip()

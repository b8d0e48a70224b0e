"""The workspace tools on a window server of the adapter running in the fake Sublime: what they list
follows the window's exclude patterns and the package settings, and write_file goes through the
editor's review with the asking client's name."""

from __future__ import annotations

import errno
import json
import os
from typing import Any

import pytest

from tests.bridge.conftest import (
    TOOLS,
    Companion,
    ThreadedClient,
    banner,
    call_tool,
    proposal_view,
    start_tool,
    text,
    text_of,
    tool_names,
    write,
)
from tests.mcp_tools.standin import install
from tests.sublime_fake import control, sublime

PREFERENCES = "Preferences.sublime-settings"
PACKAGE_SETTINGS = "Gemini Companion.sublime-settings"


def connect(window: sublime.Window, companion: Companion, name: str = "claude-code") -> ThreadedClient:
    handle = companion.ready(window)
    return ThreadedClient(handle.url, handle.token, name)


def listing(client: ThreadedClient) -> list[str]:
    result = call_tool(client, "list_files", {"recursive": True})
    assert not result.is_error, text_of(result)
    return text_of(result).splitlines()


def test_the_window_server_lists_the_tools_and_honours_the_windows_exclude_patterns(
    companion: Companion, workspace: str
) -> None:
    for name in ("src/app.py", "build/out.txt", "generated/gen.py", "notes.log", "keep.txt", "node_modules/m.js"):
        write(workspace, name, "x\n")
    control.user_settings(PREFERENCES, {"folder_exclude_patterns": ["build"], "file_exclude_patterns": []})
    window = control.new_window([workspace])
    # The project overrides Preferences' file patterns and adds its own folder patterns to the folder.
    window.set_project_data(
        {
            "folders": [{"path": workspace, "folder_exclude_patterns": ["generated"]}],
            "settings": {"file_exclude_patterns": ["*.log"]},
        }
    )
    companion.load()
    client = connect(window, companion)
    try:
        assert tool_names(client) == TOOLS
        assert listing(client) == ["keep.txt", "node_modules/m.js", "src/app.py"]
        # The user edits Preferences while the window is open: the next call sees it.
        control.user_settings(PREFERENCES, {"folder_exclude_patterns": ["build", "node_modules"]})
        assert listing(client) == ["keep.txt", "src/app.py"]
        # The project drops its settings (Project › Edit Project, saved): Preferences apply again.
        window.set_project_data({"folders": [{"path": workspace}]})
        control.focus(control.open_file(window, os.path.join(workspace, "keep.txt")))  # any activation re-reads
        control.settle()
        assert listing(client) == ["keep.txt", "notes.log", "generated/gen.py", "src/app.py"]
    finally:
        client.close()


def test_package_settings_set_limits_and_turn_tools_off_and_on(companion: Companion, workspace: str) -> None:
    for index in range(5):
        write(workspace, f"f{index}.txt", "x\n")
    write(workspace, "big.txt", "y" * 3000)
    control.user_settings(
        PACKAGE_SETTINGS, {"list_files_limit": 3, "read_file_limit_kb": 2, "workspace_tools": {"ask_gemini": False}}
    )
    window = control.new_window([workspace])
    companion.load()
    client = connect(window, companion)
    try:
        assert tool_names(client) == TOOLS - {"ask_gemini"}
        port = companion.ready(window).port
        lines = listing(client)
        assert lines[:3] == ["big.txt", "f0.txt", "f1.txt"] and "truncated" in lines[3] and len(lines) == 4
        too_big = call_tool(client, "read_file", {"path": "big.txt"})
        assert too_big.is_error and "over the read limit of 2.0 KB (setting `read_file_limit_kb`)" in text_of(too_big)
        # Settings edited while the window is open apply to the next call, without a restart.
        control.user_settings(
            PACKAGE_SETTINGS, {"list_files_limit": 100, "read_file_limit_kb": 10, "workspace_tools": ["read_file"]}
        )
        assert text_of(call_tool(client, "read_file", {"path": "big.txt"})) == "y" * 3000
        off = call_tool(client, "list_files", {})
        assert off.is_error and "Unknown tool 'list_files'" in text_of(off)  # no longer offered at all
        assert tool_names(client) == {"read_file"}
        control.user_settings(PACKAGE_SETTINGS, {"workspace_tools": {"write_file": False}})
        assert tool_names(client) == TOOLS - {"write_file"}  # ask_gemini came back for clients listing anew
        assert len(listing(client)) == 6
        assert companion.ready(window).port == port  # the server itself did not restart
    finally:
        client.close()


def test_the_shipped_read_limit_is_100_kb_for_files_and_unsaved_buffers(companion: Companion, workspace: str) -> None:
    write(workspace, "at_limit.txt", "a" * 100 * 1024)
    write(workspace, "over.txt", "b" * (100 * 1024 + 1))
    edited = write(workspace, "edited.txt", "small\n")
    window = control.new_window([workspace])
    companion.load()  # no user settings: the package's own defaults apply
    view = control.open_file(window, edited)
    control.type_text(view, "c" * (100 * 1024))  # unsaved, and over the limit together with the file's text
    client = connect(window, companion)
    try:
        assert text_of(call_tool(client, "read_file", {"path": "at_limit.txt"})) == "a" * 100 * 1024
        over = call_tool(client, "read_file", {"path": "over.txt"})
        assert over.is_error and "over the read limit of 100.0 KB" in text_of(over), text_of(over)
        unsaved = call_tool(client, "read_file", {"path": "edited.txt"})
        assert unsaved.is_error and "unsaved buffer" in text_of(unsaved) and "100.0 KB" in text_of(unsaved)
    finally:
        client.close()


@pytest.mark.parametrize("later", [False, True], ids=["saved_on_return", "saved_on_a_later_turn"])
def test_write_file_review_names_the_client_and_accepting_saves_the_open_buffer_undoably(
    companion: Companion, workspace: str, later: bool
) -> None:
    control.save_finishes_later(later)  # whether `save` from code has written the file on return: both
    path = write(workspace, "app.py", "def f():\r\n    return 1\r\n")
    window = control.new_window([workspace])
    companion.load()
    view = control.open_file(window, path)
    control.type_text(view, "# mine\n")  # unsaved: the review shows it, accepting replaces it undoably
    client = connect(window, companion, name="Claude Code")
    try:
        pending = start_tool(client, "write_file", {"path": "app.py", "content": "def f():\n    return 2\n"})
        proposal = proposal_view(window)
        assert "<b>Claude Code</b> proposes a change" in banner(proposal)
        assert "unsaved changes" in banner(proposal)
        control.type_text(proposal, "# reviewed\n")  # the user edits the proposal before accepting
        control.click_link(proposal, "accept")
        result = client.result(pending)
        assert not result.is_error and text_of(result).startswith("Accepted"), text_of(result)
        assert "saved from the editor" in text_of(result) and "edited your proposal" in text_of(result)
        assert view.is_valid() and not view.is_dirty()
        assert text(view) == "# reviewed\ndef f():\n    return 2\n"
        with open(path, "rb") as handle:
            assert handle.read() == b"# reviewed\r\ndef f():\r\n    return 2\r\n"  # CRLF kept by the buffer
        view.run_command("undo")
        assert text(view) == "# mine\ndef f():\r\n    return 1\r\n".replace("\r\n", "\n")  # one undo: the old text
        assert not [v for v in window.views() if v.settings().get("gemini_companion.role")]
    finally:
        client.close()


def test_write_file_to_a_file_not_open_is_atomic_and_rejecting_leaves_files_alone(
    companion: Companion, workspace: str
) -> None:
    path = write(workspace, "notes.txt", "one\r\ntwo\r\n")
    keep = write(workspace, "keep.txt", "original\n")
    window = control.new_window([workspace])
    companion.load()
    client = connect(window, companion, name="claude-desktop")
    try:
        pending = start_tool(client, "write_file", {"path": path, "content": "one\nTWO\n"})
        proposal = proposal_view(window)
        assert "<b>claude-desktop</b>" in banner(proposal)
        control.press_keys(proposal, "ctrl+s")  # Save in the proposal accepts
        result = client.result(pending)
        assert text_of(result).startswith("Accepted") and "written" in text_of(result), text_of(result)
        with open(path, "rb") as handle:
            assert handle.read() == b"one\r\nTWO\r\n"
        assert window.find_open_file(path) is None  # written on disk, not opened
        assert not [n for n in os.listdir(workspace) if n not in ("notes.txt", "keep.txt")]  # no temporary left

        before = os.stat(keep).st_mtime_ns
        rejected = start_tool(client, "write_file", {"path": "keep.txt", "content": "replaced\n"})
        control.close_tab(proposal_view(window))  # closing the proposal rejects
        assert text_of(client.result(rejected)).startswith("Rejected")
        created = start_tool(client, "write_file", {"path": "new/dir/file.txt", "content": "x\n"})
        control.click_link(proposal_view(window), "reject")
        assert text_of(client.result(created)).startswith("Rejected")
        with open(keep, encoding="utf-8") as handle:
            assert handle.read() == "original\n"
        assert os.stat(keep).st_mtime_ns == before
        assert not os.path.exists(os.path.join(workspace, "new"))
    finally:
        client.close()


def test_an_accepted_write_the_disk_refuses_keeps_the_users_text_in_a_new_tab(
    companion: Companion, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(workspace, "notes.txt", "one\n")
    window = control.new_window([workspace])
    companion.load()
    client = connect(window, companion)
    try:
        pending = start_tool(client, "write_file", {"path": "notes.txt", "content": "one\ntwo\n"})
        proposal = proposal_view(window)
        control.type_text(proposal, "# the user's own line\n")

        def read_only_filesystem(*args: object, **kwargs: object) -> None:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

        monkeypatch.setattr(os, "replace", read_only_filesystem)  # the write's final rename fails
        control.click_link(proposal, "accept")
        result = client.result(pending)
        monkeypatch.undo()
        assert result.is_error
        assert "could not be written" in text_of(result) and os.strerror(errno.EROFS) in text_of(result)
        assert "unsaved buffer" in text_of(result)
        with open(path, encoding="utf-8") as handle:
            assert handle.read() == "one\n"  # the file is untouched
        (kept,) = [v for v in window.views() if v.name() == "notes.txt (not written)"]
        assert text(kept) == "# the user's own line\none\ntwo\n"  # the user's edit is not lost
        assert kept.is_dirty() and not kept.is_scratch()  # closing it asks to save
        assert kept.settings().get("default_dir") == workspace
        assert window.active_view() == kept
        assert any("could not write notes.txt" in m for m in control.status_messages())
    finally:
        client.close()


def test_ask_gemini_runs_the_configured_command_and_model_in_the_windows_folder(
    companion: Companion, workspace: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = os.path.join(str(tmp_path), "standin.jsonl")
    monkeypatch.setenv("STANDIN_LOG", log)
    monkeypatch.setenv("STANDIN_PIDS", os.path.join(str(tmp_path), "pids"))
    command = install(os.path.join(str(tmp_path), "bin"))
    control.user_settings(
        PACKAGE_SETTINGS, {"gemini_command": command, "ask_model": "gemini-test-model", "ask_gemini_timeout_seconds": 2}
    )
    window = control.new_window([workspace])
    companion.load()
    client = connect(window, companion)
    try:
        answer = call_tool(client, "ask_gemini", {"prompt": "hello"})
        assert not answer.is_error and text_of(answer) == "echo: hello"
        with open(log, encoding="utf-8") as handle:
            (run,) = [json.loads(line) for line in handle]
        assert run["argv"] == ["--prompt=hello", "-o", "json", "-m", "gemini-test-model"]
        assert os.path.realpath(run["cwd"]) == os.path.realpath(workspace)
        slow = call_tool(client, "ask_gemini", {"prompt": "hang"})
        assert slow.is_error and "within 2 s (setting `ask_gemini_timeout_seconds`)" in text_of(slow)
    finally:
        client.close()

"""Connect Another Agent, end to end: the configuration the command shows is pasted as is into the
SDK's stdio client (as Claude Desktop would run it), which drives `python -m companion bridge` in a
subprocess against the adapter running in the fake Sublime; the test plays the main thread and the
user meanwhile."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters

from tests.bridge.conftest import (
    TOOLS,
    Companion,
    ThreadedStdio,
    banner,
    proposal_view,
    text,
    text_of,
    write,
)
from tests.mcp_tools.standin import install
from tests.sublime_fake import _session, control, sublime

PACKAGE_SETTINGS = "Gemini Companion.sublime-settings"
REPO_ROOT = control.REPO_ROOT


def connect_view(window: sublime.Window) -> sublime.View:
    assert control.run_from_palette(window, "gemini_companion_connect_agent")
    views = [v for v in window.views() if v.settings().get("gemini_companion.connect")]
    assert len(views) == 1
    return views[0]


def checked(view: sublime.View) -> str:
    """The view's text once the background check of the Python has answered."""
    return control.pump_until(
        lambda: text(view) if "checking that it can run" not in text(view) else None, 60, "the Python check"
    )


def desktop_entry(content: str) -> tuple[str, dict[str, Any]]:
    start = content.index('{\n  "mcpServers"')
    config, _end = json.JSONDecoder().raw_decode(content, start)
    ((name, entry),) = config["mcpServers"].items()
    return name, entry


def line_starting(content: str, prefix: str) -> str:
    (line,) = [line.strip() for line in content.splitlines() if line.strip().startswith(prefix)]
    return line


def test_connect_view_shows_real_paths_and_the_token_only_there(
    companion: Companion, workspace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    control.user_settings(PACKAGE_SETTINGS, {"bridge_python": sys.executable, "debug": True})
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    assert control.palette_shows(window, "gemini_companion_connect_agent")
    view = connect_view(window)
    assert view.name() == "Gemini Companion: Connect Another Agent"
    assert view.is_scratch() and view.is_read_only() and view.file_name() is None
    content = checked(view)
    assert f"✓ Python {sys.version_info[0]}.{sys.version_info[1]} runs the bridge" in content
    name, entry = desktop_entry(content)
    assert name == "sublime-workspace"
    assert entry["command"] == sys.executable
    assert entry["args"] == ["-m", "companion", "bridge", "--workspace", workspace]
    assert entry["env"]["PYTHONPATH"] == REPO_ROOT  # where this package runs from: `companion` imports
    assert os.path.isdir(os.path.join(entry["env"]["PYTHONPATH"], "companion"))
    assert entry["env"]["TMPDIR"] == os.environ["TMPDIR"]  # the bridge must read Sublime's discovery folder
    # Claude Code, through the bridge and over HTTP with the window's URL and token.
    bridge_line = shlex.split(line_starting(content, "claude mcp add sublime-workspace -e"))
    assert bridge_line[bridge_line.index("--") + 1 :] == [sys.executable, *entry["args"]]
    assert f"PYTHONPATH={REPO_ROOT}" in bridge_line
    # The token is never in the text (hot exit saves it): masked, and Copy puts it in the clipboard.
    http_line = shlex.split(line_starting(content, "claude mcp add --transport http"))
    assert http_line[5:] == [
        "sublime-workspace",
        handle.url,
        "--header",
        "Authorization: Bearer <token: see Copy below>",
    ]
    assert handle.token not in content
    assert all(handle.token not in p["content"] for p in control.phantoms(view))
    control.click_link(view, "copy")
    copied = shlex.split(sublime.get_clipboard())
    assert copied == [*http_line[:8], f"Authorization: Bearer {handle.token}"]
    assert "the port (server_port) and the token (auth_token) change every time" in content
    # The only place the token appears: not in the console (debug logging on), status bar or context.
    control.settle()
    out = capsys.readouterr()
    assert "window server listening on" in out.out  # the console is captured, with debug logs
    assert handle.token not in out.out + out.err
    assert all(handle.token not in m for m in control.status_messages())
    # Unloading closes the view: its port and token are stale afterwards.
    companion.unload()
    control.settle()
    assert not view.is_valid()


def test_connect_view_explains_a_python_that_cannot_run_the_bridge(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    fake_python = os.path.join(str(tmp_path), "python3")
    with open(fake_python, "w") as handle:
        handle.write("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'mcp'\" >&2\nexit 1\n")
    os.chmod(fake_python, 0o755)
    control.user_settings(PACKAGE_SETTINGS, {"bridge_python": fake_python})
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    content = checked(connect_view(window))
    assert f"{fake_python} (setting bridge_python) — ✗ it cannot run the bridge: ModuleNotFoundError" in content
    assert shlex.join([fake_python, "-m", "pip", "install", "mcp==2.3.0"]) in content


def test_claude_desktop_config_drives_the_bridge_against_the_window(
    companion: Companion,
    workspace: str,
    stdio_clients: Callable[[StdioServerParameters], ThreadedStdio],
    tmp_path: Any,
) -> None:
    control.user_settings(PACKAGE_SETTINGS, {"bridge_python": sys.executable})
    control.user_settings("Preferences.sublime-settings", {"folder_exclude_patterns": ["secret_dir"]})
    write(workspace, "secret_dir/k.txt", "hidden\n")
    keep = write(workspace, "keep.txt", "keep\n")
    app = write(workspace, "app.py", "x = 1\r\n")
    outside = write(str(tmp_path), "outside.txt", "outside\n")
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    _name, entry = desktop_entry(checked(connect_view(window)))
    view = control.open_file(window, app)
    control.type_text(view, "# unsaved\n")
    # Claude Desktop starts the program in a folder of its own, with the entry's command, args and env.
    client = stdio_clients(
        StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"], cwd=str(tmp_path))
    )
    tools = client.result(client.call(lambda s: s.list_tools()))
    assert {t.name for t in tools.tools} == TOOLS
    assert text_of(client.call_tool("list_files", {})).splitlines() == ["app.py", "keep.txt"]
    read = client.call_tool("read_file", {"path": "app.py"})
    assert "unsaved text" in text_of(read) and text_of(read).endswith("# unsaved\nx = 1\n")
    escape = client.call_tool("read_file", {"path": "../outside.txt"})
    assert escape.is_error and "'..' leads outside" in text_of(escape), text_of(escape)

    pending = client.call(lambda s: s.call_tool("write_file", {"path": "app.py", "content": "x = 2\n"}))
    proposal = proposal_view(window)
    assert "<b>claude-desktop-test via stdio bridge</b> proposes a change" in banner(proposal)
    control.click_link(proposal, "accept")
    accepted = client.result(pending)
    assert text_of(accepted).startswith("Accepted"), text_of(accepted)
    with open(app, "rb") as handle:
        assert handle.read() == b"x = 2\r\n"  # saved from the open buffer, which keeps CRLF
    assert not view.is_dirty()

    pending = client.call(lambda s: s.call_tool("write_file", {"path": "keep.txt", "content": "gone\n"}))
    control.click_link(proposal_view(window), "reject")
    assert text_of(client.result(pending)).startswith("Rejected")
    with open(keep, encoding="utf-8") as handle:
        assert handle.read() == "keep\n"
    with open(outside, encoding="utf-8") as handle:
        assert handle.read() == "outside\n"


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links and FIFOs are made with POSIX calls here")
def test_through_the_bridge_every_escape_is_refused_and_ask_gemini_answers(
    companion: Companion,
    workspace: str,
    stdio_clients: Callable[[StdioServerParameters], ThreadedStdio],
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outside_dir = os.path.join(str(tmp_path), "outside")
    outside = write(outside_dir, "outside.txt", "outside\n")
    os.symlink(outside, os.path.join(workspace, "link_out"))
    os.symlink(outside_dir, os.path.join(workspace, "dir_out"))
    os.mkfifo(os.path.join(workspace, "pipe"))
    monkeypatch.setenv("STANDIN_LOG", os.path.join(str(tmp_path), "standin.jsonl"))
    monkeypatch.setenv("STANDIN_PIDS", os.path.join(str(tmp_path), "pids"))
    gemini = install(os.path.join(str(tmp_path), "bin"))
    control.user_settings(PACKAGE_SETTINGS, {"bridge_python": sys.executable, "gemini_command": gemini})
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    _name, entry = desktop_entry(checked(connect_view(window)))
    client = stdio_clients(
        StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"], cwd=str(tmp_path))
    )
    escapes = {
        "../outside/outside.txt": "'..' leads outside",
        outside: "outside the window's folders",
        "file://" + outside: "outside the window's folders",
        "link_out": "symbolic link",
        "dir_out/outside.txt": "symbolic link",
        "dir_out/new.txt": "symbolic link",
        "pipe": "FIFO",
    }
    for path, reason in escapes.items():
        for tool, arguments in (("read_file", {"path": path}), ("write_file", {"path": path, "content": "PWNED\n"})):
            result = client.call_tool(tool, arguments)
            assert result.is_error and reason in text_of(result), (tool, path, text_of(result))
            assert "outside\n" not in text_of(result)
    assert not [v for v in window.views() if v.settings().get("gemini_companion.role")]  # no review was offered
    assert sorted(os.listdir(outside_dir)) == ["outside.txt"]
    with open(outside, encoding="utf-8") as handle:
        assert handle.read() == "outside\n"

    answer = client.call_tool("ask_gemini", {"prompt": "hello"})
    assert not answer.is_error and text_of(answer) == "echo: hello", text_of(answer)


def everything_shown() -> str:
    """Every view's and panel's text, settings, status and phantoms, and every window's settings and
    project data: all that the package could have written into the editor."""
    host = control.host()
    parts: list[Any] = [
        host.settings[w.settings_id].values for w in host.windows.values() if w.settings_id in host.settings
    ]
    parts += [w.project_data for w in host.windows.values()]
    for view in host.views.values():
        parts += [host.buffers[view.buffer_id].text if view.buffer_id in host.buffers else "", view.status]
        parts += [host.settings[view.settings_id].values if view.settings_id in host.settings else {}]
        parts += [phantom[2] for phantom in view.phantoms.values()]
    return json.dumps(parts, default=str)


def test_hot_exit_saves_the_connect_view_without_the_token(editor: Any, workspace: str, tmp_path: Any) -> None:
    """Sublime's hot exit writes scratch views' text into the session, a project window's into its
    `.sublime-workspace` (often inside the repository): neither may hold the token."""
    companion = Companion(os.path.join(str(tmp_path), "tmp", "gemini", "ide"))
    control.user_settings(PACKAGE_SETTINGS, {"bridge_python": sys.executable, "auth_token": "t" * 32})
    project = os.path.join(workspace, "app.sublime-project")
    window = control.new_window([workspace], project_file=project)
    plain = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    companion.ready(plain)
    assert handle.token == "t" * 32  # a fixed token stays valid after a restart
    checked(connect_view(window))
    checked(connect_view(plain))
    assert control.run_from_palette(window, "gemini_companion_status")  # the doctor's report, too
    control.settle()
    assert [v for v in window.views() if v.settings().get("gemini_companion.doctor")]
    assert handle.token not in everything_shown(), "a buffer, panel, setting, status or phantom holds the token"
    written = control.exit_editor()
    assert os.path.join(workspace, "app.sublime-workspace") in written and len(written) == 2
    for path in written:
        buffers = _session.saved_buffers(path)
        connect = [b for b in buffers if b["settings"].get("gemini_companion.connect")]
        assert len(connect) == 1 and "Connect Another Agent" in connect[0]["contents"]  # its text is saved
        with open(path, encoding="utf-8") as saved:
            assert handle.token not in saved.read()
    assert companion.discovery_files() == {} and control.violations() == [] and control.errors() == []


def test_connect_views_a_restart_brings_back_are_closed_when_the_window_starts(
    companion: Companion, workspace: str
) -> None:
    """Restored from an earlier run (hot exit), their port and token are stale."""
    window = control.new_window([workspace])
    mine = window.new_file()
    restored = control.restore_views(
        window,
        [{"file": None, "scratch": True, "name": "Gemini Companion: Connect Another Agent",
          "settings": {"gemini_companion.connect": True}, "contents": "claude mcp add --transport http …\n"}],
    )  # fmt: skip
    companion.load()
    companion.ready(window)
    control.settle()
    assert not restored[0].is_valid()
    assert window.views() == [mine]

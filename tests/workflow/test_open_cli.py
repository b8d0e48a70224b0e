"""Gemini Companion: Open Gemini CLI — the exact Terminus call, for the window's live server.

Terminus is the stand-in package (Terminus' own signatures and argument handling); what it would
spawn is checked, and in one test spawned for real: the login shell running the real Gemini CLI
client, which must connect to this window.
"""

from __future__ import annotations

import inspect
import json
import os
import pwd
import shlex
import types
from typing import Any

import pytest

from companion.sublime_editor.terminus import RUN_SETTING
from tests.sublime_editor.conftest import Companion, pkg, write
from tests.sublime_fake import control, sublime
from tests.workflow.conftest import SETTINGS, cli_command, open_cli, run_in_terminal

GEMINI_VARS = (
    "GEMINI_CLI_IDE_PID",
    "GEMINI_CLI_IDE_SERVER_PORT",
    "GEMINI_CLI_IDE_WORKSPACE_PATH",
)


def accepted_arguments(terminus: types.ModuleType) -> set[str]:
    signature = inspect.signature(terminus.TerminusOpenCommand.run_async)
    return {name for name in signature.parameters if name != "self"}


def test_open_runs_gemini_in_a_terminus_panel_for_the_windows_live_server(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    terminal = open_cli(window, terminus)

    passed = terminal.passed
    (call,) = [args for target, name, args in control.command_log() if name == "terminus_open"]
    assert set(call) <= accepted_arguments(terminus)
    shell = os.environ.get("SHELL") or pwd.getpwuid(os.getuid()).pw_shell
    assert call["cmd"] == [shell, "-l", "-i", "-c", "gemini"]  # the login shell, so PATH is the user's
    assert call["cwd"] == workspace and terminal.cwd == workspace
    assert call["auto_close"] is False  # Terminus' default closes the view: the CLI's last words would go
    assert call["panel_name"] == "Gemini CLI" and terminal.show_in_panel
    assert passed["tag"] and passed["focus"] is True
    # The four variables pin the CLI to this window's live server, and agree with its discovery file.
    assert set(call["env"]) == set(GEMINI_VARS)
    env = terminal.env
    assert env["GEMINI_CLI_IDE_SERVER_PORT"] == str(handle.port)
    assert "GEMINI_CLI_IDE_AUTH_TOKEN" not in env  # the CLI reads it from the discovery file
    assert env["GEMINI_CLI_IDE_WORKSPACE_PATH"] == workspace
    assert env["GEMINI_CLI_IDE_PID"] == str(handle.runtime.editor_pid)
    assert env["TERM_PROGRAM"] == "Terminus-Sublime"  # forced by Terminus: the discovery file's ideInfo names us
    discovery = companion.discovery_of(window)
    name = f"gemini-ide-server-{handle.runtime.editor_pid}-{handle.port}.json"
    assert os.path.basename(handle.discovery_path) == name
    assert discovery["port"] == handle.port and discovery["authToken"] == handle.token
    assert discovery["workspacePath"] == env["GEMINI_CLI_IDE_WORKSPACE_PATH"]
    assert window.active_panel() == "output.Gemini CLI"
    assert window.find_output_panel("Gemini CLI") == terminal.view
    # What Terminus keeps in the view's settings (a tab's go to the session file): never the token.
    assert handle.token not in json.dumps(terminal.view.settings().to_dict())
    assert call["reactivable"] is False and call["view_settings"] == {RUN_SETTING: handle.runtime.editor_pid}

    # Running it again focuses the same terminal (shown again if the panel was hidden).
    window.run_command("hide_panel")
    assert control.run_from_palette(window, "gemini_companion_open_cli")
    control.settle()
    assert len(terminus.started) == 1
    assert window.active_panel() == "output.Gemini CLI"
    assert control.unknown_commands() == []


def test_terminal_location_tab_opens_a_tab_and_the_command_setting_is_used(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    control.user_settings(SETTINGS, {"terminal_location": "tab", "gemini_command": ["gemini", "-m", "pro model"]})
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    terminal = open_cli(window, terminus)
    assert "panel_name" not in terminal.passed or terminal.passed["panel_name"] is None
    assert not terminal.show_in_panel and terminal.view.sheet() is not None
    assert window.active_view() == terminal.view and window.active_panel() is None
    assert terminal.cmd[-1] == "gemini -m 'pro model'"
    assert shlex.split(terminal.cmd[-1]) == ["gemini", "-m", "pro model"]
    assert control.run_from_palette(window, "gemini_companion_open_cli")
    control.settle()
    assert len(terminus.started) == 1 and window.active_view() == terminal.view


def test_several_folders_ask_which_one_and_dismissing_runs_nothing(
    companion: Companion, terminus: types.ModuleType, tmp_path: Any
) -> None:
    folders = [os.path.join(str(tmp_path), name) for name in ("app", "lib")]
    for folder in folders:
        os.makedirs(folder)
    window = control.new_window(folders)
    companion.load()
    handle = companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_open_cli")
    (panel,) = control.quick_panels()
    assert [item[1] for item in panel["items"]] == folders
    assert [item[0] for item in panel["items"]] == ["app", "lib"]
    control.choose_quick_panel(-1)
    control.settle()
    assert terminus.started == []

    assert control.run_from_palette(window, "gemini_companion_open_cli")
    control.choose_quick_panel(1)
    terminal = control.pump_until(lambda: terminus.started and terminus.started[0])
    assert terminal.cwd == folders[1]
    assert terminal.env["GEMINI_CLI_IDE_WORKSPACE_PATH"] == os.pathsep.join(folders)
    assert terminal.env["GEMINI_CLI_IDE_SERVER_PORT"] == str(handle.port)


def test_without_terminus_the_message_says_how_to_install_it(companion: Companion, workspace: str) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_open_cli")
    (dialog,) = control.dialogs()
    assert "Terminus" in dialog.message and "Package Control: Install Package" in dialog.message
    assert "any terminal" in dialog.message  # and the alternative that needs nothing installed
    assert [c for c in control.unknown_commands() if c[1].startswith("terminus")] == []


def test_without_a_folder_the_message_says_to_open_one(companion: Companion, terminus: types.ModuleType) -> None:
    window = control.new_window()
    companion.load()
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_open_cli")
    (dialog,) = control.dialogs()
    assert "Open a folder" in dialog.message
    control.settle()
    assert terminus.started == []


def test_after_gemini_exits_open_starts_it_again_in_the_same_panel(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    first = open_cli(window, terminus)
    first.finish()  # the user quit gemini; the panel stays (auto_close false) with the process gone
    assert first.view.is_valid()
    second = open_cli(window, terminus)
    assert second is not first and second.alive and second.view == first.view
    view = control.open_file(window, write(workspace, "a.py", "x = 1\n"))
    view.run_command("gemini_companion_send_file")
    control.settle()
    assert second.typed == ["@a.py "]


def test_a_terminal_restored_from_an_earlier_run_is_not_rerun_nor_reused(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    """Sublime restarts with a Gemini CLI tab open: Terminus brings the tab back with the arguments it
    was opened with (the earlier run's port and PID). It must not run gemini again with them, and
    Open Gemini CLI must start a terminal for this run's server instead of focusing the dead one."""
    control.user_settings(SETTINGS, {"terminal_location": "tab"})
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    restored = open_cli(window, terminus)
    terminus.restart()
    restored.view.settings().set(RUN_SETTING, handle.runtime.editor_pid + 1)  # the earlier run's Sublime
    window.focus_view(restored.view)
    assert terminus.reactivate(restored.view) is None  # Terminus' reactivation declines: reactivable false
    saved = restored.view.settings().get("terminus_view.args")
    assert saved["env"]["GEMINI_CLI_IDE_SERVER_PORT"] == str(handle.port) and handle.token not in json.dumps(saved)

    fresh = open_cli(window, terminus)
    assert fresh is not restored and fresh.view != restored.view and fresh.alive
    assert fresh.view.settings().get(RUN_SETTING) == handle.runtime.editor_pid
    view = control.open_file(window, write(workspace, "a.py", "x = 1\n"))
    view.run_command("gemini_companion_send_file")
    control.settle()
    assert fresh.typed == ["@a.py "] and restored.typed == []


def test_terminus_would_rerun_a_restored_terminal_that_did_not_opt_out(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    """The stand-in's reactivation is Terminus' (what the test above relies on declining)."""
    window = control.new_window([workspace])
    view = window.new_file()
    view.settings().set("terminus_view.args", {"cmd": ["bash"], "cwd": workspace, "env": {"A": "1"}, "tag": "t"})
    view.settings().set("terminus_view.reactivable", True)
    rerun = terminus.reactivate(view)
    assert rerun is not None and rerun.cmd == ["bash"] and rerun.env["A"] == "1"


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
def test_the_command_line_per_platform(
    companion: Companion, platform: str, monkeypatch: pytest.MonkeyPatch, workspace: str
) -> None:
    control.new_window([workspace])
    companion.load()
    terminal = pkg("sublime_editor.terminus")
    command = ["gemini", "--model", "pro model"]
    if platform == "win32":
        assert terminal.shell_command(command, platform) == ["cmd.exe", "/c", "gemini", "--model", "pro model"]
        return
    monkeypatch.setenv("SHELL", "/bin/zsh")
    assert terminal.shell_command(command, platform) == ["/bin/zsh", "-l", "-i", "-c", "gemini --model 'pro model'"]
    # Sublime started from the Dock or a desktop launcher may have no SHELL: the account's login shell.
    # The account database is the operating system's; this machine's only account uses bash, so it
    # answers with another shell here to tell the two sources apart.
    monkeypatch.delenv("SHELL")
    account = pwd.getpwuid(os.getuid())
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: types.SimpleNamespace(pw_shell="/usr/bin/fish", pw_uid=uid))
    assert terminal.shell_command(command, platform)[:4] == ["/usr/bin/fish", "-l", "-i", "-c"]
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: account)
    assert terminal.shell_command(command, platform)[0] == account.pw_shell


def test_dollar_signs_in_the_folder_and_command_reach_the_terminal_unchanged(
    companion: Companion, terminus: types.ModuleType, tmp_path: Any
) -> None:
    folder = os.path.join(str(tmp_path), "cost $HOME ${folder}")
    os.makedirs(folder)
    control.user_settings(SETTINGS, {"gemini_command": ["gemini", "-i", "price in $USD"]})
    window = control.new_window([folder])
    companion.load()
    companion.ready(window)
    terminal = open_cli(window, terminus)
    assert terminal.cwd == folder  # Terminus expands ${...} and $VAR in cwd and cmd: they must be escaped
    assert shlex.split(terminal.cmd[-1]) == ["gemini", "-i", "price in $USD"]
    assert terminal.env["GEMINI_CLI_IDE_WORKSPACE_PATH"] == folder


@pytest.mark.conformance
def test_the_terminal_command_run_for_real_connects_the_real_client(
    companion: Companion, terminus: types.ModuleType, workspace: str, container_env: None
) -> None:
    """What Terminus would spawn (login shell, folder, environment) runs the real IdeClient."""
    control.user_settings(SETTINGS, {"gemini_command": cli_command()})
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    path = write(workspace, "src/app.py", "print('hi')\n")
    view = control.open_file(window, path)
    control.select(view, sublime.Region(0, 5))
    terminal = open_cli(window, terminus)
    cli = run_in_terminal(terminal)
    try:
        connected = cli.wait_connected()
        assert connected["ide"]["name"] == "sublimetext"
        assert connected["url"].endswith(f":{handle.port}/mcp")
        assert str(connected["idePid"]) == str(handle.runtime.editor_pid)
        cli.wait_context(lambda c: [f.get("selectedText") for f in c["workspaceState"]["openFiles"]] == ["print"])
    finally:
        cli.stop()


def test_a_gemini_command_under_the_home_folder_is_expanded_before_it_is_quoted(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    """`shlex.join` quotes the program: the shell would no longer expand `~` itself."""
    control.user_settings(SETTINGS, {"gemini_command": ["~/.local/bin/gemini", "--model", "pro"]})
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    terminal = open_cli(window, terminus)
    program = os.path.expanduser("~/.local/bin/gemini")
    assert shlex.split(terminal.cmd[-1]) == [program, "--model", "pro"] and not program.startswith("~")


def test_a_folder_whose_name_has_double_backslashes_is_where_the_terminal_runs(
    companion: Companion, terminus: types.ModuleType, tmp_path: Any
) -> None:
    """Terminus expands `cwd` and `cmd` with Sublime's snippet syntax, where `\\\\` is one backslash
    (the fake's `expand_variables`, as sublimehq/sublime_text#4826). On Linux and macOS a folder
    may be named like a UNC path; the terminal must run in it, not in the home folder."""
    folder = os.path.join(str(tmp_path), "\\\\server\\share\\x $HOME")
    os.makedirs(folder)
    control.user_settings(SETTINGS, {"gemini_command": [os.path.join(folder, "gemini")]})
    window = control.new_window([folder])
    companion.load()
    companion.ready(window)
    terminal = open_cli(window, terminus)
    assert terminal.cwd == folder
    assert terminal.cmd[-1] == shlex.join([os.path.join(folder, "gemini")])
    assert terminal.env["GEMINI_CLI_IDE_WORKSPACE_PATH"] == folder  # env is not expanded by Terminus


def test_a_unc_folder_and_program_reach_terminus_intact(companion: Companion, workspace: str) -> None:
    r"""A Windows window on `\\server\share\x` (a UNC path) running `\\server\tools\gemini.cmd`:
    what Terminus gets back from `expand_variables` is exactly those paths."""
    unc, program = "\\\\server\\share\\x", "\\\\server\\tools\\gemini.cmd"
    control.user_settings(SETTINGS, {"gemini_command": [program, "--flag=$1"]})
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    terminal = pkg("sublime_editor.terminus")
    args = terminal.open_args(window, handle, unc, handle.runtime.editor_pid)
    variables = window.extract_variables()
    assert sublime.expand_variables(args["cwd"], variables) == unc
    expanded = sublime.expand_variables(args["cmd"], variables)
    assert expanded == terminal.shell_command([program, "--flag=$1"])

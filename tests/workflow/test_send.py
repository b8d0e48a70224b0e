"""Send to Gemini: `@relative/path#Lstart-end` typed into the window's Gemini CLI terminal.

And the package's menus and palette: every entry names a command the loaded package defines.
"""

from __future__ import annotations

import json
import ntpath
import os
import types
from collections.abc import Iterator
from typing import Any

import pytest

from tests.sublime_editor.conftest import Companion, pkg, write
from tests.sublime_fake import control, sublime
from tests.workflow.conftest import open_cli

REPO = control.REPO_ROOT


def lines(count: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, count + 1))


def select_rows(view: sublime.View, first: int, last: int, to_next_line_start: bool = False) -> None:
    """Select from the start of 1-based row `first` to the end of row `last` (or the next row's start)."""
    begin = view.text_point(first - 1, 0)
    end = view.text_point(last, 0) if to_next_line_start else view.line(view.text_point(last - 1, 0)).end()
    control.select(view, sublime.Region(begin, end))


def test_selection_current_line_and_whole_file(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    terminal = open_cli(window, terminus)
    view = control.open_file(window, write(workspace, "src/main.py", lines(50)))

    select_rows(view, 12, 40)
    assert control.run_from_palette(window, "gemini_companion_send_selection")
    select_rows(view, 12, 40, to_next_line_start=True)  # a selection ending at a line's start stops before it
    view.run_command("gemini_companion_send_selection")
    control.move_cursor(view, 4, 3)  # no selection: the current line
    view.run_command("gemini_companion_send_selection")
    control.select(view, sublime.Region(view.text_point(6, 2), view.text_point(6, 4)))  # within one line
    view.run_command("gemini_companion_send_selection")
    assert window.active_view() != view  # sending focuses the terminal, for the question that follows
    control.focus(view)
    assert control.run_from_palette(window, "gemini_companion_send_file")
    control.settle()
    assert terminal.typed == [
        "@src/main.py#L12-40 ",
        "@src/main.py#L12-40 ",
        "@src/main.py#L5 ",
        "@src/main.py#L7 ",
        "@src/main.py ",
    ]
    # The terminal (a panel) comes up and takes the focus, so the user can type the question.
    assert window.active_panel() == "output.Gemini CLI"
    assert control.unknown_commands() == []


def test_side_bar_paths_spaces_and_files_outside_the_folder(
    companion: Companion, terminus: types.ModuleType, workspace: str, tmp_path: Any
) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    terminal = open_cli(window, terminus)
    spaced = write(workspace, "my docs/read me.md", "hello\n")
    plain = write(workspace, "a.txt", "a\n")
    folder = os.path.join(workspace, "my docs")
    outside = write(str(tmp_path), "elsewhere/x.py", "x\n")
    dotted = write(workspace, "..hidden/x.py", "x\n")  # a name starting with "..", still inside the folder
    window.run_command("gemini_companion_send_paths", {"paths": [plain, spaced, folder]})
    window.run_command("gemini_companion_send_paths", {"paths": [outside, dotted]})
    view = control.open_file(window, spaced)
    control.click(view, 0)
    view.run_command("gemini_companion_send_selection")
    control.settle()
    assert terminal.typed == [
        "@a.txt @my\\ docs/read\\ me.md @my\\ docs ",
        f"@{outside} @..hidden/x.py ",
        "@my\\ docs/read\\ me.md#L1 ",
    ]


def test_side_bar_entry_is_disabled_without_paths(companion: Companion, workspace: str) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    assert not control.palette_shows(window, "gemini_companion_send_selection")  # no file view is active
    window.run_command("gemini_companion_send_paths", {"paths": []})
    control.settle()
    assert control.dialogs() == [] and [n for _t, n, _a in control.command_log() if n == "terminus_open"] == []


def test_sending_opens_the_terminal_first_and_types_once_it_is_there(
    companion: Companion, terminus: types.ModuleType, workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    view = control.open_file(window, write(workspace, "pkg/mod.py", lines(20)))
    select_rows(view, 3, 8)
    assert control.run_from_palette(window, "gemini_companion_send_selection")
    (panel,) = control.quick_panels()  # no agent used yet in this window: the user picks one
    assert panel["items"] == ["Gemini CLI", "Claude Code"]
    control.choose_quick_panel(0)
    terminal = control.pump_until(lambda: terminus.started and terminus.started[0])
    control.pump_until(lambda: terminal.typed, 30, "the mention to be typed")
    control.settle()
    assert terminal.typed == ["@pkg/mod.py#L3-8 "]
    assert terminal.cwd == workspace
    assert len(terminus.started) == 1


def test_each_window_sends_to_its_own_terminal(
    companion: Companion, terminus: types.ModuleType, workspace: str, tmp_path: Any
) -> None:
    other = os.path.join(str(tmp_path), "other")
    os.makedirs(other)
    first, second = control.new_window([workspace]), control.new_window([other])
    companion.load()
    companion.ready(first)
    companion.ready(second)
    control.focus_window(first)
    first_terminal = open_cli(first, terminus)
    control.focus_window(second)
    second_terminal = open_cli(second, terminus)
    assert first_terminal.tag != second_terminal.tag
    assert first_terminal.env["GEMINI_CLI_IDE_SERVER_PORT"] != second_terminal.env["GEMINI_CLI_IDE_SERVER_PORT"]
    view = control.open_file(second, write(other, "b.py", "b\n"))
    view.run_command("gemini_companion_send_file")
    control.settle()
    assert second_terminal.typed == ["@b.py "] and first_terminal.typed == []


@pytest.fixture
def windows_paths(companion: Companion, workspace: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The terminal module with Windows path rules (ntpath), to check mentions as they are built there."""
    control.new_window([workspace])
    companion.load()
    module = pkg("sublime_editor.terminus")
    monkeypatch.setattr(module, "os", types.SimpleNamespace(path=ntpath, sep="\\", pardir="..", environ=os.environ))
    yield module


def test_windows_mentions_use_forward_slashes_and_survive_another_drive(windows_paths: Any) -> None:
    mention = windows_paths.mention
    assert mention("C:\\proj\\src\\my file.py", "C:\\proj", (3, 9)) == "@src/my\\ file.py#L3-9"
    assert mention("D:\\other\\x.py", "C:\\proj") == "@D:/other/x.py"


# -- menus and palette --


def resource(name: str) -> Any:
    with open(os.path.join(REPO, name), encoding="utf-8") as handle:
        return sublime.decode_value(handle.read())


def menu_commands(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for item in items:
        if "command" in item:
            yield item
        yield from menu_commands(item.get("children", []))


SUBLIME_BUILTINS = {"edit_settings"}


def test_every_menu_and_palette_entry_names_a_command_of_the_package(companion: Companion, workspace: str) -> None:
    control.new_window([workspace])
    companion.load()
    defined = {cls.name(cls.__new__(cls)) for cls in control.command_classes()}
    palette = resource("Default.sublime-commands")
    context_menu = resource("Context.sublime-menu")
    side_bar = resource("Side Bar.sublime-menu")
    main_menu = resource("Main.sublime-menu")
    for entries in (palette, context_menu, side_bar, main_menu):
        for entry in menu_commands(entries):
            assert entry["command"] in defined | SUBLIME_BUILTINS, entry
    assert all(e["caption"].startswith("Gemini Companion: ") for e in palette)
    palette_commands = {e["command"] for e in palette}
    assert {
        "gemini_companion_open_cli",
        "gemini_companion_send_selection",
        "gemini_companion_send_file",
        "gemini_companion_toggle_sharing",
        "gemini_companion_status",
    } <= palette_commands
    assert {e["command"] for e in menu_commands(context_menu)} >= {
        "gemini_companion_send_selection",
        "gemini_companion_send_file",
    }
    (send_paths,) = [e for e in menu_commands(side_bar) if e["command"] == "gemini_companion_send_paths"]
    assert send_paths["args"] == {"paths": []}  # Sublime fills in the chosen files and folders
    # No global key binding by default: every binding the package ships is scoped by a context.
    keymap = resource("Default.sublime-keymap")
    assert all(binding.get("context") for binding in keymap)
    assert not any(b["command"].startswith("gemini_companion_send") for b in keymap)
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    assert json.dumps("gemini_companion_send_selection") in readme  # the binding users can add is documented

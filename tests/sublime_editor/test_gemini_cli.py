"""The real Gemini CLI client (`IdeClient` of @google/gemini-cli-core) against the adapter in the fake.

The user runs "Gemini Companion: Open Gemini CLI"; the test starts the real client with exactly the
working folder and environment the command handed to Terminus (plus the private TMPDIR), and plays
Sublime's main thread while the client waits. Then: context, a review applied with an edit from the
palette, a review rejected by closing it, one accepted in the terminal (closeDiff), and two windows
whose clients each see only their own window.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.conformance.harness import IdeClientProcess, active_file, open_paths
from tests.sublime_editor.conftest import Companion, write
from tests.sublime_fake import control, sublime

pytestmark = pytest.mark.conformance


def launch_cli(window: sublime.Window, tmpdir: str) -> IdeClientProcess:
    """Run the palette command and start `gemini` the way Terminus would for these arguments."""
    before = len(control.terminus_calls())
    assert control.run_from_palette(window, "gemini_companion_open_cli")
    name, args = control.terminus_calls()[before]
    assert name == "terminus_open"
    assert args["cmd"][-1].endswith("gemini") and args["auto_close"] is False
    env = {**args["env"], "TMPDIR": tmpdir}
    return IdeClientProcess(args["cwd"], env, pump=lambda: control.pump(0.005)).start()


def review_views(window: sublime.Window) -> list[sublime.View]:
    return [v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"]


def test_the_real_client_gets_context_and_reviews_through_the_editor(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    tmpdir = os.environ["TMPDIR"]
    control.install_terminus()
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    path = write(workspace, "src/main.py", "print('h\u00e9')\nvalue = 1\n")
    view = control.open_file(window, path)
    control.move_cursor(view, 1, 5)
    cli = launch_cli(window, tmpdir)
    try:
        connected = cli.wait_connected()
        assert connected["ide"]["name"] == "sublimetext"
        context = cli.wait_context(lambda c: (active_file(c) or {}).get("cursor") == {"line": 2, "character": 6})
        assert open_paths(context) == [path]
        control.select(view, sublime.Region(0, 11))
        cli.wait_context(lambda c: (active_file(c) or {}).get("selectedText") == "print('h\u00e9')")

        # 1. Apply from the palette, with the user's edit.
        diff = cli.open_diff(path, "print('h\u00e9')\nvalue = 2\n")
        proposal = control.pump_until(lambda: review_views(window) and review_views(window)[0])
        control.select(proposal, proposal.size())
        control.type_text(proposal, "# checked\n")
        assert control.run_from_palette(window, "gemini_companion_apply")
        outcome = cli.wait_diff(diff)
        assert outcome["status"] == "accepted"
        assert outcome["content"] == "print('h\u00e9')\nvalue = 2\n# checked\n"
        with open(path, encoding="utf-8") as handle:
            assert handle.read() == "print('h\u00e9')\nvalue = 1\n"

        # 2. Closing the proposal's tab rejects it.
        diff = cli.open_diff(path, "rejected\n")
        proposal = control.pump_until(lambda: review_views(window) and review_views(window)[0])
        control.close_tab(proposal)
        assert cli.wait_diff(diff)["status"] == "rejected"

        # 3. Accepted in the terminal: closeDiff returns the edited text, and the editor stays silent.
        notified = len(cli.notifications())
        diff = cli.open_diff(path, "from the terminal\n")
        proposal = control.pump_until(lambda: review_views(window) and review_views(window)[0])
        control.select(proposal, 0)
        control.type_text(proposal, "# edited\n")
        assert cli.close_diff(path) == "# edited\nfrom the terminal\n"
        control.settle()
        assert review_views(window) == []
        assert [n for n in cli.notifications()[notified:] if n.get("method") != "ide/contextUpdate"] == []
        assert window.num_groups() == 1 and window.active_view() == view
    finally:
        cli.stop()


def test_two_windows_two_clients_each_sees_its_own_window(companion: Companion, workspace: str, tmp_path: Any) -> None:
    tmpdir = os.environ["TMPDIR"]
    other_folder = os.path.join(str(tmp_path), "other")
    os.makedirs(other_folder)
    control.install_terminus()
    first = control.new_window([workspace])
    second = control.new_window([other_folder])
    companion.load()
    companion.ready(first)
    companion.ready(second)
    mine = control.open_file(first, write(workspace, "mine.txt", "mine\n"))
    theirs = control.open_file(second, write(other_folder, "theirs.txt", "theirs\n"))
    control.click(mine, 0)
    control.click(theirs, 0)
    first_cli = launch_cli(first, tmpdir)
    second_cli = launch_cli(second, tmpdir)
    try:
        assert first_cli.wait_connected()["url"] != second_cli.wait_connected()["url"]
        first_cli.wait_context(lambda c: open_paths(c) == [mine.file_name()])
        second_cli.wait_context(lambda c: open_paths(c) == [theirs.file_name()])
        diff = second_cli.open_diff(theirs.file_name() or "", "changed\n")
        proposal = control.pump_until(lambda: review_views(second) and review_views(second)[0])
        assert review_views(first) == []
        control.press_save(proposal)
        assert second_cli.wait_diff(diff)["status"] == "accepted"
    finally:
        first_cli.stop()
        second_cli.stop()
    assert all(theirs.file_name() not in open_paths(c) for c in first_cli.contexts())

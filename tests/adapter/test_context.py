"""Context from the editor's events, as an MCP client of the window's server receives it."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from tests.adapter.conftest import Companion, ThreadedClient, active, open_paths, write
from tests.sublime_fake import control, sublime


def test_focus_cursor_and_selection_reach_the_client_in_the_clis_units(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    path = write(workspace, "u.py", "first = 1\nname = 'h\u00e9 \U0001f600 x'\n")
    view = control.open_file(window, path)
    client.wait_context(lambda c: open_paths(c) == [path])
    control.move_cursor(view, 1, 14)  # after the emoji: character 14 + 1 in UTF-16 units, 1-based
    file = active(client.wait_context(lambda c: (active(c) or {}).get("cursor") == {"line": 2, "character": 16}))
    assert file is not None and "selectedText" not in file
    control.select(view, sublime.Region(view.text_point(1, 8), view.text_point(1, 12)))
    context = client.wait_context(lambda c: (active(c) or {}).get("selectedText") == "h\u00e9 \U0001f600")
    assert active(context)["cursor"] == {"line": 2, "character": 14}  # the caret end (b) of the selection


def test_multi_cursor_shares_the_first_selection(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    view = control.open_file(window, write(workspace, "m.txt", "alpha\nbeta\ngamma\n"))
    control.select(view, sublime.Region(11, 16), sublime.Region(0, 5), 7)
    context = client.wait_context(lambda c: (active(c) or {}).get("selectedText") == "alpha")
    assert active(context)["cursor"] == {"line": 1, "character": 6}


def test_only_real_files_on_disk_most_recent_first_and_only_the_active_one_has_a_cursor(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    control.install_terminus()
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    paths = [write(workspace, f"f{i:02}.txt", f"file {i}\n") for i in range(12)]
    views = [control.open_file(window, p) for p in paths]
    context = client.wait_context(lambda c: open_paths(c)[:1] == [paths[-1]])
    assert open_paths(context) == list(reversed(paths))[:10]  # most recent first, at most ten
    assert [f for f in context["workspaceState"]["openFiles"] if "cursor" in f] == [active(context)]
    control.click(views[3], 2)  # an older file comes back to the front
    context = client.wait_context(lambda c: open_paths(c)[:1] == [paths[3]])
    assert len(open_paths(context)) == 10 and len(set(open_paths(context))) == 10

    # None of these may appear: the user's scratch buffer, an unsaved new file, a panel, a Terminus
    # terminal, a file that no longer exists on disk. Focusing them leaves the last file active.
    scratch = window.new_file()
    scratch.set_scratch(True)
    control.type_text(scratch, "notes")
    untitled = window.new_file()
    control.type_text(untitled, "draft")
    panel = window.create_output_panel("exec")
    control.focus(panel)
    window.run_command("terminus_open", {"cmd": ["bash"], "title": "Terminal", "tag": "t"})
    terminal = control.pump_until(lambda: next((v for v in window.views() if v.settings().get("terminus_view")), None))
    control.focus(terminal)
    gone = write(workspace, "gone.txt", "bye\n")
    gone_view = control.open_file(window, gone)
    client.wait_context(lambda c: open_paths(c)[:1] == [gone])
    os.remove(gone)
    control.click(views[3], 0)
    control.click(gone_view, 1)
    control.settle()
    context = client.wait_context(lambda c: active(c) is not None and active(c)["path"] == paths[3])
    assert not any(p in open_paths(context) for p in (None, "", "notes", "draft"))
    assert all(os.path.isfile(p) for p in open_paths(client.last_context()))


def test_closing_files_removes_them_and_our_review_views_never_appear(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    a = control.open_file(window, write(workspace, "a.txt", "a\n"))
    b_path = write(workspace, "b.txt", "b\n")
    control.open_file(window, b_path)
    client.wait_context(lambda c: open_paths(c) == [b_path, a.file_name()])
    control.close_tab(a)
    client.wait_context(lambda c: open_paths(c) == [b_path])
    seen = len(client.contexts())
    client.open_diff(b_path, "B\n")
    control.settle()
    proposal = window.active_view()
    assert proposal is not None and proposal.name().endswith("↔ proposed")
    control.type_text(proposal, "edit ")
    control.click(proposal, 0)
    (current,) = [v for v in window.views() if v.name().endswith("(current)")]
    control.click(current, 0)
    control.settle()
    assert all(open_paths(c) == [b_path] for c in client.contexts()[seen:])


def test_each_window_client_sees_only_its_own_window(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str, tmp_path: Any
) -> None:
    other_folder = os.path.join(str(tmp_path), "other")
    os.makedirs(other_folder)
    first = control.new_window([workspace])
    second = control.new_window([other_folder])
    companion.load()
    first_client, second_client = clients(first), clients(second)
    mine = control.open_file(first, write(workspace, "mine.txt", "1\n"))
    theirs = control.open_file(second, write(other_folder, "theirs.txt", "2\n"))
    control.click(mine, 1)
    control.click(theirs, 1)
    first_client.wait_context(lambda c: open_paths(c) == [mine.file_name()])
    second_client.wait_context(lambda c: open_paths(c) == [theirs.file_name()])
    control.settle()
    assert all(theirs.file_name() not in open_paths(c) for c in first_client.contexts())
    assert all(mine.file_name() not in open_paths(c) for c in second_client.contexts())

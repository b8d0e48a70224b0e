"""Context from the editor's events, as an MCP client of the window's server receives it."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from tests.sublime_editor.conftest import Companion, ThreadedClient, active, open_paths, write
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


def test_pausing_one_of_two_windows_hides_only_that_windows_files(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str, tmp_path: Any
) -> None:
    other_folder = os.path.join(str(tmp_path), "other")
    os.makedirs(other_folder)
    paused, sharing = control.new_window([workspace]), control.new_window([other_folder])
    companion.load()
    paused_client, sharing_client = clients(paused), clients(sharing)
    hidden = control.open_file(paused, write(workspace, "hidden.txt", "1\n"))
    shown = control.open_file(sharing, write(other_folder, "shown.txt", "2\n"))
    paused_client.wait_context(lambda c: open_paths(c) == [hidden.file_name()])
    assert control.run_from_palette(paused, "gemini_companion_toggle_sharing")
    paused_client.wait_context(lambda c: open_paths(c) == [])
    seen = len(paused_client.contexts())
    control.click(hidden, 1)  # activity in the paused window stays private
    control.click(shown, 1)
    sharing_client.wait_context(lambda c: open_paths(c) == [shown.file_name()])
    control.settle()
    assert all(open_paths(c) == [] for c in paused_client.contexts()[seen:])
    assert companion.state(sharing).handle.context.paused is False
    assert control.run_from_palette(paused, "gemini_companion_toggle_sharing")  # resume: it comes back
    paused_client.wait_context(lambda c: open_paths(c) == [hidden.file_name()])


def test_a_new_file_enters_the_context_when_it_is_saved_without_a_focus_change(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    view = window.new_file()  # untitled: not in the context
    control.type_text(view, "draft = 1\n")
    control.settle()
    assert all(open_paths(c) == [] for c in client.contexts())
    path = os.path.join(workspace, "draft.py")
    control.answer_dialogs(path)
    control.press_save(view)  # Save As chooses the path; only on_post_save reports it
    context = client.wait_context(lambda c: open_paths(c) == [path])
    assert active(context)["cursor"] == {"line": 2, "character": 1}


def test_a_file_focused_while_it_loads_enters_the_context_with_its_cursor_once_loaded(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    path = write(workspace, "big.txt", "a\nb\nc\n")
    view = window.open_file(f"{path}:3:2", sublime.NewFileFlags.ENCODED_POSITION)  # activated before its text
    assert view.is_loading()
    context = client.wait_context(lambda c: (active(c) or {}).get("path") == path)
    control.pump_until(lambda: not view.is_loading())
    context = client.wait_context(lambda c: (active(c) or {}).get("cursor") == {"line": 3, "character": 2})
    assert open_paths(context) == [path]


def test_the_focused_file_and_its_cursor_are_shared_after_start_and_after_a_reload_without_any_click(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    # Sublime starts with files restored: the focus is set before the package has a server, and
    # nobody clicks afterwards (the synthesised on_activated_async finds no server yet).
    window = control.new_window([workspace])
    other = control.open_file(window, write(workspace, "other.py", "x = 1\n"))
    path = write(workspace, "app.py", "first\nsecond line\n")
    view = control.open_file(window, path)
    control.move_cursor(view, 1, 3)
    control.settle()
    assert window.active_view() == view and other.is_valid()

    def focused_with_cursor(context: dict[str, Any]) -> bool:
        return (active(context) or {}).get("path") == path and active(context)["cursor"] == {"line": 2, "character": 4}

    companion.load(startup=True)
    clients(window).wait_context(focused_with_cursor, 10)
    companion.load()  # an upgrade or a save of plugin.py: a new server, still no click
    clients(window).wait_context(focused_with_cursor, 10)

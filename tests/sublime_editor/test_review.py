"""Diff review in the editor, driven by an MCP client's openDiff / closeDiff and the user's gestures."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

from tests.mcp_client import text_of
from tests.sublime_editor.conftest import Companion, ThreadedClient, write
from tests.sublime_fake import _state, control, sublime

SINGLE = {"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]}


def text(view: sublime.View) -> str:
    return view.substr(sublime.Region(0, view.size()))


def review_views(window: sublime.Window) -> tuple[sublime.View | None, sublime.View]:
    proposals = [v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"]
    currents = [v for v in window.views() if v.settings().get("gemini_companion.role") == "current"]
    assert len(proposals) == 1 and len(currents) <= 1, (proposals, currents)
    return (currents[0] if currents else None), proposals[0]


def banner(view: sublime.View) -> str:
    (phantom,) = control.phantoms(view, "gemini_companion.banner")
    return phantom["content"]


def setup(companion: Companion, clients: Callable[..., ThreadedClient], workspace: str) -> tuple[Any, ...]:
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    other = control.open_file(window, write(workspace, "other.txt", "other\n"))
    path = write(workspace, "app.py", "def f():\n    return 1\n")
    view = control.open_file(window, path)
    control.settle()
    return window, client, path, view, other


def open_review(client: ThreadedClient, path: str, proposal: str) -> None:
    result = client.open_diff(path, proposal)
    assert not result.is_error and result.content == []  # openDiff answers at once; the outcome comes later
    control.settle()


def assert_restored(window: sublime.Window, views: list[sublime.View], focused: sublime.View) -> None:
    assert window.layout() == SINGLE
    assert window.views() == views
    assert window.active_view() == focused
    assert not [v for v in window.views() if v.settings().get("gemini_companion.role")]


def test_open_diff_shows_a_split_with_the_unsaved_text_and_an_editable_proposal(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, view, _ = setup(companion, clients, workspace)
    control.type_text(view, "# unsaved\n")
    unsaved = text(view)
    open_review(client, path, "def f():\n    return 2\n")
    assert window.num_groups() == 2
    current, proposal = review_views(window)
    assert current is not None
    assert window.get_view_index(current)[0] == 0 and window.get_view_index(proposal)[0] == 1
    assert text(current) == unsaved and current.is_read_only() and current.is_scratch()
    assert current.name() == "app.py (unsaved)"
    assert text(proposal) == "def f():\n    return 2\n"
    assert proposal.name() == "app.py ↔ proposed" and proposal.is_scratch() and not proposal.is_read_only()
    assert proposal.syntax() == sublime.find_syntax_for_file(path)
    assert control.reference_document(proposal) == unsaved  # the gutter diff is against what the user sees
    assert window.active_view() == proposal
    content = banner(proposal)
    assert 'href="accept"' in content and 'href="reject"' in content
    assert "unsaved changes" in content
    assert control.palette_shows(window, "gemini_companion_apply")
    assert control.palette_shows(window, "gemini_companion_reject")
    proposal.run_command("next_modification")
    assert proposal.rowcol(proposal.sel()[0].b) == (1, 0)  # hunk navigation lands on the changed line


def test_hunk_navigation_by_command_banner_link_and_key_and_apply_only_where_a_review_is(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, _view, _ = setup(companion, clients, workspace)
    open_review(client, path, "# added\ndef f():\n    return 2\n")  # changes on rows 0 and 2
    current, proposal = review_views(window)
    assert current is not None
    window.focus_view(current)
    assert control.run_from_palette(window, "gemini_companion_next_change")  # from the other side too
    assert window.active_view() == proposal
    assert proposal.rowcol(proposal.sel()[0].b)[0] == 2
    control.click_link(proposal, "previous")
    assert proposal.rowcol(proposal.sel()[0].b)[0] == 0
    control.press_keys(proposal, "alt+down")
    assert proposal.rowcol(proposal.sel()[0].b)[0] == 2
    control.press_keys(proposal, "alt+up")
    assert proposal.rowcol(proposal.sel()[0].b)[0] == 0
    elsewhere = control.new_window([workspace])
    assert not control.palette_shows(elsewhere, "gemini_companion_apply")  # the review is in another window
    assert not control.palette_shows(elsewhere, "gemini_companion_next_change")
    assert control.palette_shows(window, "gemini_companion_apply")


def test_a_three_column_layout_its_tabs_and_focus_come_back_after_the_review(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    third = control.open_file(window, write(workspace, "third.txt", "3\n"))
    columns = {"cols": [0.0, 0.33, 0.66, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1], [2, 0, 3, 1]]}
    window.set_layout(columns)  # type: ignore[arg-type]
    window.set_view_index(view, 1, 0)
    window.set_view_index(third, 2, 0)
    window.focus_view(other)  # focused: not the most recently opened view
    control.settle()
    groups = [window.views_in_group(g) for g in range(3)]
    open_review(client, path, "def f():\n    return 2\n")
    assert window.layout() != columns  # the review took the window over
    assert control.run_from_palette(window, "gemini_companion_apply")
    client.wait_notification("ide/diffAccepted")
    control.settle()
    assert window.layout() == columns
    assert [window.views_in_group(g) for g in range(3)] == groups == [[other], [view], [third]]
    assert window.active_view() == other
    assert not [v for v in window.views() if v.settings().get("gemini_companion.role")]


def test_reloading_the_package_with_a_review_open_closes_it_and_gives_the_layout_back(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    open_review(client, path, "def f():\n    return 2\n")
    assert window.num_groups() == 2
    companion.load()  # Sublime reloads the package (an upgrade, or saving one of its files)
    control.settle()
    assert_restored(window, [other, view], view)
    assert client.received("ide/diffAccepted") == [] and client.received("ide/diffRejected") == []
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "def f():\n    return 1\n"


def test_apply_from_the_palette_sends_the_edited_proposal_and_leaves_the_file_alone(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    open_review(client, path, "def f():\n    return 2\n")
    _, proposal = review_views(window)
    control.select(proposal, proposal.size())
    control.type_text(proposal, "# reviewed\n")
    assert control.run_from_palette(window, "gemini_companion_apply")
    accepted = client.wait_notification("ide/diffAccepted")
    assert accepted == {"filePath": path, "content": "def f():\n    return 2\n# reviewed\n"}
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "def f():\n    return 1\n"  # the CLI writes the file, not the companion
    control.settle()
    assert_restored(window, [other, view], view)
    assert not control.palette_shows(window, "gemini_companion_apply")
    assert client.received("ide/diffRejected") == []


def test_reject_from_the_palette(companion: Companion, clients: Callable[..., ThreadedClient], workspace: str) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    open_review(client, path, "x = 1\n")
    assert control.run_from_palette(window, "gemini_companion_reject")
    assert client.wait_notification("ide/diffRejected") == {"filePath": path}
    control.settle()
    assert_restored(window, [other, view], view)
    assert client.received("ide/diffAccepted") == []


def test_saving_the_proposal_accepts_it_without_a_save_dialog(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    open_review(client, path, "saved = True\n")
    current, proposal = review_views(window)
    assert current is not None
    review_keys = [b for b in control.key_bindings() if {"key": "gemini_companion.review_proposal"} in b["context"]]
    assert review_keys
    for binding in review_keys:  # our review keys exist only in the proposal view
        assert all(control.context_holds(proposal, c) for c in binding["context"])
        assert not any(control.context_holds(v, c) for v in (view, current) for c in binding["context"])
    assert control.press_keys(view, "ctrl+s") == "save"  # the user's own file still saves normally
    assert control.press_keys(proposal, "ctrl+s") == "gemini_companion_save_review"
    assert client.wait_notification("ide/diffAccepted") == {"filePath": path, "content": "saved = True\n"}
    control.settle()
    assert [d for d in control.dialogs() if d.kind == "save_as"] == []
    assert_restored(window, [other, view], view)
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "def f():\n    return 1\n"


def test_closing_the_proposal_rejects_it(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    open_review(client, path, "closed = True\n")
    _, proposal = review_views(window)
    control.type_text(proposal, "unsaved edit ")  # a scratch view: closing never asks to save
    assert control.close_tab(proposal)
    assert client.wait_notification("ide/diffRejected") == {"filePath": path}
    control.settle()
    assert_restored(window, [other, view], view)
    assert control.dialogs() == []


def test_closing_the_proposal_rejects_it_when_on_pre_close_has_no_window(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    """Two ST4 regressions (sublimehq/sublime_text#3463, #3516) gave `view.window()` None in
    on_pre_close: the agent must still hear the rejection at once, not at its timeout."""
    window, client, path, view, other = setup(companion, clients, workspace)
    open_review(client, path, "closed = True\n")
    _, proposal = review_views(window)
    control.pre_close_window(False)
    assert control.close_tab(proposal)
    assert client.wait_notification("ide/diffRejected") == {"filePath": path}
    control.settle()
    assert_restored(window, [other, view], view)


def test_banner_links_accept(companion: Companion, clients: Callable[..., ThreadedClient], workspace: str) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    open_review(client, path, "linked = 1\n")
    _, proposal = review_views(window)
    control.click_link(proposal, "accept")
    assert client.wait_notification("ide/diffAccepted")["content"] == "linked = 1\n"
    control.settle()
    assert_restored(window, [other, view], view)


def test_close_diff_returns_the_edited_text_and_sends_nothing(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    open_review(client, path, "a = 1\n")
    _, proposal = review_views(window)
    control.select(proposal, proposal.size())
    control.type_text(proposal, "b = 2\n")
    result = client.close_diff(path)
    assert json.loads(text_of(result)) == {"content": "a = 1\nb = 2\n"}
    control.settle()
    assert_restored(window, [other, view], view)
    assert client.received("ide/diffAccepted") == [] and client.received("ide/diffRejected") == []


def test_two_reviews_at_once_and_the_layout_returns_after_the_last(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    second_path = other.file_name()
    assert second_path is not None
    open_review(client, path, "first\n")
    open_review(client, second_path, "second\n")
    proposals = [v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"]
    assert sorted(text(v) for v in proposals) == ["first\n", "second\n"]
    assert window.active_view() == next(v for v in proposals if text(v) == "second\n")
    assert control.run_from_palette(window, "gemini_companion_apply")  # acts on the focused review
    assert client.wait_notification("ide/diffAccepted") == {"filePath": second_path, "content": "second\n"}
    control.settle()
    assert window.num_groups() == 2  # one review is still open
    assert control.run_from_palette(window, "gemini_companion_reject")
    assert client.wait_notification("ide/diffRejected") == {"filePath": path}
    control.settle()
    assert_restored(window, [other, view], view)


def test_a_new_file_is_labelled_new_with_an_empty_left_side(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, _path, view, other = setup(companion, clients, workspace)
    new_path = os.path.join(workspace, "pkg", "new_module.py")
    open_review(client, new_path, "created = True\n")
    current, proposal = review_views(window)
    assert current is not None and text(current) == "" and current.name() == "new_module.py (new file)"
    assert "does not exist yet" in banner(proposal)
    assert control.reference_document(proposal) == ""
    assert control.run_from_palette(window, "gemini_companion_apply")
    assert client.wait_notification("ide/diffAccepted") == {"filePath": new_path, "content": "created = True\n"}
    assert not os.path.exists(new_path)
    control.settle()
    assert_restored(window, [other, view], view)


def test_inline_mode_reviews_in_one_view_without_touching_the_layout(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    control.user_settings("Gemini Companion.sublime-settings", {"diff_layout": "inline"})
    open_review(client, path, "inline = 1\n")
    current, proposal = review_views(window)
    assert current is None
    assert window.layout() == SINGLE
    assert control.inline_diff_shown(proposal)
    assert control.reference_document(proposal) == "def f():\n    return 1\n"
    control.press_save(proposal)
    assert client.wait_notification("ide/diffAccepted") == {"filePath": path, "content": "inline = 1\n"}
    control.settle()
    assert window.views() == [other, view] and window.layout() == SINGLE


# Files the main thread opens while `_watched_opens` is a list (an audit hook sees every open()).
_watched_opens: list[str] | None = None


def _record_main_thread_opens(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or _watched_opens is None or not isinstance(args[0], str):
        return
    try:
        on_main = control.host().on_main_thread()
    except RuntimeError:
        return
    if on_main:
        _watched_opens.append(args[0])


sys.addaudithook(_record_main_thread_opens)


def test_the_current_text_is_read_off_the_main_thread_and_decoded_like_the_workspace_tools(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    """A slow disk or a huge file must not freeze Sublime: the main thread never opens the file."""
    global _watched_opens
    window, client, _path, _view, _other = setup(companion, clients, workspace)
    legacy = os.path.join(workspace, "legacy.txt")
    with open(legacy, "wb") as handle:
        handle.write(b"price: 5 \x80\r\ntotal\r\n")  # Windows-1252 euro sign, CRLF
    _watched_opens = []
    try:
        open_review(client, legacy, "price: 6 \u20ac\r\ntotal\r\n")
        opened, _watched_opens = _watched_opens, None
    finally:
        _watched_opens = None
    assert legacy not in opened, "the main thread read the file"
    current, proposal = review_views(window)
    assert current is not None and text(current) == "price: 5 \u20ac\ntotal\n"
    assert control.reference_document(proposal) == "price: 5 \u20ac\ntotal\n"


def test_a_file_too_large_to_show_still_gets_a_review_that_says_so(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, _path, _view, _other = setup(companion, clients, workspace)
    big = os.path.join(workspace, "huge.log")
    with open(big, "wb") as handle:
        handle.truncate(16 * 1024 * 1024 + 1)
    open_review(client, big, "short\n")
    current, proposal = review_views(window)
    assert current is not None and current.name() == "huge.log (not shown)"
    assert text(current).startswith("(The current text of this file is not shown: it is 16 MiB")
    assert "accepting replaces the whole file" in banner(proposal)
    assert control.run_from_palette(window, "gemini_companion_reject")
    assert client.wait_notification("ide/diffRejected") == {"filePath": big}
    assert os.path.getsize(big) == 16 * 1024 * 1024 + 1


def test_a_file_changed_on_disk_during_the_review_is_shown_again_before_it_can_be_accepted(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    """Gemini CLI writes the accepted text itself: accepting a diff against text that no longer
    exists would silently drop the change a formatter or another program saved meanwhile."""
    window, client, _path, _view, _other = setup(companion, clients, workspace)
    target = write(workspace, "config.py", "debug = False\n")
    open_review(client, target, "debug = True\n")
    current, proposal = review_views(window)
    write(workspace, "config.py", "debug = False\ncolor = 'blue'\n")  # saved elsewhere meanwhile
    assert control.run_from_palette(window, "gemini_companion_apply")
    control.pump_until(lambda: "changed on disk" in banner(proposal), message="the banner to warn")
    assert client.received("ide/diffAccepted") == []
    assert current is not None and text(current) == "debug = False\ncolor = 'blue'\n"
    assert control.reference_document(proposal) == "debug = False\ncolor = 'blue'\n"
    # Seen now: the next Apply accepts, with the proposal as the user left it.
    assert control.run_from_palette(window, "gemini_companion_apply")
    assert client.wait_notification("ide/diffAccepted") == {"filePath": target, "content": "debug = True\n"}


def test_a_time_only_touch_does_not_hold_up_the_accept(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, _path, _view, _other = setup(companion, clients, workspace)
    target = write(workspace, "same.py", "x = 1\n")
    open_review(client, target, "x = 2\n")
    os.utime(target, ns=(1, 1))
    assert control.run_from_palette(window, "gemini_companion_apply")
    assert client.wait_notification("ide/diffAccepted") == {"filePath": target, "content": "x = 2\n"}


def files_under(folder: str) -> dict[str, bytes]:
    """Every file below `folder` with its bytes."""
    found = {}
    for root, _dirs, names in os.walk(folder):
        for name in names:
            with open(os.path.join(root, name), "rb") as handle:
                found[os.path.join(root, name)] = handle.read()
    return found


def test_save_as_on_a_proposal_accepts_it_and_writes_nowhere(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    """Save As (Ctrl+Shift+S, File › Save As…) on a proposal is a save: it accepts. No dialog asks where,
    so the proposal cannot land in a file of the user's choosing behind the review's back."""
    window, client, path, view, other = setup(companion, clients, workspace)
    before = files_under(workspace)
    runs = {
        "key": lambda proposal: proposal.run_command("prompt_save_as"),  # the key binding, on the focused view
        "menu": lambda proposal: window.run_command("prompt_save_as"),  # File › Save As…, on the window
    }
    for how, run in runs.items():
        proposed = f"saved_as = {how!r}\n"
        open_review(client, path, proposed)
        _, proposal = review_views(window)
        control.focus(proposal)
        control.answer_dialogs(os.path.join(workspace, f"elsewhere_{how}.py"))  # were a dialog shown: its answer
        run(proposal)
        control.pump_until(lambda want=proposed: any(n.params.get("content") == want for n in client.received()))
        control.settle()
        assert [d for d in control.dialogs() if d.kind == "save_as"] == [], how
        _state.host().dialog_answers.clear()
    assert files_under(workspace) == before
    assert_restored(window, [other, view], view)


def test_save_all_with_a_review_open_saves_the_users_files_and_leaves_the_review_alone(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, _view, other = setup(companion, clients, workspace)
    open_review(client, path, "proposed = 1\n")
    _current, proposal = review_views(window)
    control.type_text(proposal, "# the user's edit\n")
    control.type_text(other, "edited ")  # a dirty file of the user's
    window.run_command("save_all")
    control.settle()
    with open(other.file_name() or "", encoding="utf-8") as handle:
        assert handle.read().startswith("edited ")  # Save All did save the user's file
    assert client.received("ide/diffAccepted") == [] and client.received("ide/diffRejected") == []
    assert control.dialogs() == []
    assert review_views(window)[1] == proposal and proposal.is_valid()
    assert text(proposal).startswith("# the user's edit\n")


def test_closing_the_users_own_tab_of_the_file_leaves_the_review_working(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, view, other = setup(companion, clients, workspace)
    open_review(client, path, "kept = 1\n")
    _, proposal = review_views(window)
    assert control.close_tab(view)  # the user closes their tab of the file under review
    control.settle()
    assert proposal.is_valid() and review_views(window)[1] == proposal
    control.click_link(proposal, "accept")
    assert client.wait_notification("ide/diffAccepted") == {"filePath": path, "content": "kept = 1\n"}
    control.settle()
    assert window.views() == [other] and window.layout() == SINGLE


def test_a_file_deleted_or_renamed_during_the_review_is_shown_again_before_it_can_be_accepted(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, _path, _view, _other = setup(companion, clients, workspace)
    for how, gone in (("deleted", os.remove), ("renamed", lambda p: os.rename(p, p + ".bak"))):
        target = write(workspace, f"{how}.py", "old = 1\n")
        open_review(client, target, f"new = {how!r}\n")
        current, proposal = review_views(window)
        gone(target)
        assert control.run_from_palette(window, "gemini_companion_apply")
        control.pump_until(lambda p=proposal: "changed on disk" in banner(p), message="the banner to warn")
        assert not any(n.params.get("filePath") == target for n in client.received("ide/diffAccepted"))
        assert current is not None and text(current) == ""  # the left side now shows what is there: nothing
        assert control.run_from_palette(window, "gemini_companion_apply")  # seen: accepting creates it anew
        control.pump_until(lambda t=target: any(n.params.get("filePath") == t for n in client.received()))
        (accepted,) = [n for n in client.received("ide/diffAccepted") if n.params["filePath"] == target]
        assert accepted.params["content"] == f"new = {how!r}\n"
        control.settle()


def test_review_views_restored_after_a_restart_are_closed_when_the_window_starts(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    """Sublime brings scratch views back with their settings after a restart (hot exit): a proposal
    from the last run has no agent waiting for it, and Save there must not pretend to accept."""
    window = control.new_window([workspace])
    mine = control.open_file(window, write(workspace, "mine.py", "x = 1\n"))
    for role in ("current", "proposal"):
        restored = window.new_file()
        restored.set_scratch(True)
        restored.settings().set("gemini_companion.review", 7)
        restored.settings().set("gemini_companion.role", role)
    companion.load()
    client = clients(window)
    control.settle()
    assert window.views() == [mine]
    assert client.received("ide/diffAccepted") == [] and client.received("ide/diffRejected") == []
    assert control.errors() == []
    # A review of this run opens and closes as usual afterwards.
    path = write(workspace, "app.py", "a = 1\n")
    open_review(client, path, "a = 2\n")
    _, proposal = review_views(window)
    control.click_link(proposal, "accept")
    assert client.wait_notification("ide/diffAccepted") == {"filePath": path, "content": "a = 2\n"}

"""Other packages' on-save hooks and a review: what Accept sends is what the user saw.

The LSP package (stand-in: `lsp_package/boot.py`, LSP's own rules) binds Ctrl+S to `lsp_save`
where a language server serves the view, runs code actions and formatting, then the native save.
On a proposal that would rewrite the text between the user's Save and the Accept it becomes."""

from __future__ import annotations

import os
import shutil
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.sublime_editor.conftest import Companion, ThreadedClient
from tests.sublime_editor.test_review import banner, open_review, review_views, setup, text
from tests.sublime_fake import _state, control

LSP_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lsp_package")


@pytest.fixture
def lsp(editor: _state.Host, tmp_path: Any) -> Iterator[types.ModuleType]:
    """The stand-in LSP package, installed as Packages/LSP (its key binding included) and loaded."""
    root = os.path.join(str(tmp_path), "Packages", "LSP")
    os.makedirs(root)
    shutil.copyfile(os.path.join(LSP_SOURCE, "boot.py"), os.path.join(root, "boot.py"))
    module = control.load_plugin("LSP.boot", "LSP", root)
    with open(os.path.join(root, "Default.sublime-keymap"), "w", encoding="utf-8") as handle:
        handle.write(module.KEYMAP)
    yield module
    control.unload_plugin("LSP.boot")


def test_lsp_leaves_proposals_alone_and_ctrl_s_accepts_the_text_the_user_saw(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str, lsp: types.ModuleType
) -> None:
    window, client, path, view, _other = setup(companion, clients, workspace)
    # The user's own file: LSP serves it, so Ctrl+S runs lsp_save, which edits it, then saves.
    control.type_text(view, "format_me = 0\n")
    assert control.press_keys(view, "ctrl+s") == "lsp_save"
    control.pump_until(lambda: not view.is_dirty(), 30, "lsp_save to save the user's file")
    assert text(view).endswith(lsp.FIX) and "FORMAT_ME" in text(view)
    open_review(client, path, "format_me = 1\n")
    current, proposal = review_views(window)
    control.type_text(proposal, "# mine\n")
    seen = text(proposal)
    for review_view in (proposal, current):
        assert review_view is not None and not lsp.is_regular_view(review_view)
    assert control.press_keys(proposal, "ctrl+s") == "gemini_companion_save_review"  # not LSP's lsp_save
    assert client.wait_notification("ide/diffAccepted") == {"filePath": path, "content": seen}
    control.settle()
    assert proposal.id() not in lsp.saves


def test_lsp_save_on_a_proposal_accepts_it_without_running_lsps_tasks(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str, lsp: types.ModuleType
) -> None:
    """Where LSP serves a proposal anyway (a build that does not read `repl`, a binding of the
    user's own), its `lsp_save` is Save: it accepts what the user saw, and LSP's tasks never run."""
    window, client, path, _view, _other = setup(companion, clients, workspace)
    open_review(client, path, "format_me = 1\n")
    _current, proposal = review_views(window)
    lsp.sessions.add(proposal.id())
    control.focus(proposal)
    proposal.run_command("lsp_save", {"async": True})
    assert client.wait_notification("ide/diffAccepted") == {"filePath": path, "content": "format_me = 1\n"}
    control.settle()
    assert proposal.id() not in lsp.saves


def test_a_proposal_changed_after_accept_is_shown_again_and_not_sent(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str, lsp: types.ModuleType
) -> None:
    """Accept reads the file on a thread first; an edit from another package meanwhile (a late code
    action) means the text the user accepted is not the text on screen: nothing is sent."""
    window, client, path, _view, _other = setup(companion, clients, workspace)
    open_review(client, path, "a = 1\n")
    _current, proposal = review_views(window)
    control.click_link(proposal, "accept")  # the disk check runs; its answer waits for the main thread
    proposal.run_command("lsp_apply_document_edit", {"text": "a = 1\n" + lsp.FIX})
    control.settle()
    assert client.received("ide/diffAccepted") == []
    assert "changed after you accepted it" in banner(proposal)
    assert window.active_view() == proposal
    control.click_link(proposal, "accept")  # seen now: sent as shown
    assert client.wait_notification("ide/diffAccepted") == {"filePath": path, "content": "a = 1\n" + lsp.FIX}

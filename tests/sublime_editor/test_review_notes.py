"""The Sublime review says what accepting changes besides the lines (issue #36): a dropped final
newline, a new file's CRLF, in the banner above the proposal (core/write_notes.py computes them)."""

from __future__ import annotations

import os
from collections.abc import Callable

from tests.sublime_editor.conftest import Companion, ThreadedClient, write
from tests.sublime_editor.test_review import banner, open_review, review_views
from tests.sublime_fake import control


def test_a_proposal_without_the_files_final_newline_says_so_in_the_banner(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    path = write(workspace, "notes.txt", "line 1\nline 2\n")
    open_review(client, path, "line 1\nline 2")
    _, proposal = review_views(window)
    assert "no newline at end of file" in banner(proposal)


def test_a_new_crlf_file_says_its_line_endings_in_the_banner(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)
    open_review(client, os.path.join(workspace, "made.txt"), "one\r\ntwo\r\n")
    _, proposal = review_views(window)
    assert "line endings: CRLF" in banner(proposal)

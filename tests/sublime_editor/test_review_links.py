"""A file with other hard links is written in place, so accepting changes every name of it, and
those may lie outside the workspace: the review's banner says so (issue #24)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tests.sublime_editor.conftest import Companion, ThreadedClient
from tests.sublime_editor.test_review import banner, open_review, review_views, setup


def test_the_banner_says_how_many_other_links_the_file_has(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str, tmp_path: Path
) -> None:
    _window, client, path, _view, _other = setup(companion, clients, workspace)
    os.link(path, tmp_path / "outside-the-workspace.py")
    os.link(path, tmp_path / "another-name.py")
    open_review(client, path, "def f():\n    return 2\n")
    _current, proposal = review_views(_window)
    assert "This file has 2 other links (hard links, maybe outside the workspace); accepting changes them too." in (
        banner(proposal)
    )


def test_a_file_with_one_name_says_nothing_of_links(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    window, client, path, _view, _other = setup(companion, clients, workspace)
    open_review(client, path, "def f():\n    return 2\n")
    _current, proposal = review_views(window)
    assert "other link" not in banner(proposal)

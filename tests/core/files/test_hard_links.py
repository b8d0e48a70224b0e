"""A file with other hard links: the review's before-text counts them (read off the editor's main
thread, with the text), and the headless review says that accepting changes them too (issue #24)."""

from __future__ import annotations

import os
from pathlib import Path

from companion.core.files import disk_text
from companion.headless.editor import unified_diff


def test_the_read_counts_the_other_links_and_the_headless_review_says_so(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("old\n")
    assert disk_text.read(str(path)).other_links == 0
    assert "other link" not in unified_diff(str(path), "new\n")
    os.link(path, tmp_path / "elsewhere.py")
    assert disk_text.read(str(path)).other_links == 1
    assert unified_diff(str(path), "new\n").endswith(
        "This file has 1 other link (a hard link, maybe outside the workspace); accepting changes it too.\n"
    )
    os.link(path, tmp_path / "third-name.py")
    assert "This file has 2 other links" in unified_diff(str(path), "new\n", disk_text.read(str(path)))


def test_a_new_file_has_no_links_to_speak_of(tmp_path: Path) -> None:
    missing = str(tmp_path / "new.py")
    assert disk_text.read(missing).other_links == 0
    assert "other link" not in unified_diff(missing, "created\n")

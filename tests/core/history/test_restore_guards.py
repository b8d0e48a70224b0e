"""A restore (or a write) never creates anything outside the workspace folders, on the path with folder
descriptors (POSIX) and on the one without (Windows, and any OS whose `os.supports_dir_fd` lacks
open/mkdir): forced here on Linux so both are proved on every run."""

from __future__ import annotations

import os
import sys

import pytest

from companion.core.files import writing
from companion.core.files.paths import PathPolicy, WorkspaceError
from companion.core.files.textfile import NEW_FILE
from companion.core.history import restore
from companion.core.history.restore import RestoreFailed
from companion.core.history.turns import Turns


def write(path: str, data: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(data)
    return path


@pytest.mark.skipif(sys.platform == "win32", reason="creating a symbolic link needs a privilege there")
@pytest.mark.parametrize("dir_fd", [True, False], ids=["dir_fd", "no_dir_fd"])
def test_a_missing_folder_under_a_folder_swapped_for_a_link_is_never_created_outside(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch, dir_fd: bool
) -> None:
    if dir_fd and not restore.DIR_FD:
        pytest.skip("this OS has no dir_fd for open/mkdir")
    monkeypatch.setattr(restore, "DIR_FD", dir_fd)
    ws = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    outside = os.path.join(str(tmp_path), "outside")
    os.makedirs(outside)
    kept = write(os.path.join(ws, "a", "b", "c.txt"), "C\n")
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    turns.begin()
    os.remove(kept)
    os.rmdir(os.path.dirname(kept))  # the turn removed a/b; a/ stays
    turns.end("Scripted", {})
    # After the turn: "a" (not in the change set) becomes a link to a folder outside.
    os.rmdir(os.path.join(ws, "a"))
    os.symlink(outside, os.path.join(ws, "a"))

    refusal = "a symbolic link appeared" if dir_fd else "it would be outside the workspace"
    with pytest.raises(RestoreFailed, match=refusal):
        turns.revert([kept])  # only the file: its missing folder a/b must be made first
    assert os.listdir(outside) == []  # no "b" made through the link
    assert os.readlink(os.path.join(ws, "a")) == outside


@pytest.mark.skipif(sys.platform == "win32", reason="creating a symbolic link needs a privilege there")
def test_write_file_without_dir_fd_creates_no_folder_through_a_folder_swapped_for_a_link(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same rule (writing.make_parents) for an accepted write_file of a new file in a new folder."""
    monkeypatch.setattr(writing, "DIR_FD", False)
    ws = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    outside = os.path.join(str(tmp_path), "outside")
    os.makedirs(os.path.join(ws, "a"))
    os.makedirs(outside)
    policy = PathPolicy([ws])
    target = policy.resolve(os.path.join(ws, "a", "b", "new.txt"), must_exist=False)
    os.rmdir(os.path.join(ws, "a"))  # swapped after the check
    os.symlink(outside, os.path.join(ws, "a"))
    with pytest.raises(WorkspaceError, match="it would be outside the workspace"):
        writing.write_atomically(policy, target, "text\n", NEW_FILE, "new.txt")
    assert os.listdir(outside) == []

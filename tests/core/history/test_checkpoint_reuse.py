"""What an incremental checkpoint reuses (companion/core/history/checkpoints.py): a folder's listing and
exclusion decisions when it lists the same names under the same .gitignore rules, the previous
entries of files whose lstat is unchanged, and the time their contents were last confirmed. Each
test changes the workspace in a way the reuse must still notice (real files, temporary folders)."""

from __future__ import annotations

import os

import pytest

from companion.core.history import checkpoints
from companion.core.history.checkpoint_store import CheckpointStore
from companion.core.history.checkpoints import RACY_NS, Checkpoint, Checkpointer, Limits

OLD_NS = 1_600_000_000 * 10**9  # long before any checkpoint (not within RACY_NS)


def write(path: str, data: str, mtime_ns: int = OLD_NS) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def files(point: Checkpoint) -> list[str]:
    return sorted(os.path.basename(p) for p, e in point.entries.items() if e.kind != "dir")


def keep_folder_mtime(folder: str) -> None:
    """Set a folder's mtime back, as a file system with coarse or lazy folder times could leave it:
    the reuse must not depend on it."""
    os.utime(folder, ns=(OLD_NS, OLD_NS))


@pytest.fixture
def ws(tmp_path: object) -> str:
    path = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    os.makedirs(os.path.join(path, ".git"))  # a repository: its .gitignore applies
    return path


@pytest.fixture
def checkpointer(ws: str, tmp_path: object) -> Checkpointer:
    return Checkpointer(CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws]), [ws])


def twice(checkpointer: Checkpointer) -> Checkpoint:
    """Two checkpoints of the same state: the second reuses the first's listings."""
    first = checkpointer.take()
    assert checkpointer.take() is first
    return first


def test_a_folder_whose_listing_was_reused_still_sees_a_new_and_a_renamed_file(
    ws: str, checkpointer: Checkpointer
) -> None:
    sub = os.path.join(ws, "src")
    write(os.path.join(sub, "a.txt"), "a\n")
    write(os.path.join(sub, "b.txt"), "b\n")
    twice(checkpointer)
    write(os.path.join(sub, "c.txt"), "c\n")
    os.rename(os.path.join(sub, "a.txt"), os.path.join(sub, "z.txt"))
    keep_folder_mtime(sub)
    point = checkpointer.take()
    assert files(point) == ["b.txt", "c.txt", "z.txt"]
    assert point.entries[os.path.join(sub, "z.txt")].digest  # covered, with its content


def test_a_gitignore_edited_in_place_covers_and_excludes_files(ws: str, checkpointer: Checkpointer) -> None:
    write(os.path.join(ws, ".gitignore"), "*.log\n")
    write(os.path.join(ws, "debug.log"), "log\n")
    write(os.path.join(ws, "notes.txt"), "notes\n")
    assert files(twice(checkpointer)) == [".gitignore", "notes.txt"]
    write(os.path.join(ws, ".gitignore"), "*.txt\n")  # same size, same mtime: only the rules changed
    keep_folder_mtime(ws)
    assert files(checkpointer.take()) == [".gitignore", "debug.log"]


def test_a_nested_gitignore_edited_in_place_is_applied(ws: str, checkpointer: Checkpointer) -> None:
    sub = os.path.join(ws, "pkg")
    write(os.path.join(sub, ".gitignore"), "gen_*\n")
    write(os.path.join(sub, "gen_a.py"), "generated\n")
    write(os.path.join(sub, "main.py"), "main\n")
    assert files(twice(checkpointer)) == [".gitignore", "main.py"]
    write(os.path.join(sub, ".gitignore"), "main*\n")
    keep_folder_mtime(sub)
    assert files(checkpointer.take()) == [".gitignore", "gen_a.py"]


def test_an_ignored_folder_replaced_by_a_file_of_the_same_name_is_covered(ws: str, checkpointer: Checkpointer) -> None:
    write(os.path.join(ws, ".gitignore"), "build/\n")  # folders only
    write(os.path.join(ws, "build", "out.o"), "object\n")
    assert files(twice(checkpointer)) == [".gitignore"]
    os.remove(os.path.join(ws, "build", "out.o"))
    os.rmdir(os.path.join(ws, "build"))
    write(os.path.join(ws, "build"), "now a file\n")
    keep_folder_mtime(ws)
    point = checkpointer.take()
    assert files(point) == [".gitignore", "build"]
    assert point.entries[os.path.join(ws, "build")].digest


def test_an_exclude_pattern_still_applies_when_the_same_name_changes_kind(ws: str, tmp_path: object) -> None:
    limits = Limits(folder_excludes=["cache"])
    checkpointer = Checkpointer(CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws]), [ws], limits)
    write(os.path.join(ws, "cache"), "a file: not a folder pattern's business\n")
    assert files(twice(checkpointer)) == ["cache"]
    os.remove(os.path.join(ws, "cache"))
    write(os.path.join(ws, "cache", "inner.txt"), "excluded with its folder\n")
    keep_folder_mtime(ws)
    assert files(checkpointer.take()) == []


def test_a_file_written_just_before_a_checkpoint_is_read_again_only_until_its_mtime_settles(
    ws: str, checkpointer: Checkpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    mtime = OLD_NS + 100 * 10**9
    path = write(os.path.join(ws, "fresh.txt"), "fresh\n", mtime)
    now = [mtime + RACY_NS // 2]  # the first checkpoint comes within the racy window
    monkeypatch.setattr(checkpoints.time, "time_ns", lambda: now[0])
    read: list[str] = []
    real_capture = checkpoints.capture
    monkeypatch.setattr(checkpoints, "capture", lambda e, *a: read.append(e.path) or real_capture(e, *a))
    first = checkpointer.take()
    reads = []
    for step in (RACY_NS // 4, 2 * RACY_NS, RACY_NS // 4, RACY_NS // 4):
        now[0] += step
        assert checkpointer.take() is first
        reads.append(len(read))
    # Read again while the mtime is within RACY_NS of the last time it was read, then never again
    # (the unchanged checkpoint used to keep its first time, so such a file was read on every take).
    assert reads == [2, 3, 3, 3]
    assert read == [path] * 3


def test_a_file_deleted_from_a_reused_listing_is_gone(ws: str, checkpointer: Checkpointer) -> None:
    sub = os.path.join(ws, "src")
    write(os.path.join(sub, "a.txt"), "a\n")
    gone = write(os.path.join(sub, "b.txt"), "b\n")
    twice(checkpointer)
    os.remove(gone)
    keep_folder_mtime(sub)
    assert files(checkpointer.take()) == ["a.txt"]

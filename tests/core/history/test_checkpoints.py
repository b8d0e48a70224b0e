"""Checkpoints of a workspace and a turn's change set (companion/core/): real files in temporary
folders, the hostile cases of issue 30, and the rule that a revert or restore never overwrites a
change made after the turn ended."""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections.abc import Callable

import pytest

from companion.core.history import checkpoints
from companion.core.history.checkpoint_store import CheckpointStore
from companion.core.history.checkpoints import Checkpointer, Limits
from companion.core.history.restore import RestoreFailed, RestoreRefused
from companion.core.history.turns import Turns
from companion.core.system.user_cache import user_cache_folder
from tests.core.history.test_checkpoint_prune import age_store

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, modes and dir_fd are POSIX")
OLD_NS = 1_600_000_000 * 10**9  # an mtime long before any checkpoint (not within RACY_NS)


def write(path: str, data: bytes | str, mode: int | None = None, old: bool = True) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)
    if mode is not None:
        os.chmod(path, mode)
    if old:
        os.utime(path, ns=(OLD_NS, OLD_NS))
    return path


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


@pytest.fixture
def ws(tmp_path: object) -> str:
    path = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    os.makedirs(path)
    return path


@pytest.fixture
def cache(tmp_path: object) -> str:
    return os.path.join(str(tmp_path), "cache")


def turn(cache: str, ws: str, change: Callable[[], object], writes: dict[str, bool] | None = None, **limits: object):
    turns = Turns(cache, [ws], Limits(**limits))  # type: ignore[arg-type]
    turns.begin()
    change()
    return turns, {c.path: c for c in turns.end("Scripted", writes or {})}


def test_a_checkpoint_records_each_file_and_keeps_its_content_privately(ws: str, cache: str) -> None:
    path = write(os.path.join(ws, "src", "run.sh"), "echo hi\n", 0o755)
    store = CheckpointStore(cache, [ws])
    point = Checkpointer(store, [ws]).take()
    entry = point.entries[path]
    assert (entry.kind, entry.size, entry.mtime_ns, stat.S_IMODE(entry.mode)) == ("file", 8, OLD_NS, 0o755)
    assert read(store.blob_path(entry.digest)) == b"echo hi\n"
    assert point.entries[os.path.join(ws, "src")].kind == "dir"
    if sys.platform != "win32":
        assert stat.S_IMODE(os.stat(store.blob_path(entry.digest)).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(store.blobs).st_mode) == 0o700


def test_an_unchanged_file_is_not_read_again_and_an_unchanged_workspace_reuses_its_checkpoint(
    ws: str, cache: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        write(os.path.join(ws, f"f{n}.txt"), f"text {n}\n")
    checkpointer = Checkpointer(CheckpointStore(cache, [ws]), [ws])
    first = checkpointer.take()
    read_again: list[str] = []
    real_capture = checkpoints.capture
    monkeypatch.setattr(checkpoints, "capture", lambda e, *a: read_again.append(e.path) or real_capture(e, *a))
    assert checkpointer.take() is first
    assert read_again == []
    write(os.path.join(ws, "f1.txt"), "changed\n")
    assert Checkpointer(CheckpointStore(cache, [ws]), [ws]).take().id != first.id  # from the saved one too
    assert read_again == [os.path.join(ws, "f1.txt")]


def test_a_same_size_rewrite_with_the_old_mtime_is_still_seen(ws: str, cache: str) -> None:
    path = write(os.path.join(ws, "a.txt"), "aaaa\n")
    _, found = turn(cache, ws, lambda: write(path, "bbbb\n"))  # same size, mtime set back to OLD_NS
    assert found[path].change == "modified"


def test_excluded_and_gitignored_files_and_the_repository_are_left_out(ws: str, cache: str) -> None:
    write(os.path.join(ws, ".gitignore"), "build/\n*.log\n")
    os.makedirs(os.path.join(ws, ".git", "objects"))
    kept = write(os.path.join(ws, "main.py"), "x = 1\n")
    for name in ("build/out.o", "debug.log", ".env", ".git/HEAD"):
        write(os.path.join(ws, name), "secret or generated\n")
    point = Checkpointer(CheckpointStore(cache, [ws]), [ws], Limits(file_excludes=[".env"])).take()
    files = sorted(p for p, e in point.entries.items() if e.kind != "dir")
    assert files == [os.path.join(ws, ".gitignore"), kept]


def test_files_beyond_the_limits_are_listed_as_not_covered(ws: str, cache: str) -> None:
    big = write(os.path.join(ws, "big.bin"), b"x" * 2000)
    small = [write(os.path.join(ws, f"s{n}.txt"), "s\n") for n in range(3)]
    point = Checkpointer(CheckpointStore(cache, [ws]), [ws], Limits(max_file_bytes=1000, max_files=2)).take()
    assert point.entries[big].reason == "larger than the 1000-byte limit"
    assert not point.entries[big].digest
    assert [point.entries[p].covered for p in small] == [True, True, False]
    assert point.entries[small[2]].reason == "beyond the 2-file limit"


def test_a_file_beyond_the_size_limit_is_reported_and_a_revert_of_it_is_refused(ws: str, cache: str) -> None:
    big = write(os.path.join(ws, "big.bin"), b"x" * 2000)
    turns, found = turn(cache, ws, lambda: write(big, b"y" * 2001), max_file_bytes=1000)
    assert found[big].change == "modified"
    assert "not covered (larger than the 1000-byte limit)" in found[big].note
    with pytest.raises(RestoreRefused, match="not covered by the checkpoint"):
        turns.revert([big])
    assert read(big) == b"y" * 2001


def test_line_counts_binary_files_and_attribution(ws: str, cache: str) -> None:
    text = write(os.path.join(ws, "a.txt"), "one\ntwo\nthree\n")
    blob = write(os.path.join(ws, "b.bin"), b"\x00\x01\x02")
    gone = write(os.path.join(ws, "gone.txt"), "1\n2\n")
    new = os.path.join(ws, "new.txt")

    def change() -> None:
        write(text, "one\nTWO\nthree\nfour\n")
        write(blob, b"\x00\x01\x03")
        os.remove(gone)
        write(new, "n\n")

    _, found = turn(cache, ws, change, {text: True, new: False})
    assert [(c.change, c.added, c.removed, c.by, c.reviewed) for c in found.values()] == [
        ("modified", 2, 1, "Scripted", True),
        ("modified", None, None, "outside", False),
        ("deleted", 0, 2, "outside", False),
        ("added", 1, 0, "Scripted", False),
    ]
    assert found[blob].binary


def test_revert_brings_back_exact_bytes_and_the_executable_bit(ws: str, cache: str) -> None:
    script = write(os.path.join(ws, "run.sh"), b"#!/bin/sh\r\necho \xff\n", 0o755)
    blob = write(os.path.join(ws, "data.bin"), bytes(range(256)))

    def change() -> None:
        os.remove(script)
        write(script, "echo changed\n", 0o644)
        write(blob, b"\x00" * 10)

    turns, _ = turn(cache, ws, change)
    assert turns.revert([script]) == []
    assert read(script) == b"#!/bin/sh\r\necho \xff\n"
    if sys.platform != "win32":
        assert stat.S_IMODE(os.stat(script).st_mode) == 0o755
    assert read(blob) == b"\x00" * 10  # only the file asked for
    turns.revert(None)
    assert read(blob) == bytes(range(256))


def test_restore_recreates_deleted_files_and_deletes_added_ones(ws: str, cache: str) -> None:
    kept = write(os.path.join(ws, "deep", "er", "k.txt"), "keep me\n")
    added = os.path.join(ws, "added", "new.txt")

    def change() -> None:
        os.remove(kept)
        os.rmdir(os.path.dirname(kept))
        write(added, "new\n")

    turns, found = turn(cache, ws, change)
    assert {found[kept].change, found[added].change} == {"deleted", "added"}
    turns.revert(None)
    assert read(kept) == b"keep me\n"
    assert not os.path.lexists(os.path.join(ws, "added"))


def test_a_change_after_the_turn_ended_refuses_the_restore_and_nothing_is_written(ws: str, cache: str) -> None:
    first = write(os.path.join(ws, "a.txt"), "a\n")
    second = write(os.path.join(ws, "b.txt"), "b\n")
    turns, _ = turn(cache, ws, lambda: (write(first, "agent a\n"), write(second, "agent b\n")))
    write(second, "the user's own later edit\n", old=False)
    with pytest.raises(RestoreRefused, match=r"b\.txt changed since the turn ended, so nothing was written"):
        turns.revert(None)
    assert read(first) == b"agent a\n"
    assert read(second) == b"the user's own later edit\n"
    turns.revert([first])  # a file nobody touched since can still be reverted alone
    assert read(first) == b"a\n"


def test_an_earlier_revert_is_not_taken_for_a_later_change(ws: str, cache: str) -> None:
    first = write(os.path.join(ws, "a.txt"), "a\n")
    second = write(os.path.join(ws, "b.txt"), "b\n")
    turns, _ = turn(cache, ws, lambda: (write(first, "agent a\n"), write(second, "agent b\n")))
    turns.revert([first])
    assert [c.path for c in Turns(cache, [ws]).change_set()] == [second]
    Turns(cache, [ws]).revert(None)
    assert (read(first), read(second)) == (b"a\n", b"b\n")


@posix_only
def test_a_file_replaced_by_a_symlink_to_outside_is_restored_as_a_file_and_outside_is_untouched(
    ws: str, cache: str, tmp_path: object
) -> None:
    inside = write(os.path.join(ws, "config.txt"), "mine\n")
    outside = write(os.path.join(str(tmp_path), "outside.txt"), "not yours\n")

    def change() -> None:
        os.remove(inside)
        os.symlink(outside, inside)

    turns, found = turn(cache, ws, change)
    assert found[inside].change == "modified"
    assert found[inside].note == f"now a symbolic link to {outside}"
    turns.revert(None)
    assert not os.path.islink(inside)
    assert read(inside) == b"mine\n"
    assert read(outside) == b"not yours\n"


@posix_only
def test_a_folder_swapped_for_a_link_to_outside_after_the_check_is_never_written_through(
    ws: str, cache: str, tmp_path: object
) -> None:
    target = write(os.path.join(ws, "sub", "x.txt"), "A\n")
    turns, _ = turn(cache, ws, lambda: write(target, "B\n"))
    elsewhere = os.path.join(str(tmp_path), "elsewhere")
    os.rename(os.path.join(ws, "sub"), elsewhere)  # the same bytes, now outside
    os.symlink(elsewhere, os.path.join(ws, "sub"))
    with pytest.raises(RestoreFailed, match="a symbolic link appeared"):
        turns.revert([target])
    assert read(os.path.join(elsewhere, "x.txt")) == b"B\n"


def test_a_folder_turned_into_a_file_is_reported_and_restored(ws: str, cache: str) -> None:
    folder = os.path.join(ws, "pkg")
    inner = [write(os.path.join(folder, f"m{n}.py"), f"m{n}\n") for n in range(2)]

    def change() -> None:
        for path in inner:
            os.remove(path)
        os.rmdir(folder)
        write(folder, "now a file\n")

    turns, found = turn(cache, ws, change)
    assert [(c.path, c.change) for c in found.values()] == [(folder, "added"), *((p, "deleted") for p in inner)]
    turns.revert(None)
    assert os.path.isdir(folder)
    assert [read(p) for p in inner] == [b"m0\n", b"m1\n"]


def test_ten_thousand_files_created_by_a_command_are_listed_and_removed(ws: str, cache: str) -> None:
    def change() -> None:
        for n in range(10_000):
            write(os.path.join(ws, "gen", f"{n // 100}", f"{n}.txt"), "g\n", old=False)

    turns, found = turn(cache, ws, change)
    assert len(found) == 10_000
    assert {(c.change, c.by) for c in found.values()} == {("added", "outside")}
    turns.revert(None)
    assert os.listdir(ws) == []


@posix_only
def test_a_fifo_is_listed_as_not_covered_and_never_opened(ws: str, cache: str) -> None:
    path = write(os.path.join(ws, "f.txt"), "f\n")

    def change() -> None:
        os.remove(path)
        os.mkfifo(path)  # a reader opening it without O_NONBLOCK would wait forever for a writer

    turns, found = turn(cache, ws, change)
    assert found[path].change == "modified"
    assert found[path].note == "now not covered (a fifo: never read)"
    turns.revert([path])
    assert read(path) == b"f\n"


def unpinned(turns: Turns) -> None:
    """Wait for the pin file a closed chat removes on a thread of its own."""
    for thread in threading.enumerate():
        if thread.name == "gemini-companion-unpin":
            thread.join()


def test_only_the_last_checkpoints_and_their_blobs_are_kept(ws: str, cache: str) -> None:
    path = os.path.join(ws, "a.txt")
    for n in range(6):
        turns = Turns(cache, [ws])  # a chat each: a living chat's own prompts stay pinned (test_restore_plan)
        turns.checkpointer.keep = 3
        write(path, f"version {n}\n", old=False)
        turns.begin()
        turns.end("Scripted", {})
        turns.close()  # the chat ended: its prompts are no longer pinned (the record names its own)
        unpinned(turns)
        # A prune spares what was written in its first moments (another process may be checkpointing):
        # chats a second apart, not six within those 50 ms on an idle machine.
        age_store(turns.store, seconds=60)
    store = turns.store
    assert len(store.point_ids()) == 3
    kept = {read(store.blob_path(d)) for d in os.listdir(store.blobs) if not d.startswith(".")}
    assert kept == {f"version {n}\n".encode() for n in (3, 4, 5)}


def test_the_headless_cache_folder_is_the_platforms_per_user_one() -> None:
    home = os.path.expanduser("~")
    assert user_cache_folder({}, "linux") == os.path.join(home, ".cache", "gemini-companion")
    assert user_cache_folder({"XDG_CACHE_HOME": "/x"}, "linux") == os.path.join("/x", "gemini-companion")
    assert user_cache_folder({}, "darwin") == os.path.join(home, "Library", "Caches", "Gemini Companion")
    assert user_cache_folder({"LOCALAPPDATA": "C:\\L"}, "win32") == os.path.join("C:\\L", "Gemini Companion")
    assert user_cache_folder({"GEMINI_COMPANION_CACHE": "/tmp/c"}, "linux") == os.path.abspath("/tmp/c")

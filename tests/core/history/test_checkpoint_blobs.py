"""The checkpoint store's blobs (companion/core/history/checkpoint_store.py): a torn blob is replaced by a
good copy when a later capture has the same bytes; pruning keeps every kept checkpoint's blobs while
reading back only the checkpoints the chat did not save itself. Real files in temporary folders."""

from __future__ import annotations

import os

import pytest

from companion.core.history import checkpoints
from companion.core.history.checkpoint_store import BlobMissing, CheckpointStore
from companion.core.history.checkpoints import Checkpointer
from companion.core.history.turns import Turns


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def write(path: str, data: bytes) -> str:
    with open(path, "wb") as handle:
        handle.write(data)
    return path


@pytest.fixture
def ws(tmp_path: object) -> str:
    path = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    os.makedirs(path)
    return path


@pytest.mark.parametrize("size", [6, 3 * 1024 * 1024])  # read whole, and streamed chunk by chunk
def test_a_blob_cut_short_by_a_crash_is_written_again_by_the_next_capture_of_its_bytes(
    ws: str, tmp_path: object, size: int
) -> None:
    data = (b"hello\n" * size)[:size]
    store = CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws])
    path = write(os.path.join(ws, "a.txt"), data)
    digest = Checkpointer(store, [ws]).take().entries[path].digest
    with open(store.blob_path(digest), "r+b") as handle:
        handle.truncate(size // 2)  # the rename reached the disk, not all of the bytes
    write(os.path.join(ws, "b.txt"), data)  # a new file with the same bytes
    Checkpointer(store, [ws]).take()
    assert store.read_blob(digest) == data


def test_a_damaged_blob_of_the_right_length_is_removed_when_read_and_stored_again_later(
    ws: str, tmp_path: object
) -> None:
    store = CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws])
    path = write(os.path.join(ws, "a.txt"), b"hello\n")
    digest = Checkpointer(store, [ws]).take().entries[path].digest
    write(store.blob_path(digest), b"HELLO\n")
    with pytest.raises(BlobMissing, match="was damaged and is removed"):
        store.read_blob(digest)
    write(os.path.join(ws, "b.txt"), b"hello\n")
    Checkpointer(store, [ws]).take()
    assert store.read_blob(digest) == b"hello\n"


def test_prune_reads_only_the_checkpoints_it_did_not_save_and_keeps_their_blobs(
    ws: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = os.path.join(str(tmp_path), "cache")
    path = os.path.join(ws, "a.txt")
    turns = Turns(cache, [ws])
    turns.checkpointer.keep = 3
    loaded: list[str] = []
    real_load = checkpoints.load
    monkeypatch.setattr(
        checkpoints, "load", lambda store, point_id: loaded.append(point_id) or real_load(store, point_id)
    )
    for n in range(5):
        write(path, f"version {n}\n".encode())
        turns.begin()
        turns.end("Scripted", {})
    # every checkpoint was its own: none read back but the chat's own prompts older than the last
    # 3, which it keeps (pinned) for Restore checkpoint and whose contents it must then keep too
    assert set(loaded) <= set(turns.prompts[:-1]), (loaded, turns.prompts)
    other = Turns(cache, [ws])  # another chat in the same folders saves one
    write(path, b"the other chat's\n")
    theirs = other.begin().id
    loaded.clear()
    write(path, b"version 5\n")
    turns.begin()
    turns.end("Scripted", {})
    store = turns.store
    assert set(loaded) - set(turns.prompts) == {theirs}  # of the others, only the other chat's checkpoint
    kept = {read(store.blob_path(d)) for d in os.listdir(store.blobs) if not d.startswith(".")}
    # the last 3 checkpoints' contents, and the chat's prompts' (pinned)
    assert kept == {*(f"version {n}\n".encode() for n in range(6)), b"the other chat's\n"}


def test_a_file_whose_listing_gave_no_inode_is_still_captured(ws: str, tmp_path: object) -> None:
    # On Windows os.DirEntry.stat() leaves st_ino 0, and checkpoints take their lstat from the listing.
    path = write(os.path.join(ws, "a.txt"), b"hello\n")
    entry = checkpoints.stat_entry(path, os.lstat(path))._replace(ino=0)
    store = CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws])
    captured = checkpoints.capture(entry, store)
    assert (captured.reason, store.read_blob(captured.digest)) == ("", b"hello\n")

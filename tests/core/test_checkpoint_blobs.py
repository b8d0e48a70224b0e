"""A torn blob in the checkpoint store (companion/core/checkpoint_store.py) is replaced by a good
copy when a later capture has the same bytes: real files in temporary folders."""

from __future__ import annotations

import os

import pytest

from companion.core.checkpoint_store import BlobMissing, CheckpointStore
from companion.core.checkpoints import Checkpointer


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

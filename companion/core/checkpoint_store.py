"""Where a workspace's checkpoints are kept: a private folder per workspace in the cache folder.

Layout, under `<cache folder>/checkpoints/<sha256 of the workspace folders' real paths>/`:
- `blobs/<sha256>`: each content once (content-addressed), 0600, in a 0700 folder;
- `points/<id>.json`: one checkpoint (its entries, no content);
- `last_turn.json`: the last turn's record (which checkpoints, who wrote what; `changes` reads it).

Nothing is kept outside the cache folder. Kept: the last `keep` checkpoints (default 20) and the
ones the last turn's record names; blobs no kept checkpoint refers to are deleted (`prune`).
A blob is written to a private temporary file and renamed in place without fsync: a blob torn by a
crash no longer matches its name, and every read checks the digest before using it. A torn blob is
replaced by the next capture of the same bytes: one of another length at once, a damaged one once a
read has found it (and removed it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .reading import iter_at_most
from .token_files import atomic_write_private, ensure_private_dir
from .writing import remove_quietly

CHUNK = 1024 * 1024
KEEP_CHECKPOINTS = 20
RECORD_NAME = "last_turn.json"
_BINARY = getattr(os, "O_BINARY", 0)
_DIGEST = re.compile(r"[0-9a-f]{64}\Z")
_POINT_ID = re.compile(r"[0-9]{20}-[0-9a-f]{6}\Z")  # checkpoints.new_id


class StoreDamaged(ValueError):
    """The store's own index (a checkpoint, the turn record) holds what the store never writes: it was
    damaged or tampered with. Nothing is read or written through it; the message says what to do."""


def damaged(root: str, what: str) -> StoreDamaged:
    return StoreDamaged(
        f"the checkpoint store {root} is damaged ({what}); nothing was read or written through it. "
        "Delete that folder to start again (its checkpoints are lost)."
    )


def is_digest(value: object) -> bool:
    return isinstance(value, str) and _DIGEST.match(value) is not None


class BlobMissing(OSError):
    """A checkpoint's content is gone or damaged in the cache; the message says which file."""


def hash_fd(fd: int, limit: int, sink: Callable[[bytes], object] | None = None) -> tuple[str, int]:
    """sha256 and length of at most `limit` bytes of `fd` (a file that grows while it is read cannot
    keep us reading); each chunk also goes to `sink`, if given."""
    digest, length = hashlib.sha256(), 0
    for chunk in iter_at_most(fd, limit):
        digest.update(chunk)
        length += len(chunk)
        if sink is not None:
            sink(chunk)
    return digest.hexdigest(), length


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def workspace_key(folders: Iterable[str]) -> str:
    """The folder name of a workspace: the same real folders give the same key."""
    return key_of_real([os.path.realpath(f) for f in folders])


def key_of_real(real_folders: Iterable[str]) -> str:
    """`workspace_key` of folders already resolved (a checkpoint's, as saved: checked against its store)."""
    joined = "\0".join(real_folders)
    return hashlib.sha256(joined.encode("utf-8", "surrogateescape")).hexdigest()[:32]


class CheckpointStore:
    """One workspace's checkpoints and blobs (see the module docstring)."""

    def __init__(self, cache_folder: str, folders: Iterable[str]) -> None:
        # Real, as a scan names paths: a workspace that holds the cache (a chat in the home folder)
        # never takes the store into its own checkpoints (`Scan`), nor does a restore remove it.
        self.cache_folder = os.path.realpath(cache_folder)
        self.root = os.path.join(cache_folder, "checkpoints", workspace_key(folders))
        self.blobs = os.path.join(self.root, "blobs")
        self.points = os.path.join(self.root, "points")
        self._ready = False

    def prepare(self) -> None:
        if not self._ready:
            for folder in (self.blobs, self.points):
                ensure_private_dir(folder)
            self._ready = True

    # -- blobs --

    @property
    def key(self) -> str:
        """The workspace key this store was made for (`workspace_key`)."""
        return os.path.basename(self.root)

    def blob_path(self, digest: str) -> str:
        """Where a content is kept; its name is a sha256 and nothing else (a name from a tampered index
        never leads out of the store)."""
        if not is_digest(digest):
            raise BlobMissing(f"{digest[:80]!r} is not a content of {self.blobs}: its index is damaged")
        return os.path.join(self.blobs, digest)

    def point_file(self, point_id: str) -> str:
        if not isinstance(point_id, str) or _POINT_ID.match(point_id) is None:
            raise damaged(self.root, f"{str(point_id)[:80]!r} is not a checkpoint's name")
        return os.path.join(self.points, f"{point_id}.json")

    def put_fd(self, fd: int, limit: int) -> tuple[str, int]:
        """Copy at most `limit` bytes of the open file `fd` into the store, one chunk in memory at a
        time; their sha256 and length. A blob already there is not written again unless it is torn
        (not that length: a crash before the rename reached the disk, or `chunks` found it damaged)."""
        self.prepare()
        if limit > CHUNK:
            return self._copy(lambda write: hash_fd(fd, limit, write))
        data = b"".join(iter_at_most(fd, limit))  # a small file: hashed first, no copy when it is there
        known = hashlib.sha256(data).hexdigest(), len(data)
        if self._intact(*known):
            return known

        def fill(write: Callable[[bytes], object]) -> tuple[str, int]:
            write(data)
            return known

        return self._copy(fill, checked=True)

    def _intact(self, digest: str, length: int) -> bool:
        try:
            return os.stat(self.blob_path(digest)).st_size == length
        except OSError:
            return False

    def _copy(
        self, fill: Callable[[Callable[[bytes], object]], tuple[str, int]], checked: bool = False
    ) -> tuple[str, int]:
        """Write a blob through a private temporary file renamed in place; `fill` writes the bytes and
        returns their digest and length. An intact blob of that digest already there is kept (unless
        `checked`: the caller just found none)."""
        temp = os.path.join(self.blobs, f".{secrets.token_hex(8)}.tmp")
        out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY, 0o600)
        try:
            try:
                name, length = fill(lambda data: _write_all(out, data))
            finally:
                os.close(out)
            if not checked and self._intact(name, length):
                os.unlink(temp)
            else:
                os.replace(temp, self.blob_path(name))
        except BaseException:
            remove_quietly(temp)
            raise
        return name, length

    def chunks(self, digest: str) -> Iterator[bytes]:
        """The blob's bytes in chunks; BlobMissing once read whole if they do not match `digest`."""
        check = hashlib.sha256()
        try:
            with open(self.blob_path(digest), "rb") as handle:
                while chunk := handle.read(CHUNK):
                    check.update(chunk)
                    yield chunk
        except OSError as exc:
            raise BlobMissing(f"the saved content {digest[:12]} is missing from {self.blobs}: {exc}") from None
        if check.hexdigest() != digest:
            remove_quietly(self.blob_path(digest))  # so the next capture of these bytes stores them again
            raise BlobMissing(f"the saved content {digest[:12]} in {self.blobs} was damaged and is removed")

    def read_blob(self, digest: str) -> bytes:
        return b"".join(self.chunks(digest))

    # -- checkpoints and the turn record --

    def save_point(self, point_id: str, payload: dict[str, Any]) -> None:
        self.prepare()
        data = json.dumps(payload, separators=(",", ":")).encode()
        atomic_write_private(self.point_file(point_id), data)

    def load_point(self, point_id: str) -> dict[str, Any]:
        with open(self.point_file(point_id), "rb") as handle:
            return json.loads(handle.read())

    def point_ids(self) -> list[str]:
        """Saved checkpoints, oldest first (ids sort by time)."""
        try:
            names = os.listdir(self.points)
        except OSError:
            return []
        return sorted(n[: -len(".json")] for n in names if n.endswith(".json") and not n.startswith("."))

    def save_record(self, record: dict[str, Any]) -> None:
        self.prepare()
        atomic_write_private(os.path.join(self.root, RECORD_NAME), json.dumps(record).encode())

    def load_record(self) -> dict[str, Any] | None:
        try:
            with open(os.path.join(self.root, RECORD_NAME), "rb") as handle:
                return json.loads(handle.read())
        except (OSError, ValueError):
            return None

    def prune(self, keep: int, pinned: Iterable[str], digests_of: Any) -> None:
        """Keep the newest `keep` checkpoints and `pinned`; delete the others and every blob no kept
        checkpoint refers to. `digests_of(point_id)` lists a checkpoint's digests."""
        ids = self.point_ids()
        kept = set(ids[-keep:] if keep > 0 else []) | set(pinned)
        used: set[str] = set()
        for point_id in kept & set(ids):
            used.update(digests_of(point_id))
        self.remove_unused(kept, used)

    def remove_unused(self, kept: Iterable[str], used: Iterable[str]) -> None:
        """Delete every checkpoint not in `kept` and every blob not in `used`."""
        kept, used = set(kept), set(used)
        for point_id in self.point_ids():
            if point_id not in kept:
                remove_quietly(os.path.join(self.points, f"{point_id}.json"))
        try:
            names = os.listdir(self.blobs)
        except OSError:
            return
        for name in names:
            if name not in used and not name.startswith("."):
                remove_quietly(os.path.join(self.blobs, name))

"""Where a workspace's checkpoints are kept: a private folder per workspace in the cache folder.

Layout, under `<cache folder>/checkpoints/<sha256 of the workspace folders' real paths>/`:
- `blobs/<sha256>`: each content once (content-addressed), 0600, in a 0700 folder;
- `points/<id>.json`: one checkpoint (its entries, no content);
- `last_turn.json`: the last turn's record (which checkpoints, who wrote what; `changes` reads it);
- `workspace.json`: the workspace's folders (real paths), so that a store whose folders are all gone
  is found and removed once unused for `GONE_DAYS` (`remove_gone_stores`);
- `pins/`: the checkpoints each running chat pins, for every process (`checkpoint_pins.py`).

Nothing is kept outside the cache folder. Kept: the last `keep` checkpoints (default 20) and the
ones the last turn's record and the running chats' pins name; blobs no kept checkpoint refers to are
deleted (`prune`). What the store reads from its own index is checked before use (`StoreDamaged`):
content and checkpoint names by form, so a tampered index never leads out of the store.
A blob is written to a private temporary file and renamed in place without fsync: a blob torn by a
crash no longer matches its name, and every read checks the digest before using it. A torn blob is
replaced by the next capture of the same bytes: one of another length at once, a damaged one once a
read has found it (and removed it). A temporary file older than a day (its writer was killed
mid-copy) is removed by the next prune.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..files.reading import iter_at_most
from ..files.writing import remove_quietly
from ..system.token_files import atomic_write_private, ensure_private_dir

CHUNK = 1024 * 1024
KEEP_CHECKPOINTS = 20
RECORD_NAME = "last_turn.json"
WORKSPACE_NAME = "workspace.json"
TEMP_MAX_AGE = 24 * 3600  # seconds: no writer of the store takes this long
GONE_DAYS = 30  # a store whose folders are all gone is removed once unused this long
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
        self.folders = [os.path.realpath(f) for f in folders]
        self.root = os.path.join(cache_folder, "checkpoints", key_of_real(self.folders))
        self.blobs = os.path.join(self.root, "blobs")
        self.points = os.path.join(self.root, "points")
        self._ready = False

    def prepare(self) -> None:
        if not self._ready:
            for folder in (self.blobs, self.points):
                ensure_private_dir(folder)
            workspace = os.path.join(self.root, WORKSPACE_NAME)
            if not os.path.exists(workspace):
                atomic_write_private(workspace, json.dumps({"folders": self.folders}).encode())
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
        if self._intact(*known, touch=True):
            return known

        def fill(write: Callable[[bytes], object]) -> tuple[str, int]:
            write(data)
            return known

        return self._copy(fill, checked=True)

    def _intact(self, digest: str, length: int, touch: bool = False) -> bool:
        """Whether the blob is there whole; `touch`: and mark it used now (a prune that began before
        keeps it, `remove_unused`)."""
        path = self.blob_path(digest)
        try:
            if os.stat(path).st_size != length:
                return False
            if touch:
                os.utime(path)
            return True
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
            if not checked and self._intact(name, length, touch=True):
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

    def remove_unused(self, kept: Iterable[str], used: Iterable[str], since: float | None = None) -> None:
        """Delete every checkpoint not in `kept` and every blob not in `used`; with `since` (when the
        prune began), not those written or reused since: a chat of another process may be taking a
        checkpoint (its contents reach the store before the checkpoint that names them, and a
        content it finds already there is touched, `put_fd`)."""
        kept, used = set(kept), set(used)
        for point_id in self.point_ids():
            if point_id not in kept:
                self._remove_older(os.path.join(self.points, f"{point_id}.json"), since)
        try:
            names = os.listdir(self.blobs)
        except OSError:
            return
        for name in names:
            if name not in used and not name.startswith("."):
                self._remove_older(os.path.join(self.blobs, name), since)
        self.remove_stale_temps()

    @staticmethod
    def _remove_older(path: str, since: float | None) -> None:
        if since is not None:
            try:
                if os.lstat(path).st_mtime >= since:
                    return  # written since the prune began: the next prune decides
            except OSError:
                return
        remove_quietly(path)

    def remove_stale_temps(self, now: float | None = None) -> None:
        """Delete the temporary files older than a day: left by a writer killed mid-copy (the name of
        each writer's temporary file is its own, so no writer ever finds and removes it)."""
        now = time.time() if now is None else now
        for folder in (self.blobs, self.points, self.root, os.path.join(self.root, "pins")):
            try:
                names = [n for n in os.listdir(folder) if n.startswith(".") and n.endswith(".tmp")]
            except OSError:
                continue
            for name in names:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and now - st.st_mtime > TEMP_MAX_AGE:
                    remove_quietly(path)


def remove_gone_stores(cache_folder: str, days: float = GONE_DAYS, now: float | None = None) -> list[str]:
    """Delete the stores whose workspace folders are all gone (deleted, or on a drive that is not
    there) and that no chat used for `days`: they hold copies of files (`.env` ones too) of a folder
    that no longer exists. A store without a `workspace.json` (made before there was one) is kept.
    Returns the stores removed."""
    now = time.time() if now is None else now
    top = os.path.join(cache_folder, "checkpoints")
    try:
        names = os.listdir(top)
    except OSError:
        return []
    removed = []
    for name in names:
        root = os.path.join(top, name)
        if _gone(root, now - days * 86400):
            shutil.rmtree(root, ignore_errors=True)
            removed.append(root)
    return removed


def _gone(root: str, before: float) -> bool:
    """Whether the store at `root` is a real folder, unused since `before`, of folders all gone."""
    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return False
        with open(os.path.join(root, WORKSPACE_NAME), "rb") as handle:
            folders = json.loads(handle.read())["folders"]
        if not isinstance(folders, list) or not folders or any(os.path.exists(str(f)) for f in folders):
            return False
        used = [os.lstat(os.path.join(root, n)).st_mtime for n in os.listdir(root)]
        pins = os.path.join(root, "pins")
        if os.path.isdir(pins):
            used += [os.lstat(os.path.join(pins, n)).st_mtime for n in os.listdir(pins)]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return max([os.lstat(root).st_mtime, *used]) < before

"""Change notifications for a workspace's folders, so that a checkpoint of an unchanged workspace
need not look at every file again (`checkpoints.Checkpointer.take`).

A `FolderWatch` is armed by a full scan: the scan asks it to watch every folder it walks *before*
listing it, and the folders whose files decide what is covered (`.gitignore` files above the
workspace, a repository's `.git/info/exclude`) for those names only. Once armed, `quiet()` says
whether anything happened in them since: a file written, created, deleted, renamed, its mode or
times changed. Anything it cannot vouch for disarms it and the next checkpoint scans:
- a folder it could not watch (the system's watch limit, a folder swapped for a link meanwhile), or
  more than `MAX_FOLDERS` of them;
- a folder on a file system whose changes may come from elsewhere (NFS, SMB, FUSE, 9p as WSL's
  Windows drives): only the local file systems in `_LOCAL` are trusted;
- the event queue overflowing.
Not reported by the system, so not vouched for: a write through a memory map, and a file with more
than one hard link written through a link outside the watched folders; `Checkpointer` looks at
every file with several links itself.

Linux only (inotify, through ctypes: nothing to install). Elsewhere `start()` gives None and every
checkpoint scans, as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import sys
import weakref
from collections.abc import Collection

MAX_FOLDERS = 20_000  # kernel memory: about 1 KiB per watch; beyond this the scan is cheaper to keep

_IN_MODIFY = 0x00000002
_IN_ATTRIB = 0x00000004
_IN_CLOSE_WRITE = 0x00000008
_IN_MOVED_FROM = 0x00000040
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_DELETE = 0x00000200
_IN_DELETE_SELF = 0x00000400
_IN_MOVE_SELF = 0x00000800
_IN_Q_OVERFLOW = 0x00004000
_IN_IGNORED = 0x00008000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_CHANGES = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
)
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)

# statfs f_type of the file systems whose every change goes through this kernel (linux/magic.h).
_LOCAL = {
    0xEF53,  # ext2, ext3, ext4
    0x58465342,  # xfs
    0x9123683E,  # btrfs
    0x01021994,  # tmpfs
    0x858458F6,  # ramfs
    0x794C7630,  # overlayfs (containers)
    0xF2F52010,  # f2fs
    0x2FC12FC1,  # zfs
    0xCA451A4E,  # bcachefs
    0x52654973,  # reiserfs
    0x3153464A,  # jfs
    0x3434,  # nilfs2
}


def start() -> FolderWatch | None:
    """A new watch, or None where change notifications are not available."""
    libc = _libc()
    if libc is None:
        return None
    fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
    if fd < 0:
        return None  # the user's limit of watch instances (max_user_instances) is reached
    return FolderWatch(libc, fd)


class FolderWatch:
    """One inotify instance for a Checkpointer's life: each full scan calls `begin()`, then watches
    the folders it walks (again: the system keeps one watch per folder), then `arm()`. Closing an
    instance costs the system tens of milliseconds, so it is kept; a folder a later scan no longer
    walks (left out, gone) may stay watched, and its changes only cost a scan."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self._fd = fd
        self._close = weakref.finalize(self, os.close, fd)  # a chat dropped without close() frees it too
        self._names: dict[int, Collection[str] | None] = {}  # watch -> the names that matter (None: all)
        self._local: dict[int, bool] = {}  # st_dev -> on a trusted file system
        self.complete = True  # every folder asked for is watched
        self.armed = False

    def close(self) -> None:
        self._close()

    def begin(self) -> None:
        """A full scan starts: what happened before it, the scan sees; forget it."""
        self._changed()
        self.complete, self.armed = True, False

    def folder(self, path: str) -> None:
        """Watch `path`, a folder the scan is about to list: every change in it matters."""
        if not self._add(path, None):
            self.complete = False

    def names(self, path: str, names: Collection[str]) -> None:
        """Watch `path` (a folder above the workspace, or inside `.git`) for changes of `names`
        only; one that does not exist now is no loss (its creation shows in its parent)."""
        self._add(path, frozenset(names))

    def rules_above(self, root: str) -> None:
        """Watch what decides the `.gitignore` rules in force at `root`: a `.git` or `.gitignore`
        appearing or changing in a folder above it, a repository's `info/exclude` at or above it."""
        folder = root
        while True:
            self.repository(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                return
            self.names(parent, (".git", ".gitignore"))
            folder = parent

    def repository(self, folder: str) -> None:
        """Watch `folder`'s `.git/info/exclude`, if `folder` is (or becomes) a repository."""
        git = os.path.join(folder, ".git")
        self.names(git, ("info",))
        self.names(os.path.join(git, "info"), ("exclude",))

    def arm(self) -> None:
        """The scan is done: from now on `quiet()` tells whether anything changed since it began."""
        self.armed = self.complete and self._fd_open

    def quiet(self) -> bool:
        """True when armed and nothing that matters happened in the watched folders since."""
        if self.armed and self._changed():
            self.armed = False
        return self.armed

    @property
    def _fd_open(self) -> bool:
        return self._close.alive

    def _add(self, path: str, names: frozenset[str] | None) -> bool:
        if not self._fd_open or len(self._names) >= MAX_FOLDERS:
            return False
        try:
            local = self._is_local(os.lstat(path).st_dev, path)
        except OSError:
            return False
        if not local:
            return False
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), _CHANGES | _IN_ONLYDIR | _IN_DONT_FOLLOW)
        if wd < 0:
            return False  # gone, now a link, or the user's watch limit (max_user_watches)
        known = self._names.get(wd, ())
        self._names[wd] = None if names is None or known is None else frozenset((*known, *names))
        return True

    def _is_local(self, dev: int, path: str) -> bool:
        local = self._local.get(dev)
        if local is None:
            local = self._local[dev] = _fs_type(self._libc, path) in _LOCAL
        return local

    def _changed(self) -> bool:
        """Read every queued event; True when one matters."""
        changed = False
        while self._fd_open:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                return changed
            except OSError:
                return True
            changed = self._matters(data) or changed
        return True

    def _matters(self, data: bytes) -> bool:
        matters = False
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            names = self._names.get(wd, ())
            if mask & _IN_IGNORED:  # the folder is gone (or unmounted): the system dropped its watch
                self._names.pop(wd, None)
                matters = True
            elif mask & _IN_Q_OVERFLOW or names is None or os.fsdecode(name) in names:
                matters = True
        return matters


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        for name, args in (
            ("inotify_init1", [ctypes.c_int]),
            ("inotify_add_watch", [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]),
            ("statfs", [ctypes.c_char_p, ctypes.c_void_p]),
        ):
            function = getattr(libc, name)
            function.argtypes = args
            function.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


def _fs_type(libc: ctypes.CDLL, path: str) -> int:
    """statfs's f_type (the first field, a machine word, on every Linux architecture); -1 unknown."""
    buffer = ctypes.create_string_buffer(256)  # sizeof(struct statfs) is 120 on 64-bit systems
    if libc.statfs(os.fsencode(path), buffer) != 0:
        return -1
    return ctypes.c_ulong.from_buffer(buffer).value & 0xFFFFFFFF

"""Change notifications for a workspace's folders, so that a checkpoint of an unchanged workspace
need not look at every file again (`checkpoints.Checkpointer.take`).

A `FolderWatch` is armed by a full scan: the scan asks it to watch every folder it walks *before*
listing it, and the folders whose files decide what is covered (`.gitignore` files above the
workspace, a repository's `.git/info/exclude`) for those names only. Once armed, `quiet()` says
whether anything happened in them since: a file written, created, deleted, renamed, its mode or
times changed. Anything it cannot vouch for disarms it and the next checkpoint scans:
- a folder it could not watch (a folder swapped for a link meanwhile), a rule file read through a
  link; a folder it watches that is no longer the same folder (a file system mounted over it);
- more than `MAX_FOLDERS` folders, or the user's watch limit reached: the watch is given up for
  the chat, so the watches other programs need stay free;
- a folder on a file system whose changes may come from elsewhere (NFS, SMB, FUSE, 9p as WSL's
  Windows drives): only the local file systems in `_LOCAL` are trusted;
- the event queue overflowing.
Not reported by the system: a write through a memory map, and a write through a hard link outside
the watched folders. `Checkpointer` lstats every file that had several links at the last scan; a
link made later, or a memory map, is caught by the scan `Turns.begin` starts beside a turn whose
prompt left on the watch's word (a file changed in place, its ctime older than the prompt, held
that at the prompt; `Turns._unseen_before`).

Linux only (inotify, through ctypes: nothing to install). Elsewhere `start()` gives None and every
checkpoint scans, as before.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
import struct
import sys
import weakref
from collections.abc import Collection

from ..files import patterns

# The user's watches (max_user_watches: 8192 on kernels before 5.11) are shared with Sublime and
# every other program: a chat takes at most this many, and none once the limit is reached.
MAX_FOLDERS = 4_000

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
        self._folders: dict[str, tuple[int, int]] = {}  # each folder the scan walked -> (st_dev, st_ino)
        self._local: dict[int, bool] = {}  # st_dev -> on a trusted file system (this scan's)
        self.complete = True  # every folder asked for is watched
        self.exhausted = False  # the watch limit (ours or the user's) was reached: give up watching
        self.armed = False

    def close(self) -> None:
        self._close()

    def begin(self) -> None:
        """A full scan starts: what happened before it, the scan sees; forget it."""
        self._changed()
        self._folders.clear()
        self._local.clear()  # a device number can come back as another file system
        self.complete, self.armed = True, False

    def folder(self, path: str) -> None:
        """Watch `path`, a folder the scan is about to list: every change in it matters."""
        identity = self._add(path, None)
        if identity is None:
            self.complete = False
        else:
            self._folders[path] = identity

    def names(self, path: str, names: Collection[str]) -> None:
        """Watch `path` (a folder above the workspace, or inside `.git`) for changes of `names`
        only. A path that does not exist, or is a file, is no loss: its becoming a folder shows in
        its parent. One read through a link (the link's target is not watched) is."""
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError:
            st = None
        if st is not None and not stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode):
            return
        identity = self._add(path, frozenset(names))
        if identity is None or not all(self._plain(os.path.join(path, name)) for name in names):
            self.complete = False
        else:
            self._folders[path] = identity  # a file system mounted over it raises no event either

    def rule_file(self, path: str) -> None:
        """`path` is a `.gitignore` in a watched folder: one read through a link, or with another
        hard link, can change with no event here."""
        if not self._plain(path):
            self.complete = False

    @staticmethod
    def _plain(path: str) -> bool:
        """Whether `path` is missing, a folder, or a file no other name can change (no symbolic
        link, no other hard link)."""
        try:
            st = os.lstat(path)
        except OSError:
            return True
        return not stat.S_ISLNK(st.st_mode) and (stat.S_ISDIR(st.st_mode) or st.st_nlink == 1)

    def rules_above(self, root: str) -> None:
        """Watch what decides the `.gitignore` rules in force at `root`: a `.git` or `.gitignore`
        appearing or changing in a folder above it, a repository's `info/exclude` at or above it,
        the user's git config files and global excludes file."""
        folder = root
        while True:
            self.repository(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            self.names(parent, (".git", ".gitignore"))
            folder = parent
        for path in (*patterns.user_config_files(), patterns.global_excludes(root)):
            if path is not None:
                self.file(path)

    def repository(self, folder: str) -> None:
        """Watch `folder`'s `info/exclude`, if `folder` is (or becomes) a repository: in `.git`, or
        in the common git folder a `.git` file (a worktree's, a submodule's) leads to."""
        git, common = patterns.git_dirs(folder)
        if git != os.path.join(folder, ".git"):  # a `.git` file led elsewhere: its commondir may come
            self.names(git, ("commondir",))
        self.names(common, ("info",))
        self.names(os.path.join(common, "info"), ("exclude",))

    def file(self, path: str) -> None:
        """Watch `path`, a rule or config file outside the workspace, wherever it is: in its folder's
        real path (a linked home or `.config` is common), or (a folder missing) the nearest folder
        above that exists, for the missing one's name; a file that is a link (dotfiles kept
        elsewhere), as its name and its target."""
        for _ in range(8):  # a chain of links
            path = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))
            missing = path
            while not os.path.isdir(os.path.dirname(missing)) and os.path.dirname(missing) != missing:
                missing = os.path.dirname(missing)
            identity = self._add(os.path.dirname(missing), frozenset((os.path.basename(missing),)))
            if identity is None:
                self.complete = False
                return
            self._folders[os.path.dirname(missing)] = identity
            if missing != path or not os.path.islink(path):
                if not self._plain(path):
                    self.complete = False  # another hard link can change it unseen
                return
            try:
                path = os.path.join(os.path.dirname(path), os.readlink(path))
            except OSError:
                return
        self.complete = False

    def arm(self) -> None:
        """The scan is done: from now on `quiet()` tells whether anything changed since it began."""
        self.armed = self.complete and self._fd_open

    def quiet(self) -> bool:
        """True when armed and nothing that matters happened in the watched folders since: no
        event, and each folder still the one watched (a file system mounted over one raises none)."""
        if self.armed and (self._changed() or not self._same_folders()):
            self.armed = False
        return self.armed

    @property
    def _fd_open(self) -> bool:
        return self._close.alive

    def _same_folders(self) -> bool:
        for path, identity in self._folders.items():
            try:
                st = os.lstat(path)
            except OSError:
                return False
            if (st.st_dev, st.st_ino) != identity:
                return False
        return True

    def _add(self, path: str, names: frozenset[str] | None) -> tuple[int, int] | None:
        """Watch `path`; its (st_dev, st_ino), or None when it cannot be watched."""
        if not self._fd_open or len(self._names) >= MAX_FOLDERS:
            self.exhausted = True
            return None
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if not self._is_local(st.st_dev, path):
            return None
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), _CHANGES | _IN_ONLYDIR | _IN_DONT_FOLLOW)
        if wd < 0:  # gone, now a link, or the user's watch limit (max_user_watches), shared with other programs
            self.exhausted = self.exhausted or ctypes.get_errno() == errno.ENOSPC
            return None
        known = self._names.get(wd, ())
        self._names[wd] = None if names is None or known is None else frozenset((*known, *names))
        return st.st_dev, st.st_ino

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


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library's inotify and statfs, once per process: from the symbols already loaded (every
    Python on Linux links the C library), so no `ldconfig` is run as ctypes.util.find_library does."""
    if not sys.platform.startswith("linux"):
        return None
    for name in (None, "libc.so.6"):
        try:
            libc = ctypes.CDLL(name, use_errno=True)
            for function_name, args in (
                ("inotify_init1", [ctypes.c_int]),
                ("inotify_add_watch", [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]),
                ("statfs", [ctypes.c_char_p, ctypes.c_void_p]),
            ):
                function = getattr(libc, function_name)
                function.argtypes = args
                function.restype = ctypes.c_int
            return libc
        except (OSError, AttributeError):
            continue
    return None


def _fs_type(libc: ctypes.CDLL, path: str) -> int:
    """statfs's f_type (the first field, a machine word, on every Linux architecture); -1 unknown."""
    buffer = ctypes.create_string_buffer(256)  # sizeof(struct statfs) is 120 on 64-bit systems
    if libc.statfs(os.fsencode(path), buffer) != 0:
        return -1
    return ctypes.c_ulong.from_buffer(buffer).value & 0xFFFFFFFF

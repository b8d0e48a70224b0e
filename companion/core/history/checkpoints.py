"""A checkpoint of a workspace's folders: every covered file's path, size, times, inode, mode, kind
(file, symbolic link with its target, folder) and content digest, the content itself in the
workspace's private store (`checkpoint_store.py`: what is kept, where, for how long).

What is covered: every file under the folders except what `file_excludes`/`folder_excludes`
(Sublime patterns, e.g. the `context_exclude` setting) or `.gitignore` rules leave out, and `.git`
folders (the user's repository is never read or written). Listed as "not covered", with the
reason, never silently skipped: files beyond `max_file_bytes` or `max_files`, FIFOs, devices and
sockets (never opened), files that cannot be read. Symbolic links are recorded as links (their
target text) and never followed; linked folders are not entered.

Incremental: a file whose (size, mtime_ns, ctime_ns, inode, mode) is unchanged since the previous
checkpoint is not read again, unless its mtime was within `RACY_NS` of the last time its content was
read or confirmed (a write in the same clock tick could keep all of them). A folder that lists the
same names, under the same `.gitignore` rules, reuses its exclusion decisions (`Listing`: no sorting,
no pattern matching; still one lstat per entry). An unchanged workspace reuses the previous
checkpoint (nothing saved). Watched (a chat's `Checkpointer`, where `folder_watch.py` can): when
nothing happened in the folders since the last scan began, the last checkpoint is returned without
a scan (only the folders' own identities and the files with other hard links are lstat-ed).
Kept in memory between checkpoints: the last checkpoint's entries (one `Entry` per path) and each
folder's `Listing` (its names and one small tuple per entry): bounded by the number of paths, never
by file sizes (contents are streamed into the store).
Blocking I/O throughout: never call it on Sublime's main thread or an event loop.
"""

from __future__ import annotations

import os
import secrets
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..files.paths import is_inside
from ..files.patterns import Exclusions, GitIgnore, IgnoreFile
from . import checkpoint_pins, folder_watch
from .checkpoint_store import KEEP_CHECKPOINTS, CheckpointStore, StoreDamaged, damaged, hash_fd, is_digest, key_of_real
from .folder_watch import FolderWatch

_S_IFREG = stat.S_IFREG
_S_IFMT = 0o170000
_MODE_BITS = 0o7777  # stat.S_IMODE
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_FILES = 100_000
RACY_NS = 2_000_000_000  # coarse file-system clocks (FAT: 2 s)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


class Entry(NamedTuple):
    """One path of a checkpoint. `kind`: file, symlink, dir, fifo, device, socket. `digest` is set
    for a covered file; `reason` says why a file is not covered ("" when it is)."""

    path: str  # absolute, under one of the folders' real paths
    kind: str
    size: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    ino: int = 0
    mode: int = 0
    digest: str = ""
    target: str = ""  # a symbolic link's text
    reason: str = ""

    @property
    def covered(self) -> bool:
        return self.kind in ("symlink", "dir") or (self.kind == "file" and bool(self.digest))

    def same_stat(self, other: Entry) -> bool:
        return (self.kind, self.size, self.mtime_ns, self.ctime_ns, self.ino, self.mode) == (
            other.kind,
            other.size,
            other.mtime_ns,
            other.ctime_ns,
            other.ino,
            other.mode,
        )

    def same_content(self, other: Entry) -> bool:
        """What a restore brings back is equal: bytes, link text, executable bit, kind."""
        if self.kind != other.kind:
            return False
        if self.kind == "symlink":
            return self.target == other.target
        if self.kind == "file" and self.covered and other.covered:
            return self.digest == other.digest and _executable(self.mode) == _executable(other.mode)
        return self.kind == "dir" or self.same_stat(other)


@dataclass(frozen=True)
class Checkpoint:
    id: str
    folders: tuple[str, ...]  # real paths
    taken_ns: int  # wall clock when the scan started (for RACY_NS)
    entries: dict[str, Entry]
    # The names the scan found and left out (ignored files, ignored folders, not walked): each
    # existed then, with a content the checkpoint does not know (`unknown_before`).
    ignored: frozenset[str] = frozenset()

    def payload(self) -> dict[str, Any]:
        return {
            "folders": list(self.folders),
            "taken_ns": self.taken_ns,
            "entries": list(self.entries.values()),
            "ignored": sorted(self.ignored),
        }

    @classmethod
    def from_payload(cls, point_id: str, payload: dict[str, Any], key: str | None = None) -> Checkpoint:
        """The checkpoint a store saved. With `key` (the store's workspace key), every field is
        checked to be what the store writes (StoreDamaged otherwise): the folders are the store's
        own, each path is below one of them, each digest a sha256, each kind and mode one a scan
        records. A restore never follows a tampered index out of the workspace or the store."""
        folders = tuple(payload["folders"])
        entries = {row[0]: Entry(*row) for row in payload["entries"]}
        ignored = frozenset(payload.get("ignored", ()))  # none in checkpoints saved before it was kept
        if key is not None:
            problem = (
                _folders_problem(folders, key)
                or next((p for e in entries.values() if (p := _entry_problem(e, folders))), "")
                or next((p for path in ignored if (p := _path_problem(path, folders))), "")
            )
            if problem or len(entries) != len(payload["entries"]) or type(payload["taken_ns"]) is not int:
                raise StoreDamaged(problem or "a checkpoint's entries are not as saved")
        return cls(point_id, folders, int(payload["taken_ns"]), entries, ignored)

    def digests(self) -> set[str]:
        return {e.digest for e in self.entries.values() if e.digest}


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = MAX_FILE_BYTES
    max_files: int = MAX_FILES
    file_excludes: Sequence[str] = ()
    folder_excludes: Sequence[str] = ()
    use_gitignore: bool = True


_KINDS = frozenset(("file", "symlink", "dir", "fifo", "device", "socket"))


def _folders_problem(folders: tuple[Any, ...], key: str) -> str:
    if not folders or not all(isinstance(f, str) and os.path.isabs(f) for f in folders):
        return "a checkpoint's folders are not absolute paths"
    if key_of_real(folders) != key:
        return "a checkpoint names folders of another workspace"
    return ""


def _entry_problem(entry: Entry, folders: tuple[str, ...]) -> str:
    """Why `entry` is not one a scan of `folders` records ("" when it is)."""
    path = entry.path
    problem = _path_problem(path, folders)
    if problem:
        return problem
    if entry.kind not in _KINDS:
        return f"{path} has the unknown kind {str(entry.kind)[:40]!r}"
    numbers = (entry.size, entry.mtime_ns, entry.ctime_ns, entry.ino, entry.mode)
    if not all(type(n) is int for n in numbers) or not 0 <= entry.mode <= _MODE_BITS:
        return f"{path} has a size, time or mode that is not one"
    if entry.digest and (entry.kind != "file" or not is_digest(entry.digest)):
        return f"{path} names a content that is not a sha256"
    if not isinstance(entry.target, str) or not isinstance(entry.reason, str):
        return f"{path} has a link target or reason that is not text"
    return ""


def _path_problem(path: object, folders: tuple[str, ...]) -> str:
    if not isinstance(path, str) or not os.path.isabs(path) or os.path.normpath(path) != path:
        return f"{str(path)[:200]!r} is not a normalised absolute path"
    if not any(is_inside(path, f) and path != f for f in folders):
        return f"{path} is outside the workspace folders"
    return ""


def unknown_before(point: Checkpoint, paths: Iterable[str]) -> set[str]:
    """The `paths` (absent from `point`) that may have existed when `point` was taken: left out as
    ignored then, or below a folder left out then (never walked: a `node_modules` costs one name).
    A restore to `point` never deletes them; it cannot know what they held. Linear in the paths and
    their depth together (each folder looked at once: an agent's chain of 2 000 folders)."""
    if not point.ignored:
        return set()
    known: dict[str, bool] = {folder: False for folder in point.folders}
    found: set[str] = set()
    for start in paths:
        chain: list[str] = []
        path = start
        while True:
            if path in known:
                unknown = known[path]
                break
            if path in point.ignored:
                unknown = True
                break
            if path in point.entries:
                unknown = False  # walked by the scan: nothing above it was left out
                break
            chain.append(path)
            parent = os.path.dirname(path)
            if parent == path:
                unknown = False
                break
            path = parent
        for link in chain:
            known[link] = unknown
        if unknown and start not in point.entries:
            found.add(start)
    return found


def new_id() -> str:
    return f"{time.time_ns():020d}-{secrets.token_hex(3)}"


def special_kind(mode: int) -> str | None:
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None


def _executable(mode: int) -> bool:
    return bool(mode & 0o111)


def stat_entry(path: str, st: os.stat_result) -> Entry:
    """The entry of `path` from its lstat, before any content is read."""
    kind = "dir" if stat.S_ISDIR(st.st_mode) else "symlink" if stat.S_ISLNK(st.st_mode) else "file"
    special = special_kind(st.st_mode)
    mode = stat.S_IMODE(st.st_mode)
    entry = Entry(path, special or kind, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, mode)
    return entry._replace(reason=f"a {special}: never read") if special else entry


def read_link(entry: Entry) -> Entry:
    try:
        return entry._replace(target=os.readlink(entry.path))
    except OSError as exc:
        return entry._replace(kind="file", reason=f"an unreadable link: {exc.strerror or exc}")


def capture(entry: Entry, store: CheckpointStore | None) -> Entry:
    """`entry` (a regular file) with its content's digest: copied into `store`, or only hashed when
    there is none. Opened without following a link and without blocking; a file swapped or resized
    meanwhile (another inode, no longer regular, not the size lstat gave) is listed as not covered.
    At most one byte more than that size is read."""
    try:
        fd = os.open(entry.path, _OPEN_FLAGS)
    except OSError as exc:
        return entry._replace(reason=f"unreadable: {exc.strerror or exc}")
    try:
        st = os.fstat(fd)
        # An inode of 0 is unknown: os.DirEntry.stat gives none on Windows.
        if not stat.S_ISREG(st.st_mode) or (entry.ino and st.st_ino != entry.ino):
            return entry._replace(reason="it changed while it was being read")
        limit = entry.size + 1
        digest, length = store.put_fd(fd, limit) if store is not None else hash_fd(fd, limit)
        if length != entry.size:
            return entry._replace(reason="it changed while it was being read")
        return entry._replace(digest=digest)
    except OSError as exc:
        return entry._replace(reason=f"unreadable: {exc.strerror or exc}")
    finally:
        os.close(fd)


class Listing(NamedTuple):
    """A folder's entries as a scan decided them. A later scan that finds the same names in the same
    order, with the same `.gitignore` rules in force, reuses the decisions (they depend on name,
    path and kind only; a kind that changed shows in the lstat each looked-at entry gets anyway)."""

    names: list[str]  # in the order the system lists them
    rules: tuple[IgnoreFile, ...] | None  # the .gitignore rules in force for its entries
    items: tuple[tuple[int, bool, bool], ...]  # by name: (index in names, is a folder, left out); an
    # entry left out is here only when it would be kept as the other kind (a file rule, a folder rule)
    left: tuple[str, ...] = ()  # the names left out whatever their kind


class Scan:
    """One walk of the folders, building a checkpoint's entries; `changed` unless every entry it
    found is the previous checkpoint's own."""

    def __init__(
        self,
        store: CheckpointStore,
        limits: Limits,
        previous: Checkpoint | None,
        settled_ns: int | None = None,
        listings: dict[str, Listing] | None = None,
        watch: FolderWatch | None = None,
    ) -> None:
        """`settled_ns`: a file whose mtime is older was read (or confirmed) after it could last
        change in the same clock tick (default: the previous checkpoint's time less RACY_NS);
        `listings`: the previous scan's, by folder; `watch`: told of each folder before it is listed."""
        self.store = store
        self.limits = limits
        self.previous = previous.entries if previous is not None else {}
        if settled_ns is None:
            settled_ns = previous.taken_ns - RACY_NS if previous is not None else 0
        self.settled = settled_ns
        self.entries: dict[str, Entry] = {}
        self.covered = 0
        self.changed = False
        self.exclusions = Exclusions(limits.folder_excludes, limits.file_excludes, limits.use_gitignore, skip_git=True)
        self.old_listings = listings or {}
        self.listings: dict[str, Listing] = {}
        self.watch = watch
        self.cache = store.cache_folder
        self.linked: list[Entry] = []  # covered files with other hard links (a watch misses writes through those)
        self.ignored: list[str] = []  # the paths left out (ignored; not walked)
        self.previous_ignored = previous.ignored if previous is not None else frozenset()

    def folder(self, root: str) -> None:
        if self.watch is not None:  # before the rules are read: a change after it is an event
            self.watch.rules_above(root)
            self.watch.folder(root)
        ignore, repo_rel = self.exclusions.start(root)
        self._walk(root, "", ignore, repo_rel, first=True)

    @property
    def unchanged(self) -> bool:
        if self.changed or len(self.entries) != len(self.previous):
            return False
        return len(self.ignored) == len(self.previous_ignored) and self.previous_ignored.issuperset(self.ignored)

    def _walk(self, folder: str, rel: str, ignore: GitIgnore | None, repo_rel: str, first: bool) -> None:
        """Depth first, in the order of a recursive walk, without recursion: an agent's chain of
        thousands of nested folders cannot reach Python's recursion limit."""
        stack = [self._folder(folder, rel, ignore, repo_rel, first)]
        while stack:
            inner = next(stack[-1], None)
            if inner is None:
                stack.pop()
            else:
                stack.append(self._folder(*inner, first=False))

    def _folder(
        self, folder: str, rel: str, ignore: GitIgnore | None, repo_rel: str, first: bool
    ) -> Iterator[tuple[str, str, GitIgnore | None, str]]:
        """Scan one folder's entries; yields each inner folder to walk (folder, rel, rules, repo rel)
        when it comes, before the entries after it."""
        if self.watch is not None:
            self.watch.folder(folder)  # before the listing: a change after it is an event
        try:
            with os.scandir(folder) as it:
                found = list(it)
        except OSError:
            return  # the folder's own entry stays: its content is unknown, nothing is restored in it
        names = [item.name for item in found]
        if self.watch is not None:
            if ".git" in names and not first:
                self.watch.repository(folder)  # before its info/exclude is read
            if ".gitignore" in names:
                self.watch.rule_file(os.path.join(folder, ".gitignore"))
        if not first:
            ignore, repo_rel = self.exclusions.entering(folder, names, ignore, repo_rel)
        listing = self._listing(folder, found, names, rel, ignore, repo_rel)
        if listing.left:
            self.ignored.extend([os.path.join(folder, name) for name in listing.left])
        previous, entries, settled, most = self.previous, self.entries, self.settled, self.limits.max_files
        for index, is_dir, left_out in listing.items:
            item = found[index]
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue  # gone since the listing
            if stat.S_ISDIR(st.st_mode) != is_dir:  # another kind under the same name: decide again
                self.listings.pop(folder, None)
                is_dir = not is_dir
                left_out = self.exclusions.excluded(item.name, item.path, rel, is_dir, ignore, repo_rel)
            if left_out:
                self.ignored.append(item.path)
                continue
            if is_dir and item.path == self.cache:
                continue  # the cache, inside a workspace: the store never checkpoints itself
            old = previous.get(item.path)
            if (  # inline, not a function: this runs once per file of the workspace
                old is not None
                and old[2:7] == (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode & _MODE_BITS)
                and st.st_mode & _S_IFMT == _S_IFREG
                and old.mtime_ns < settled
                and old.digest
                and self.covered < most
            ):
                self.covered += 1  # the fast path of an unchanged file: nothing read, nothing built
                entries[old.path] = old
                if st.st_nlink > 1:
                    self.linked.append(old)
            else:
                inner = self._entry(item, st, old, rel, ignore, repo_rel)
                if inner is not None:
                    yield inner

    def _listing(
        self,
        folder: str,
        found: list[os.DirEntry[str]],
        names: list[str],
        rel: str,
        ignore: GitIgnore | None,
        repo: str,
    ) -> Listing:
        """The previous scan's listing of `folder` if it still holds, else a new one."""
        listing = self.old_listings.get(folder)
        rules = ignore.files if ignore is not None else None
        if listing is None or listing.names != names or listing.rules != rules:
            listing = self._list(found, names, rules, rel, ignore, repo)
        self.listings[folder] = listing
        return listing

    def _list(
        self,
        found: list[os.DirEntry[str]],
        names: list[str],
        rules: tuple[IgnoreFile, ...] | None,
        rel: str,
        ignore: GitIgnore | None,
        repo_rel: str,
    ) -> Listing:
        excluded = self.exclusions.excluded
        items: list[tuple[int, bool, bool]] = []
        left: list[str] = []
        # By name: the same files are beyond max_files each time.
        for index in sorted(range(len(found)), key=names.__getitem__):
            item = found[index]
            try:
                is_dir = item.is_dir(follow_symlinks=False)  # from the listing: no system call on most systems
            except OSError:
                is_dir = False  # gone: its lstat fails too
            left_out = excluded(item.name, item.path, rel, is_dir, ignore, repo_rel)
            if not left_out or not excluded(item.name, item.path, rel, not is_dir, ignore, repo_rel):
                items.append((index, is_dir, left_out))
            else:
                left.append(item.name)
        return Listing(names, rules, tuple(items), tuple(left))

    def _entry(
        self,
        item: os.DirEntry[str],
        st: os.stat_result,
        old: Entry | None,
        rel: str,
        ignore: GitIgnore | None,
        repo: str,
    ) -> tuple[str, str, GitIgnore | None, str] | None:
        """Record the entry; a folder's, to walk next."""
        entry = stat_entry(item.path, st)
        if entry.kind == "dir":
            self._record(entry, old)
            return item.path, rel + item.name + "/", ignore, repo + item.name + "/"
        self._record(self._content(entry, st.st_nlink), old)
        return None

    def _record(self, entry: Entry, old: Entry | None) -> None:
        if old is not None and entry == old:
            entry = old  # the same object as the previous checkpoint's
        else:
            self.changed = True
        self.entries[entry.path] = entry

    def _content(self, entry: Entry, nlink: int) -> Entry:
        if entry.reason:
            return entry  # a FIFO, device or socket
        if entry.kind == "symlink":
            return read_link(entry)
        if entry.size > self.limits.max_file_bytes:
            return entry._replace(reason=f"larger than the {self.limits.max_file_bytes}-byte limit")
        if self.covered >= self.limits.max_files:
            return entry._replace(reason=f"beyond the {self.limits.max_files}-file limit")
        self.covered += 1
        entry = capture(entry, self.store)
        if nlink > 1 and entry.digest:
            self.linked.append(entry)
        return entry


class Checkpointer:
    """Checkpoints of one workspace, each reusing the last (kept in memory between calls, with the
    folders' listings and the time its files' contents were last confirmed). With `watch` (a chat's,
    which takes one before every prompt), the folders are watched for changes where the system can
    (`folder_watch.py`): a checkpoint with nothing changed since the last returns it without a scan.
    `close()` stops watching."""

    def __init__(
        self, store: CheckpointStore, folders: Sequence[str], limits: Limits | None = None, watch: bool = False
    ) -> None:
        self.store = store
        self.folders = tuple(os.path.realpath(f) for f in folders)
        self.limits = limits or Limits()
        self.keep = KEEP_CHECKPOINTS
        self.last: Checkpoint | None = None
        self._confirmed: tuple[Checkpoint | None, int] = (None, 0)  # (last, when its contents were confirmed)
        self._listings: dict[str, Listing] = {}
        self._seen: set[str] = set()  # the checkpoints whose blobs _newest knows
        self._newest: dict[str, str] = {}  # digest -> the newest of them that refers to it
        self._pinned: dict[str, frozenset[str]] = {}  # a pinned older checkpoint -> its digests (read once)
        self._watching = watch
        self.quick = False  # the last take returned on the watch's word alone, without a scan
        self._taking = threading.Lock()  # close() never pulls the watch from under a take
        self._watch: FolderWatch | None = None
        # What the watch vouches for, and its files with other hard links (which it cannot).
        self._watched: tuple[Checkpoint | None, list[Entry]] = (None, [])
        self._scan: Scan | None = None  # the scan under way, for `scanned`

    @property
    def scanned(self) -> int:
        """The entries the scan under way has found so far (0 when none runs): a status line's count,
        read from another thread (a dict's length)."""
        scan = self._scan
        return len(scan.entries) if scan is not None else 0

    def take(self, full: bool = False) -> Checkpoint:
        """A checkpoint of the folders now (the previous one when nothing changed). `full`: look at
        every file even when the watch says nothing changed."""
        with self._taking:
            point = self._take(full)
        if not self._watching and self._watch is not None:
            self.close()  # close() came while this was being taken
        return point

    def _take(self, full: bool) -> Checkpoint:
        previous = self.last or self.latest_saved()
        taken_ns = time.time_ns()
        confirmed, confirmed_ns = self._confirmed
        settled = (confirmed_ns if confirmed is previous else previous.taken_ns if previous else 0) - RACY_NS
        self.quick = previous is not None and not full and self._still(previous, settled)
        if previous is not None and self.quick:
            # Nothing changed since the scan that found `previous` began, as far as the system says
            # (not confirmed: a write through a memory map raises no event; the next scan reads a
            # file written within RACY_NS of that scan again).
            return previous
        watch = self._rewatch()
        scan = self._scan = Scan(self.store, self.limits, previous, settled, self._listings, watch)
        try:
            for folder in self.folders:
                scan.folder(folder)
        finally:
            self._scan = None
        self._listings = scan.listings
        if previous is not None and scan.unchanged and previous.folders == self.folders:
            # Every file was read again or still has the lstat it had when read, by now: a file
            # written within RACY_NS of the previous checkpoint is not read on every take after it.
            point = previous
        else:
            point = Checkpoint(new_id(), self.folders, taken_ns, scan.entries, frozenset(scan.ignored))
            self.store.save_point(point.id, point.payload())
            self._saw(point)
        self.last, self._confirmed = point, (point, taken_ns)
        if watch is not None and watch.exhausted:
            self._watching = False  # too many folders for the watch limits: scans from now on
        if watch is not None:
            watch.arm()
            self._watched = (point, scan.linked)
        if not self._watching:
            self._rewatch()  # closed meanwhile, or given up
        return point

    def amended(self, point: Checkpoint, entries: Mapping[str, Entry]) -> Checkpoint:
        """A new checkpoint: `point` with `entries` in place of its own (their contents in the store)."""
        amended = Checkpoint(new_id(), point.folders, point.taken_ns, {**point.entries, **entries}, point.ignored)
        self.store.save_point(amended.id, amended.payload())
        self._saw(amended)
        return amended

    def close(self) -> None:
        """Stop watching the folders (a chat that ends; idempotent, from any thread, never waits:
        a checkpoint being taken closes its watch when done)."""
        self._watching = False
        if self._taking.acquire(blocking=False):
            try:
                self._rewatch()
            finally:
                self._taking.release()

    def _still(self, previous: Checkpoint, settled: int) -> bool:
        """Whether the watch vouches that nothing changed since `previous` was taken (and a file
        with other hard links, which it cannot vouch for, still has the lstat it had then)."""
        watched, linked = self._watched
        if self._watch is None or watched is not previous or not self._watch.quiet():
            return False  # quiet() also lstats each watched folder, the workspace folders included
        for entry in linked:
            try:
                st = os.lstat(entry.path)
            except OSError:
                return False
            key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, stat.S_IMODE(st.st_mode))
            if entry.mtime_ns >= settled or key != entry[2:7] or not stat.S_ISREG(st.st_mode):
                return False
        return True

    def _rewatch(self) -> FolderWatch | None:
        """The watch, told that a full scan begins (made on the first; closed once closed)."""
        self._watched = (None, [])
        if not self._watching:
            if self._watch is not None:
                self._watch.close()
            self._watch = None
        elif self._watch is None:
            self._watch = folder_watch.start()
        if self._watch is not None:
            self._watch.begin()
        return self._watch

    def latest_saved(self) -> Checkpoint | None:
        for point_id in reversed(self.store.point_ids()):
            loaded = load(self.store, point_id)
            if loaded is not None:
                self._saw(loaded)
                if loaded.folders == self.folders:
                    return loaded
        return None

    def prune(self, pinned: Sequence[str]) -> None:
        """Keep the last `keep` checkpoints (and `pinned`, and what `checkpoint_pins` pins in this
        store); delete unreferenced blobs. Reads only the checkpoints this Checkpointer did not save
        or load itself (another chat's, a revert's), and each pinned older one once (its digests are
        kept while it stays pinned). Skipped while another checkpoint of this store is being taken."""
        # A little before now: a file's time comes from the kernel's coarse clock, a few ms behind.
        started = time.time() - 0.05
        with checkpoint_pins.pruning(self.store.root) as others:
            if others is not None:
                self._prune([*pinned, *others], started)

    def _prune(self, pinned: Sequence[str], started: float | None = None) -> None:
        ids = self.store.point_ids()
        if len(ids) <= self.keep:
            return
        newest = ids[-self.keep :] if self.keep > 0 else []
        for point_id in newest:
            if point_id not in self._seen:
                self._saw(load(self.store, point_id), point_id)
        oldest = newest[0] if newest else "~"  # ids sort by time; "~" sorts after every id
        used = {digest for digest, point_id in self._newest.items() if point_id >= oldest}
        older = set(pinned) - set(newest)  # older checkpoints a turn still names
        for point_id in older:
            used.update(self._pinned_digests(point_id))
        self._pinned = {point_id: digests for point_id, digests in self._pinned.items() if point_id in older}
        self._newest = {digest: point_id for digest, point_id in self._newest.items() if digest in used}
        self._seen &= set(newest)
        self.store.remove_unused({*newest, *pinned}, used, started)

    def _pinned_digests(self, point_id: str) -> frozenset[str]:
        """A pinned checkpoint's digests, read once: a saved checkpoint never changes (ids are new)."""
        digests = self._pinned.get(point_id)
        if digests is None:
            loaded = load(self.store, point_id)
            if loaded is None:
                return frozenset()  # gone: nothing of it to keep
            digests = self._pinned[point_id] = frozenset(loaded.digests())
        return digests

    def _saw(self, point: Checkpoint | None, point_id: str = "") -> None:
        """Remember the newest checkpoint each blob is in (`prune` keeps the blobs of kept ones)."""
        point_id = point.id if point is not None else point_id
        self._seen.add(point_id)
        for entry in point.entries.values() if point is not None else ():
            if entry.digest and self._newest.get(entry.digest, "") < point_id:
                self._newest[entry.digest] = point_id


def load(store: CheckpointStore, point_id: str) -> Checkpoint | None:
    """A saved checkpoint, or None when it is gone or damaged (`load_checked` says which)."""
    try:
        return load_checked(store, point_id)
    except (OSError, StoreDamaged):
        return None


def load_checked(store: CheckpointStore, point_id: str) -> Checkpoint:
    """A saved checkpoint, every field checked (`Checkpoint.from_payload`). OSError when it is gone;
    StoreDamaged, with what to do, when it is not what the store wrote."""
    payload: Any = None
    try:
        payload = store.load_point(point_id)  # StoreDamaged (with what to do) for a name no checkpoint has
    except StoreDamaged:
        raise
    except ValueError:
        pass  # not JSON: from_payload finds no payload
    try:
        return Checkpoint.from_payload(point_id, payload, store.key)
    except StoreDamaged as exc:
        raise damaged(store.root, str(exc)) from None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        raise damaged(store.root, f"the checkpoint {point_id} is not one the store wrote") from None

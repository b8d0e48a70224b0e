"""Bring files back to a checkpoint: revert one file or restore them all.

Refused, with one line and nothing written, when a file it would write (or delete) is no longer as
the turn left it (`after`, the state recorded at turn end): that change is someone's later work,
the same rule as an accepted review whose file changed meanwhile (`acp/review/files.py`). Files are
written atomically (a private temporary file renamed over), with their recorded mode; deleted files
are recreated, added ones deleted, links restored as links. Nothing is written outside the folders:
on POSIX every step is relative to a folder descriptor reached without following links
(`core/files/fdpath.py`), so a folder swapped for a symbolic link meanwhile is refused, not followed.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ..files.fdpath import DIR_FD, FolderChain
from ..files.paths import Resolved, WorkspaceError, is_inside, real_path
from ..files.writing import make_parents, remove_quietly
from .change_set import changed_paths
from .checkpoint_store import CheckpointStore
from .checkpoints import RACY_NS, Checkpoint, Entry, capture, new_id, read_link, stat_entry, unknown_before

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class RestoreRefused(Exception):
    """Nothing was written; the message (one line) says why and what to do."""


class RestoreFailed(Exception):
    """Writing stopped part-way (a folder was swapped, the disk is full); the message says where."""


def restore(
    store: CheckpointStore, before: Checkpoint, after: Checkpoint, paths: Sequence[str] | None = None
) -> tuple[Checkpoint, list[str]]:
    """Bring `paths` (every changed path when None) back to `before`. Returns a new checkpoint of
    the files as they now are, and the paths left as they were because the checkpoint did not cover them."""
    # The cache (and each folder holding it) when a workspace holds it: never removed or written.
    targets = [p for p in _targets(before, after, paths) if not is_inside(store.cache_folder, p)]
    # Not in `before` but ignored then (or below a folder ignored then): it may have existed; never deleted.
    unknown = unknown_before(before, [p for p in targets if p not in before.entries])
    skipped = [p for p in targets if p in unknown or (p in before.entries and not before.entries[p].covered)]
    if skipped and paths is not None:
        first = before.entries.get(skipped[0])
        reason = first.reason if first is not None else "ignored then: what it held is not known"
        raise RestoreRefused(f"{skipped[0]} was not covered by the checkpoint ({reason}); nothing was written.")
    left_alone = set(skipped)
    targets = [p for p in targets if p not in left_alone]
    skipped = [p for p in skipped if not (p in after.entries and after.entries[p].kind == "dir")]  # its files say
    for path in targets:
        _check_unchanged(path, after)
    _check_emptied(targets, before, after)
    _apply(store, before, after, targets)
    entries = dict(after.entries)
    for path in targets:
        if path in before.entries:
            entries[path] = before.entries[path]
        else:
            entries.pop(path, None)
    return Checkpoint(new_id(), after.folders, after.taken_ns, entries, after.ignored), skipped


def _targets(before: Checkpoint, after: Checkpoint, paths: Sequence[str] | None) -> list[str]:
    changed = changed_paths(before, after)
    if paths is None:
        return changed
    wanted = [_as_recorded(p, changed) for p in paths]
    for path in wanted:
        if path not in changed:
            raise RestoreRefused(f"{path} is not in the last turn's change set; nothing was written.")
    return wanted


def _as_recorded(path: str, changed: Sequence[str]) -> str:
    """`path` as the checkpoints name it (under the folders' real paths): as given when it is there,
    else with its folder's links resolved (the workspace named through a link)."""
    path = os.path.abspath(path)
    return path if path in changed else os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def current_entry(
    path: str, recorded: Entry | None, taken_ns: int, store: CheckpointStore | None = None
) -> Entry | None:
    """`path` as it is now (None when absent); its content hashed (and kept in `store`, if given)
    unless its stat matches `recorded`."""
    try:
        entry = stat_entry(path, os.lstat(path))
    except (FileNotFoundError, NotADirectoryError):  # gone, or a file now stands where its folder was
        return None
    if entry.kind == "symlink":
        return read_link(entry)
    if entry.kind != "file":
        return entry
    if recorded is not None and recorded.same_stat(entry) and recorded.mtime_ns < taken_ns - RACY_NS:
        return recorded
    return capture(entry, store)


def _check_unchanged(path: str, after: Checkpoint) -> None:
    recorded = after.entries.get(path)
    now = current_entry(path, recorded, after.taken_ns)
    if now is None and recorded is None:
        return
    if now is not None and recorded is not None and now.same_content(recorded):
        return
    raise RestoreRefused(
        f"{path} changed since the turn ended, so nothing was written and that change is kept; "
        "look at it, then revert the other files one by one with --revert."
    )


def _check_emptied(targets: Sequence[str], before: Checkpoint, after: Checkpoint) -> None:
    """A folder that must go may hold only what this restore removes. Each such folder is listed
    once: a folder inside another is listed with it (not again from its own top: a chain of 2 000
    nested folders was quadratic), without recursion."""
    removed = {p for p in targets if p not in before.entries or before.entries[p].kind != "dir"}
    going = {p for p in removed if (e := after.entries.get(p)) is not None and e.kind == "dir"}
    for top in sorted(p for p in going if os.path.dirname(p) not in going):
        stack = [top]
        while stack:
            try:
                with os.scandir(stack.pop()) as listing:
                    found = list(listing)
            except OSError:
                continue  # gone, or not a folder: its removal says what fails
            for item in found:
                if item.path not in removed:
                    raise RestoreRefused(
                        f"{top} is now a folder holding {item.path}, which the checkpoint did not have; "
                        "move it away, then try again. Nothing was written."
                    )
                if item.is_dir(follow_symlinks=False):
                    stack.append(item.path)


def _apply(store: CheckpointStore, before: Checkpoint, after: Checkpoint, targets: Sequence[str]) -> None:
    removals = [p for p in targets if _must_remove(before.entries.get(p), after.entries.get(p))]
    creations = [p for p in targets if p in before.entries]
    done, path = 0, ""
    # Deepest first, then parents first: the held chain of folders moves one level at a time.
    try:
        with FolderChain() as chain:
            for path in sorted(removals, key=lambda p: (-p.count(os.sep), p)):
                _remove(path, after.entries[path], before.folders, chain)
                done += 1
            for path in sorted(creations):
                _create(store, before.entries[path], before.folders, chain)
                done += 1
    except (OSError, WorkspaceError) as exc:
        raise RestoreFailed(f"the restore stopped at {path} after {done} changes: {exc}") from None


def _must_remove(old: Entry | None, new: Entry | None) -> bool:
    """What stands at the path now must go first: it has no place in the checkpoint, or a folder
    stands where a file was (or the reverse)."""
    if new is None:
        return False
    return old is None or (old.kind == "dir") != (new.kind == "dir")


@contextmanager
def _at(path: str, folders: Sequence[str], chain: FolderChain) -> Iterator[tuple[int | None, str]]:
    """(folder descriptor or None, name) to reach `path` without following links out of `folders`
    (on POSIX through `chain`, which keeps the folders above it open for the next path)."""
    folder = next((f for f in folders if is_inside(path, f) and path != f), None)
    if folder is None:
        raise WorkspaceError(f"{path} is not inside the workspace folders")
    if DIR_FD:
        yield chain.parent(Resolved(path, path, folder, False), path, create_missing=True)
        return
    parent = os.path.dirname(path)
    make_parents(parent, folder, path)  # each checked before it is made
    if not is_inside(real_path(parent), folder):
        raise WorkspaceError(f"{path}: its folder now leads outside the workspace")
    yield None, path


def _remove(path: str, entry: Entry, folders: Sequence[str], chain: FolderChain) -> None:
    with _at(path, folders, chain) as (fd, leaf):
        if entry.kind == "dir":
            os.rmdir(leaf, dir_fd=fd)
        else:
            os.unlink(leaf, dir_fd=fd)


def _create(store: CheckpointStore, entry: Entry, folders: Sequence[str], chain: FolderChain) -> None:
    with _at(entry.path, folders, chain) as (fd, leaf):
        if entry.kind == "dir":
            _make_folder(fd, leaf, entry.mode)
            return
        # Not named after the file: a name of 242-255 bytes plus a suffix is over NAME_MAX (255).
        temp = os.path.join(os.path.dirname(leaf), f".gemini-companion-{secrets.token_hex(8)}.tmp")
        try:
            if entry.kind == "symlink":
                os.symlink(entry.target, temp, dir_fd=fd)
            else:
                _write_blob(store, entry, fd, temp)
            os.replace(temp, leaf, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            remove_quietly(temp, fd)
            raise


def _make_folder(fd: int | None, leaf: str, mode: int) -> None:
    try:
        os.mkdir(leaf, mode or 0o777, dir_fd=fd)
    except FileExistsError:
        if not stat.S_ISDIR(os.stat(leaf, dir_fd=fd, follow_symlinks=False).st_mode):
            raise


def _write_blob(store: CheckpointStore, entry: Entry, fd: int | None, temp: str) -> None:
    out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o600, dir_fd=fd)
    with os.fdopen(out, "wb") as handle:
        for chunk in store.chunks(entry.digest):
            handle.write(chunk)
        handle.flush()
        os.fsync(handle.fileno())
        if hasattr(os, "fchmod"):
            os.fchmod(handle.fileno(), stat.S_IMODE(entry.mode) & 0o777)

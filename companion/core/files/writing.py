"""Writing an accepted `write_file`: atomically, like the file was stored (encoding, BOM, line endings).

The review and the buffer route are in `tools.py`; this module only touches the disk.
"""

from __future__ import annotations

import os
import secrets
import stat

from .fdpath import DIR_FD, parent_folder
from .paths import PathPolicy, Resolved, WorkspaceError, is_inside, real_path
from .textfile import NEW_FILE, TextFormat, decode, encode, to_newline

_BINARY = getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def existing_format(target: Resolved, name: str) -> TextFormat:
    """How the file is stored now (NEW_FILE when it does not exist); binary files are refused."""
    if not target.exists:
        return NEW_FILE
    from .reading import read_bytes

    data = read_bytes(target, None, name)
    try:
        return decode(data, name)[1]
    except WorkspaceError:
        raise WorkspaceError(f"{name} is a binary file; write_file only replaces text files.") from None


def write_atomically(policy: PathPolicy, target: Resolved, text: str, fmt: TextFormat, name: str) -> int:
    """Write `text` to `target` (temporary file in the same folder, then rename); returns the bytes written.

    Missing parent folders are created, each checked to stay inside the workspace. On POSIX every
    step is relative to the checked folder's descriptor (see fdpath): a folder swapped for a symlink
    meanwhile is refused instead of followed.
    """
    return write_bytes(policy, target, encode(text, fmt, name, _original_text(target, name)), name)


def encoded_as_stored(target: Resolved, text: str, name: str) -> bytes:
    """The bytes `write_atomically` would write for `text` now (the file's encoding, BOM and line
    endings): what a user accepting `text` accepts to find on disk. WorkspaceError as it raises."""
    return encode(text, existing_format(target, name), name, _original_text(target, name))


def buffer_saves(target: Resolved, text: str, name: str) -> dict[str, bytes]:
    """The bytes an editor may store saving `text` from its open buffer, by the one line ending it
    uses throughout (its buffer's setting, which may not be the file's): the file's encoding and BOM.
    Taken before the save (it reads the file's format); the caller keeps the form of the break the
    save reports. {} when the text has no form in that encoding. WorkspaceError as
    `existing_format` raises."""
    fmt = existing_format(target, name)
    try:
        return {ending: fmt.bom + to_newline(text, ending).encode(fmt.encoding) for ending in ("\n", "\r\n", "\r")}
    except UnicodeEncodeError:
        return {}


def write_bytes(policy: PathPolicy, target: Resolved, data: bytes, name: str) -> int:
    """`write_atomically` of bytes already encoded (`encoded_as_stored`); returns the bytes written."""
    if DIR_FD:
        with parent_folder(target, name, create_missing=True) as (folder, leaf):
            return _replace(folder, leaf, data, name)
    make_parents(os.path.dirname(target.path), target.folder, target.requested)
    if not any(is_inside(real_path(os.path.dirname(target.path)), f) for f in policy.real_folders):
        raise WorkspaceError(f"Refused {target.requested}: its folder resolves outside the workspace.")
    return _replace(None, target.path, data, name)


def _replace(folder: int | None, path: str, data: bytes, name: str) -> int:
    """Put `data` at `path` (relative to the descriptor `folder` when given): a temporary file beside
    it, renamed over it; written in place where a rename would lose links or ownership."""
    try:
        st: os.stat_result | None = os.stat(path, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise WorkspaceError(f"Cannot write {name}: {exc.strerror or exc}. Nothing was written.") from None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise WorkspaceError(f"Refused {name}: it is no longer a regular file. Nothing was written.")
        if st.st_nlink > 1 or not _can_keep_owner(st):
            # A rename would give the file a new identity: its other hard links would keep the old
            # text, and another owner would become ours. Write into the file itself instead.
            return _write_in_place(folder, path, data, name)
    head, leaf = os.path.split(path)
    temp = os.path.join(head, f".{leaf}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY
    try:
        fd = os.open(temp, flags, 0o666 if st is None else 0o600, dir_fd=folder)
    except OSError as exc:
        raise WorkspaceError(f"Cannot write {name}: {exc.strerror or exc}. Nothing was written.") from None
    try:
        if st is not None and not _same_group(fd, st):
            os.close(fd)
            remove_quietly(temp, folder)
            return _write_in_place(folder, path, data, name)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if st is not None:
            os.chmod(temp, stat.S_IMODE(st.st_mode), dir_fd=folder)
        os.replace(temp, path, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError as exc:
        remove_quietly(temp, folder)
        raise WorkspaceError(f"Cannot write {name}: {exc.strerror or exc}. Nothing was written.") from None
    except BaseException:
        remove_quietly(temp, folder)
        raise
    return len(data)


def _original_text(target: Resolved, name: str) -> str | None:
    """The file's text now (None for a new file): untouched lines keep their own line endings."""
    if not target.exists:
        return None
    from .reading import read_bytes

    try:
        return decode(read_bytes(target, None, name), name)[0]
    except (WorkspaceError, OSError):
        return None


def _can_keep_owner(st: os.stat_result) -> bool:
    """A renamed-in file is owned by us: fine when the file is ours (Windows keeps no POSIX owner)."""
    return not hasattr(os, "getuid") or st.st_uid == os.getuid()


def _same_group(fd: int, st: os.stat_result) -> bool:
    """Give the new file the old file's group (allowed when we are a member); False when it cannot have it."""
    if not hasattr(os, "fchown"):
        return True
    if os.fstat(fd).st_gid == st.st_gid:
        return True
    try:
        os.fchown(fd, -1, st.st_gid)
    except OSError:
        return False
    return True


def _write_in_place(folder: int | None, path: str, data: bytes, name: str) -> int:
    """Overwrite the file's own content (same inode: hard links, owner and mode stay). Not atomic:
    used only where a rename would lose what the user set up."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | _BINARY | _NOFOLLOW, dir_fd=folder)
    except OSError as exc:
        raise WorkspaceError(f"Cannot write {name}: {exc.strerror or exc}. Nothing was written.") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise WorkspaceError(f"Writing {name} failed part-way: {exc.strerror or exc}.") from None
    return len(data)


def make_parents(folder: str, root: str, name: str) -> None:
    """Create the missing folders down to `folder`, by name (for where no `dir_fd` is available):
    each only once its parent's real path is checked to be inside `root` (a real path), so a folder
    on the way swapped for a link to the outside is refused before anything is made through it."""
    missing = []
    current = folder
    while not os.path.isdir(current):
        if os.path.lexists(current):
            raise WorkspaceError(f"Cannot create {name}: {current} exists and is not a folder.")
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for path in reversed(missing):
        if not is_inside(real_path(os.path.dirname(path)), root):
            raise WorkspaceError(f"Refused to create {path}: it would be outside the workspace.")
        try:
            os.mkdir(path)
        except FileExistsError:
            pass
        except OSError as exc:
            raise WorkspaceError(f"Cannot create the folder {path}: {exc.strerror or exc}.") from None


def remove_quietly(path: str, folder: int | None = None) -> None:
    try:
        os.unlink(path, dir_fd=folder)
    except OSError:
        pass

"""The file a review changes: checking the path a client names, and reading what the file holds now.

A client (a model, or anything holding the token) chooses `openDiff`'s `filePath`, so the path is
hostile until checked: it must be absolute, free of NUL, within the OS path limit, and name a
regular file or nothing (a new file). A FIFO would block the reader forever, `/dev/zero` never
ends, a directory has no text.

The current text is read off Sublime's main thread (on the companion's loop thread, before the
editor is asked to show the review), opened non-blocking so a FIFO swapped in after the check cannot
block either, and checked again on the open descriptor. At most MAX_SHOWN_BYTES are read: a bigger
file still gets its review, whose left side says the file is too large to show. The text is
decoded as the workspace tools decode (`textfile.py`: BOM, UTF-8, Windows-1252,
Latin-1): one reader for both.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from dataclasses import dataclass

from .reading import read_at_most
from .textfile import BinaryFile, TextFormat, decode

MAX_SHOWN_BYTES = 16 * 1024 * 1024
# Longest path the OS accepts (bytes on POSIX; Windows' extended-length limit in characters).
PATH_LIMIT = 32767 if sys.platform == "win32" else 1024 if sys.platform == "darwin" else 4096


class PathRefused(ValueError):
    """The client's filePath cannot name a file to review; the message says why and what to do."""


@dataclass(frozen=True)
class Stamp:
    """What the file was when it was read: a later change to it shows as a different stamp."""

    size: int
    sha256: str


@dataclass(frozen=True)
class DiskText:
    text: str  # as stored, line breaks included; "" when there is nothing to show
    exists: bool
    stamp: Stamp | None = None
    # Why `text` is not the file's content (too large, binary, unreadable); None when it is.
    not_shown: str | None = None
    # Other hard links to the file (st_nlink - 1). The file is written in place, so they change too,
    # and they may lie outside the workspace: the review says so (other_links_note).
    other_links: int = 0
    format: TextFormat | None = None  # how `text` is stored (encoding, BOM, line endings), when shown


def other_links_note(count: int) -> str:
    """What a review says of a file with `count` other hard links (none: "")."""
    if count <= 0:
        return ""
    if count == 1:
        return "This file has 1 other link (a hard link, maybe outside the workspace); accepting changes it too."
    return f"This file has {count} other links (hard links, maybe outside the workspace); accepting changes them too."


def changed(before: DiskText, now: DiskText) -> bool:
    """The file's content is not what it was (a touch that changes only the time does not count)."""
    if before.exists != now.exists or before.stamp != now.stamp:
        return True
    return before.stamp is None and before.not_shown != now.not_shown  # unreadable both times: why?


def check_shape(path: str) -> None:
    """Raise PathRefused unless `path` could name a file at all (no file system access)."""
    if "\x00" in path:
        raise PathRefused("filePath contains a NUL character; send the file's absolute path.")
    if not os.path.isabs(path):
        raise PathRefused(f"filePath {path!r} is not absolute; send the file's absolute path.")
    if len(os.fsencode(path) if sys.platform != "win32" else path) > PATH_LIMIT:
        raise PathRefused(f"filePath is longer than this system's limit of {PATH_LIMIT}; send a shorter path.")


def check_review_path(path: str) -> None:
    """Raise PathRefused unless `path` names a regular file or nothing yet (a new file)."""
    check_shape(path)
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return  # a new file
    except OSError as exc:
        raise PathRefused(f"{path} cannot be checked ({exc.strerror or exc}); fix its permissions or path.") from None
    if not stat.S_ISREG(mode):
        raise PathRefused(f"{path} is {_kind(mode)}, not a regular file; a review can only change a file.")


def checked_read(path: str) -> DiskText:
    """check_review_path, then read: what openDiff needs before a review opens."""
    check_review_path(path)
    return read(path)


def read(path: str, limit: int = MAX_SHOWN_BYTES) -> DiskText:
    """What `path` holds now. Never blocks on a FIFO, never reads more than `limit` + 1 bytes."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return DiskText("", exists=False)
    except OSError as exc:
        return DiskText("", exists=True, not_shown=f"it cannot be read ({exc.strerror or exc})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return DiskText("", exists=True, not_shown=f"it is now {_kind(info.st_mode)}, not a regular file")
        data = read_at_most(fd, limit + 1)
    except OSError as exc:
        return DiskText("", exists=True, not_shown=f"it cannot be read ({exc.strerror or exc})")
    finally:
        os.close(fd)
    stamp = Stamp(info.st_size, hashlib.sha256(data).hexdigest())
    links = max(info.st_nlink - 1, 0)
    if len(data) > limit:
        size = max(info.st_size, len(data))
        too_large = f"it is {size / 2**20:.0f} MiB, more than the {limit / 2**20:.0f} MiB shown"
        return DiskText("", True, stamp, too_large, links)
    try:
        text, fmt = decode(data, os.path.basename(path))
    except BinaryFile:
        return DiskText("", True, stamp, "it is a binary file", links)
    return DiskText(text, True, stamp, other_links=links, format=fmt)


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")

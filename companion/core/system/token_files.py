"""Token-bearing files (Gemini CLI's discovery file, Claude Code's lock file): a private folder,
an atomic 0600 write, and the sweep of files whose server is gone.

Both rooms write one such file per window with the same rules; the names and payloads are theirs
(`gemini_ide/discovery.py`, `claude_ide/lockfile.py`).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import sys
from collections.abc import Iterable, Iterator

from .private_dirs import check_above, check_own
from .processes import create_time, pid_alive

log = logging.getLogger("gemini_companion")


def ensure_private_dir(path: str) -> None:
    """Create the folder 0700 (each missing level), and narrow it to 0700 (it is ours).

    Raises UnsafeFolder, before anything is created in it, for a folder another user owns or can
    replace (see private_dirs)."""
    parent = os.path.dirname(path)
    if parent and parent != path and not os.path.isdir(parent):
        ensure_private_dir(parent)  # makedirs would create missing parents with mode 0777 & ~umask
    check_above(path)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    check_own(path)
    if sys.platform != "win32" and os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o700)


class TokenFileError(OSError):
    """A token-bearing file cannot be written; the message names the folder and what to do."""


class FolderRefused(TokenFileError):
    """The folder for a token-bearing file is not safe (see private_dirs); nothing was written."""


def atomic_write_private(path: str, data: bytes) -> None:
    # The temporary name (a leading dot, a .tmp end) matches no client's file pattern, so no client
    # ever reads a half-written file. Unique per writer, not per process: two threads writing the same
    # file (two chats of one window ending turns together) must not rename each other's file away.
    temp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
    fd = os.open(temp, flags | os.O_EXCL, 0o600)  # 0600 from the first byte, never chmod after
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise


def remove_stale(files: Iterable[tuple[str, int, int]], own_editor_pid: int, what: str) -> list[str]:
    """Delete those of `files` ((path, PID, port) each) that `is_stale`; returns the paths removed."""
    removed: list[str] = []
    for path, pid, port in files:
        if not is_stale(path, pid, port, own_editor_pid):
            continue
        try:
            os.unlink(path)
            removed.append(path)
        except OSError as exc:
            log.debug("could not remove stale %s %s: %s", what, path, exc)
    return removed


# Process start times and file times come from different clocks and roundings (Windows: 15.6 ms
# ticks; Linux: clock ticks since boot); a process is "newer than its file" only beyond this.
CLOCK_SLACK_SECONDS = 2.0


def is_stale(path: str, pid: int, port: int, own_editor_pid: int) -> bool:
    """The file at `path` can no longer lead a client to a live server (see discovery.sweep_stale)."""
    if not pid_alive(pid):
        return True
    if pid == own_editor_pid:
        return not port_answers(port)
    if pid_reused_since(path, pid):
        return not port_answers(port)
    return False


def pid_reused_since(path: str, pid: int) -> bool:
    """The process with `pid` started after `path` was written: it is not the editor that wrote it."""
    started = create_time(pid)
    try:
        written = os.stat(path).st_mtime
    except OSError:
        return False
    return started is not None and started > written + CLOCK_SLACK_SECONDS


def matching_files(directory: str, pattern: re.Pattern[str]) -> Iterator[tuple[str, re.Match[str]]]:
    """(path, match) of each name in `directory` that `pattern` matches; none if it cannot be listed."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        match = pattern.match(name)
        if match:
            yield os.path.join(directory, name), match


def port_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False

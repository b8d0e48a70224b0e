"""The lock file Claude Code looks for: `<config>/ide/<port>.lock`, config being `$CLAUDE_CONFIG_DIR`
or `~/.claude`.

The client reads every lock in that folder, deletes those it cannot read or whose `pid` is dead,
and auto-connects when exactly one lock's `workspaceFolders` holds its working directory (or its
port equals `CLAUDE_CODE_SSE_PORT`). So `pid` is the editor's (it lives as long as the server),
`transport` is exactly "ws", and the file holds the token only for our user: 0600 from creation
in a 0700 folder, written atomically, gone with the server, like the discovery file.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..core.system.private_dirs import UnsafeFolder
from ..core.system.token_files import (
    FolderRefused,
    TokenFileError,
    atomic_write_private,
    ensure_private_dir,
    matching_files,
    remove_stale,
)
from .protocol import CONFIG_DIR_ENV, IDE_NAME

log = logging.getLogger("gemini_companion")

FILE_PATTERN = re.compile(r"^(\d+)\.lock$")
MAX_LOCK_BYTES = 64 * 1024  # a lock is a few hundred bytes; anything bigger is not one to read


def lock_dir(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    config = env.get(CONFIG_DIR_ENV) or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(config, "ide")


def payload(editor_pid: int, folders: Sequence[str], token: str) -> dict[str, Any]:
    return {
        "pid": editor_pid,
        "workspaceFolders": list(folders),
        "ideName": IDE_NAME,
        "transport": "ws",  # anything else sends the client to a legacy transport without the token
        "runningInWindows": sys.platform == "win32",
        "authToken": token,
    }


def write(editor_pid: int, port: int, folders: Sequence[str], token: str, directory: str | None = None) -> str:
    """Write (or atomically rewrite) the window's lock file and return its path."""
    directory = directory or lock_dir()
    path = os.path.join(directory, f"{port}.lock")
    try:
        ensure_private_dir(directory)
        atomic_write_private(path, json.dumps(payload(editor_pid, folders, token)).encode("utf-8"))
    except UnsafeFolder as exc:
        raise FolderRefused(
            f"Refused to write Claude Code's lock file in {exc.folder}: {exc.reason}. Another user could swap their "
            "own lock in for this window's and see (and answer) every change Claude Code proposes, so Claude Code "
            "is not told about this window. Remove that folder (its owner or an administrator can), or start "
            f"Sublime Text (or `serve`) and `claude` with {CONFIG_DIR_ENV} set to a folder of your own, then "
            "reload the package."
        ) from exc
    except OSError as exc:
        raise TokenFileError(
            f"Cannot write Claude Code's lock file in {directory} ({exc.strerror or exc}). Claude Code finds "
            f"this window through that file: make the folder writable for your user (or set {CONFIG_DIR_ENV} "
            "to a writable folder before starting Sublime Text), then reload the package."
        ) from exc
    return path


def sweep_stale(own_editor_pid: int, directory: str | None = None) -> list[str]:
    """Delete Sublime Text lock files that can no longer answer (the rules of token_files.is_stale).

    Other editors' locks share the folder and are never touched.
    """
    return remove_stale(our_locks(directory or lock_dir()), own_editor_pid, "lock file")


def our_locks(directory: str) -> Iterator[tuple[str, int, int]]:
    """(path, pid, port) of each lock in `directory` written by a Sublime Text companion of this user."""
    for path, match in matching_files(directory, FILE_PATTERN):
        data = read_lock(path)
        if data is None or data.get("ideName") != IDE_NAME:
            continue
        pid = data.get("pid")
        if isinstance(pid, int) and not isinstance(pid, bool):
            yield path, pid, int(match.group(1))


def read_lock(path: str) -> dict[str, Any] | None:
    """The lock's JSON when it is a small regular file of ours; None for anything else.

    Never follows a symlink and never blocks on a FIFO or device someone put in the folder.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_LOCK_BYTES:
            return None
        if sys.platform != "win32" and st.st_uid != os.getuid():
            return None
        # Imported here, not above: this module is imported before a window's files are published,
        # and the workspace's reading modules would delay them (read only when sweeping, afterwards).
        from ..core.files.reading import read_at_most

        data = json.loads(read_at_most(fd, MAX_LOCK_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else None

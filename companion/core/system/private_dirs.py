"""Whether a folder may hold a token-bearing file: Gemini CLI's discovery file, Claude Code's lock.

The token in those files lets a program act as the editor's user: see every proposed change and
answer it (Claude Code writes whatever text a `FILE_SAVED` carries). A folder that another user
owns, or that another user can rename away (a parent they own, or one every user may write without
the sticky bit), lets them swap their own file in for ours: the agent then connects to their server.
Like ssh with a key file of the wrong owner, we refuse such a folder and write nothing there.

Windows is skipped: it has no uid (`os.getuid` is Unix-only, and `os.stat` reports `st_uid` 0
there), access is by ACL, and both folders sit in the user's own profile by default (`%TEMP%`,
`%USERPROFILE%\\.claude`). Gemini CLI skips its owner check there too (reference/gemini-cli-contract.md
§1.2, `verifyAndReadFile`, POSIX only).
"""

from __future__ import annotations

import os
import stat
import sys

if sys.platform != "win32":
    import pwd

ROOT_UID = 0  # root owns /, /tmp and /var/folders: it could read the file anyway


class UnsafeFolder(OSError):
    """`folder` may not hold our files; `reason` says why in a few words (for a sentence)."""

    def __init__(self, folder: str, reason: str) -> None:
        super().__init__(f"{folder}: {reason}")
        self.folder = folder
        self.reason = reason


def check_above(path: str) -> None:
    """Raise UnsafeFolder if a folder above `path` (links resolved) lets another user replace it."""
    if sys.platform == "win32":
        return
    me = os.getuid()
    parent = os.path.dirname(os.path.realpath(path))
    while True:
        st = os.stat(parent)
        if st.st_uid not in (me, ROOT_UID):
            raise UnsafeFolder(path, f"{parent} above it belongs to {owner_name(st.st_uid)}, who could replace it")
        if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            raise UnsafeFolder(
                path, f"{parent} above it is writable by every user without the sticky bit: anyone could replace it"
            )
        up = os.path.dirname(parent)
        if up == parent:
            return
        parent = up


def check_own(path: str) -> None:
    """Raise UnsafeFolder if the folder `path` (a link followed) is not ours."""
    if sys.platform == "win32":
        return
    st = os.stat(path)
    if st.st_uid == os.getuid():
        return
    owner = owner_name(st.st_uid)
    if os.path.islink(path):
        raise UnsafeFolder(path, f"it is a link to {os.path.realpath(path)}, which belongs to {owner}, not to you")
    raise UnsafeFolder(path, f"it belongs to {owner}, not to you")


def owner_name(uid: int) -> str:
    """`name (uid N)`, or `uid N` when the system has no name for it."""
    if sys.platform == "win32":
        return f"uid {uid}"
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"
